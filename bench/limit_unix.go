//go:build unix

package bench

import "syscall"

// sessionsPerProcess is how many sessions one process holds: its open-file
// limit (Go raises the soft limit to the hard one) less room for the rest.
func sessionsPerProcess() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 1200 {
		return 1000
	}
	return int(min(lim.Cur-200, 1<<20))
}
