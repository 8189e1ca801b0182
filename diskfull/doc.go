// Package diskfull keeps a node up when its disk fills. A write to the
// Raft log, a snapshot or the state machine's files that fails with ENOSPC
// does not return the error (Pebble and dragonboat panic on a failed
// write): it waits and is tried again, the rest of it at the same offset,
// every RetryInterval until space returns, while Full reports true so
// that the doors refuse new writes at once instead of letting them wait
// on a stalled log. One line is logged when the disk fills and one when
// writes go through again.
//
// A failed sync is not retried: after a failed fsync the kernel may have
// dropped the dirty pages, so a second fsync that succeeds would claim
// durability for data that is gone. That error still stops the process.
package diskfull
