//go:build unix

package stagetrace

import "golang.org/x/sys/unix"

// Now is the machine's monotonic clock in ns (CLOCK_MONOTONIC): the same
// clock in every process of the machine, so the stamps of several nodes
// compare.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
