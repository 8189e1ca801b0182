//go:build !linux

package cli

// reexecWithQuietSysmon is Linux-only; elsewhere the runtime's default stays.
func reexecWithQuietSysmon() error { return nil }
