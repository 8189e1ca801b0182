//go:build !unix

package bench

// sessionsPerProcess is how many sessions one process holds.
func sessionsPerProcess() int { return 1000 }
