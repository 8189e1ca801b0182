package compattests

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server"
)

// TestFourLetterWhitelist checks the refusal text of a command left out of
// the whitelist against ZooKeeper's exact wording (the suite's servers
// enable every command, so this runs its own zkbridge).
func TestFourLetterWhitelist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a zkbridge node")
	}
	peer, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		DataDir:         t.TempDir(),
		ClientAddr:      "127.0.0.1:0",
		AdminDisabled:   true,
		PeerAddr:        fmt.Sprintf("127.0.0.1:%d", peer),
		FourLetterWords: []string{"srvr", "ruok"},
	}
	srv, err := server.New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for _, cmd := range []string{"stat", "mntr", "wchs", "conf", "envi", "dump", "isro", "gtmk", "stmk", "srst", "crst", "cons", "dirs", "wchc", "wchp", "hash"} {
		out, closed, err := fourLetter(srv.ClientAddr(), []byte(cmd))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		if want := cmd + " is not executed because it is not in the whitelist.\n"; out != want || !closed {
			t.Errorf("%s: got %q closed=%v, want %q and a close", cmd, out, closed, want)
		}
	}
	for _, cmd := range []string{"ruok", "srvr"} {
		out, _, err := fourLetter(srv.ClientAddr(), []byte(cmd))
		if err != nil || strings.Contains(out, "whitelist") || out == "" {
			t.Errorf("%s (whitelisted): got %q, %v", cmd, out, err)
		}
	}
}
