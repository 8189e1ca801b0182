package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The migrate commands' own checks, before anything is read or written:
// help with examples, flags after arguments, a file that is not an export,
// an unreachable source.
func TestMigrateCommandChecks(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := NewApp(&out, &errOut).Run(append([]string{"zkbridge", "migrate"}, args...))
		return out.String() + errOut.String(), err
	}
	for _, sub := range []string{"export", "import", "validate", "convert", "live"} {
		out, err := run(sub, "--help")
		if err != nil || !strings.Contains(out, "Examples:") || !strings.Contains(out, "zkbridge migrate "+sub) {
			t.Errorf("migrate %s --help: %v\n%s", sub, err, out)
		}
	}
	if _, err := run("import", "--to", "127.0.0.1:2181", "x.jsonl", "--merge"); err == nil || !strings.Contains(err.Error(), "put flags first") {
		t.Errorf("a flag after the file: %v", err)
	}
	bogus := filepath.Join(t.TempDir(), "bogus.jsonl")
	if err := os.WriteFile(bogus, []byte(`{"format":"something-else","version":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run("import", "--native", "127.0.0.1:1", bogus); err == nil || !strings.Contains(err.Error(), "not a zkbridge migration export") {
		t.Errorf("import of a file that is not an export: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if _, err := run("export", "--from", closed, "--timeout", "1s", "-o", filepath.Join(t.TempDir(), "x.jsonl")); err == nil || !strings.Contains(err.Error(), "no server answered") {
		t.Errorf("export from an unreachable source: %v", err)
	}
	if _, err := run("export", "--from", "127.0.0.1:2181", "--path", "app", "-o", "x"); err == nil || !strings.Contains(err.Error(), "--path") {
		t.Errorf("a relative --path: %v", err)
	}
}
