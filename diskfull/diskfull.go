package diskfull

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// RetryInterval is how often a write that found the disk full is tried
// again.
const RetryInterval = 200 * time.Millisecond

// ErrDiskFull is what a door answers a write with while the disk is full.
var ErrDiskFull = errors.New("the node's disk is full: writes are refused until space is freed")

var (
	stalled atomic.Int64 // writes waiting for space
	logger  atomic.Pointer[zerolog.Logger]
	// sleep is time.Sleep; tests count the retries through it.
	sleep = time.Sleep
)

// SetLogger sets where the disk-full and space-back lines go.
func SetLogger(l zerolog.Logger) { logger.Store(&l) }

// Full reports whether a write is waiting for disk space now.
func Full() bool { return stalled.Load() > 0 }

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// stall marks one more waiting write; the first logs the disk full.
func stall(err error) {
	if stalled.Add(1) == 1 {
		if l := logger.Load(); l != nil {
			l.Error().Err(err).Dur("retry_every", RetryInterval).
				Msg("disk full: writes are refused and the node waits for space (it resumes by itself once space is freed)")
		}
	}
}

// unstall ends one waiting write; the last logs that space is back.
func unstall() {
	if stalled.Add(-1) == 0 {
		if l := logger.Load(); l != nil {
			l.Warn().Msg("disk space is back: writes resume")
		}
	}
}

// Write writes all of p with write, waiting out ENOSPC. A partial write
// is continued with the bytes that did not go, so the file's position
// (sequential writes) moves exactly once over each byte.
func Write(write func([]byte) (int, error), p []byte) (int, error) {
	total := 0
	waiting := false
	defer func() {
		if waiting {
			unstall()
		}
	}()
	for {
		n, err := write(p[total:])
		total += n
		if err == nil || !isNoSpace(err) {
			return total, err
		}
		if total == len(p) {
			return total, nil
		}
		if !waiting {
			waiting = true
			stall(err)
		}
		sleep(RetryInterval)
	}
}

// WriteAt writes all of p at off with writeAt, waiting out ENOSPC; the
// rest of a partial write goes at its own offset.
func WriteAt(writeAt func([]byte, int64) (int, error), p []byte, off int64) (int, error) {
	// Write hands on what is left of p; its start is off plus what was written.
	return Write(func(rest []byte) (int, error) {
		return writeAt(rest, off+int64(len(p)-len(rest)))
	}, p)
}

// Do runs op until it does not fail with ENOSPC: for operations that
// either happen whole or not at all (creating a file, preallocating).
func Do(op func() error) error {
	waiting := false
	defer func() {
		if waiting {
			unstall()
		}
	}()
	for {
		err := op()
		if err == nil || !isNoSpace(err) {
			return err
		}
		if !waiting {
			waiting = true
			stall(err)
		}
		sleep(RetryInterval)
	}
}
