package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// processGODEBUG reads GODEBUG from a live process's environment, which
// an exec replaces.
func processGODEBUG(t *testing.T, pid int) string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(raw), "\x00") {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			return v
		}
	}
	return ""
}

// The server re-executes itself with the quiet-sysmon setting, and leaves
// an operator's schedtrace alone.
func TestServerReexecutesWithQuietSysmon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })

	n := startNodeEnv(t, bin, t.TempDir(), freeAddr(t), freeAddr(t), append(slices.Clone(base), "GODEBUG=gctrace=0"))
	if got := processGODEBUG(t, n.cmd.Process.Pid); got != "gctrace=0,"+quietSysmonSetting {
		t.Errorf("serving process GODEBUG = %q, want gctrace=0,%s", got, quietSysmonSetting)
	}
	// Serving after the exec: the same pid answers, under the binary's
	// name (what ps and pgrep match).
	connectZK(t, n.clientAddr).Close()
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n.cmd.Process.Pid)); err != nil || strings.TrimSpace(string(comm)) != "zkbridge" {
		t.Errorf("serving process name = %q (%v), want zkbridge", comm, err)
	}

	n = startNodeEnv(t, bin, t.TempDir(), freeAddr(t), freeAddr(t), append(slices.Clone(base), "GODEBUG=schedtrace=0"))
	if got := processGODEBUG(t, n.cmd.Process.Pid); got != "schedtrace=0" {
		t.Errorf("with schedtrace=0 set, serving process GODEBUG = %q, want it unchanged", got)
	}
}
