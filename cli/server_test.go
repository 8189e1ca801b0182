package cli

import (
	"os"
	"path/filepath"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server"
)

// loadWith runs the server command's flag parsing on args and returns the
// configuration it would start with.
func loadWith(t *testing.T, args ...string) server.Config {
	t.Helper()
	cmd := serverCommand()
	var cfg server.Config
	var loadErr error
	cmd.Action = func(c *ucli.Context) error {
		cfg, loadErr = loadServerConfig(c)
		return nil
	}
	app := &ucli.App{Name: "zkbridge", Commands: []*ucli.Command{cmd}}
	if err := app.Run(append([]string{"zkbridge", "server"}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if loadErr != nil {
		t.Fatalf("%v: %v", args, loadErr)
	}
	return cfg
}

// The Raft log is synced unless --force-sync=false or the file's
// forceSync=no says otherwise; the flag overrides the file.
func TestForceSyncFlagAndZooCfg(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgFile, []byte("dataDir="+dir+"\nclientPort=2999\nforceSync=no\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		disabled bool
	}{
		{nil, false},
		{[]string{"--force-sync=false"}, true},
		{[]string{"--force-sync"}, false},
		{[]string{"--config", cfgFile}, true},
		{[]string{"--config", cfgFile, "--force-sync"}, false},
	} {
		if got := loadWith(t, tc.args...).LogSyncDisabled; got != tc.disabled {
			t.Errorf("%v: log sync disabled %v, want %v", tc.args, got, tc.disabled)
		}
	}
}
