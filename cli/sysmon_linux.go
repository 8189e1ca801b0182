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
// the runtime's default then. /proc/self/exe is the running binary even
// if its file was replaced or removed since it started.
func reexecWithQuietSysmon() error {
	env, ok := envWithQuietSysmon(os.Environ())
	if !ok {
		return nil
	}
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("re-executing with GODEBUG=%s: %w", quietSysmonSetting, err)
	}
	return nil
}
