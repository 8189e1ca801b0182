package logfs

import (
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// SyncDelayFileEnv names an environment variable the fault suite sets on
// the nodes it starts: the path of a file holding a duration ("150ms";
// empty or missing: none) that every Raft log sync waits before it syncs,
// a slow disk. The file is read every syncDelayPoll. Unset, nothing is read
// and syncs are not delayed.
const SyncDelayFileEnv = "ZKBRIDGE_FSYNC_DELAY_FILE"

const syncDelayPoll = 50 * time.Millisecond

// syncDelayFromEnv returns the injected sync delay source, or nil.
func syncDelayFromEnv() *atomic.Int64 {
	path := os.Getenv(SyncDelayFileEnv)
	if path == "" {
		return nil
	}
	delay := new(atomic.Int64)
	go func() { // lives as long as the process: a test hook
		for {
			var d time.Duration
			if b, err := os.ReadFile(path); err == nil {
				d, _ = time.ParseDuration(strings.TrimSpace(string(b)))
			}
			delay.Store(int64(d))
			time.Sleep(syncDelayPoll)
		}
	}()
	return delay
}
