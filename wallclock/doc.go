// Package wallclock is the node's wall clock: the time it stamps into
// transactions (ctime, mtime, the change feed's times). The fault suite can
// skew it on one node, to see what a clock that jumped does to the cluster.
//
// The rule it serves: a wall-clock reading is a label, never a deadline.
// Session and TTL expiry are measured on the monotonic clock of the node
// that decides them (Go's time.Now carries a monotonic reading, which a
// jump of the wall clock does not move); Now strips that reading, so a
// value from this package compared with another one compares wall times,
// exactly as a real clock jump would make it.
//
// Skewing: when the environment variable named by OffsetFileEnv is set,
// the file it names is read every 20 ms and holds a Go duration (for
// example "90s" or "-2m"; empty or missing means none) added to every
// reading. Nothing else reads the variable; unset, no file is read and
// Now is time.Now without its monotonic reading.
package wallclock
