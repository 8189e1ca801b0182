package cli

import (
	"fmt"
	"os"
	"syscall"
)

// reexecWithQuietSysmon replaces the process with itself, the same
// arguments and GODEBUG with quietSysmonSetting (see there). It returns nil
// without re-executing when GODEBUG already sets schedtrace, which the new
// process does, and an error if the exec failed; the caller goes on with
// the runtime's default then. It executes the binary's own path, not
// /proc/self/exe, whose name would become the process's (ps, pgrep and
// top would show "exe"); a binary removed since the start fails the exec.
func reexecWithQuietSysmon() error {
	env, ok := envWithQuietSysmon(os.Environ())
	if !ok {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("re-executing with GODEBUG=%s: %w", quietSysmonSetting, err)
	}
	if err := syscall.Exec(self, os.Args, env); err != nil {
		return fmt.Errorf("re-executing %s with GODEBUG=%s: %w", self, quietSysmonSetting, err)
	}
	return nil
}
