//go:build !unix

package stagetrace

import "time"

var epoch = time.Now()

// Now is a monotonic clock in ns. Off unix it is this process's own, so
// only a one-node breakdown lines up.
func Now() int64 { return int64(time.Since(epoch)) }
