package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// quietSysmonSetting keeps the Go runtime's monitor thread (sysmon) out of
// its deep sleep, so that it settles at its slowest poll (10 ms) instead of
// waking for every burst of work. A node at one request in flight goes
// idle between the steps of every write; each time, sysmon sleeps, is woken
// by the next system call (a futex wake on that call's path), and then polls
// every 20 µs until the node is idle again: about 14 timer wake-ups per
// write across three nodes. With sysmon awake, set@1 to a leader went from
// 760–774 to 928–1,061 writes/s and its p99 from 5.5–7.4 to 3.6–3.7 ms
// (fresh 3-node clusters, old and new in turn, three rounds).
//
// The runtime has no switch for this; a positive schedtrace is the one
// setting that keeps sysmon from deep sleep (so that it can print on time),
// and its largest value prints a scheduler line only every 24.8 days of
// uptime. GODEBUG is read once, when the process starts, hence the
// re-execution in reexecWithQuietSysmon.
const quietSysmonSetting = "schedtrace=2147483647"

// envWithQuietSysmon returns env with quietSysmonSetting added to GODEBUG,
// and false if GODEBUG already sets schedtrace (an operator's choice,
// schedtrace=0 included, which restores the runtime's default).
func envWithQuietSysmon(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		value, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, setting := range strings.Split(value, ",") {
			if strings.HasPrefix(strings.TrimSpace(setting), "schedtrace=") {
				return env, false
			}
		}
		found = true
		if value != "" {
			value += ","
		}
		out = append(out, "GODEBUG="+value+quietSysmonSetting)
	}
	if !found {
		out = append(out, "GODEBUG="+quietSysmonSetting)
	}
	return out, true
}

// mayReexecKey marks, in the app's Metadata, an app that is the process
// itself (Main), not one a test runs in its own process.
const mayReexecKey = "zkbridge.may-reexec"

// quietSysmon re-executes the process with quietSysmonSetting when c's app
// is the process's own (see reexecWithQuietSysmon); it returns the reason
// it could not, nil when it did not need to.
func quietSysmon(c *ucli.Context) error {
	if may, _ := c.App.Metadata[mayReexecKey].(bool); !may {
		return nil
	}
	return reexecWithQuietSysmon()
}
