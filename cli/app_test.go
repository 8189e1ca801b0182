package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := NewApp(&out, &errOut).Run([]string{"zkbridge", "version"}); err != nil {
		t.Fatalf("version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "zkbridge "+Version) {
		t.Fatalf("version printed %q", out.String())
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	app := NewApp(&bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range app.Commands {
		if c.Usage == "" {
			t.Errorf("command %q has no usage text", c.Name)
		}
		var out bytes.Buffer
		app.Writer = &out
		if err := app.Run([]string{"zkbridge", c.Name, "--help"}); err != nil {
			t.Errorf("%s --help: %v", c.Name, err)
		}
		if !strings.Contains(out.String(), c.Name) {
			t.Errorf("%s --help printed %q", c.Name, out.String())
		}
	}
}
