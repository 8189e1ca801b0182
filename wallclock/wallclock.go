package wallclock

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OffsetFileEnv names the environment variable the fault suite sets on the
// nodes it starts: the path of a file holding this node's clock offset.
const OffsetFileEnv = "ZKBRIDGE_CLOCK_OFFSET_FILE"

// pollEvery is how often the offset file is read.
const pollEvery = 20 * time.Millisecond

var (
	offset    atomic.Int64 // nanoseconds added to every reading
	watchOnce sync.Once
)

// Now is the node's wall clock: time.Now plus the injected offset, without
// a monotonic reading (see the package doc: never a deadline).
func Now() time.Time {
	watchOnce.Do(startWatch)
	return time.Now().Round(0).Add(time.Duration(offset.Load()))
}

// NowMilli is Now in milliseconds since the epoch, the unit of a
// transaction's time stamp.
func NowMilli() int64 { return Now().UnixMilli() }

// Offset is the injected offset now in effect (0 unless the suite set one).
func Offset() time.Duration {
	watchOnce.Do(startWatch)
	return time.Duration(offset.Load())
}

func startWatch() {
	path := os.Getenv(OffsetFileEnv)
	if path == "" {
		return
	}
	readOffset(path) // the first reading already counts
	go func() {
		for range time.Tick(pollEvery) {
			readOffset(path)
		}
	}()
}

// readOffset applies the file's offset; an unreadable or malformed file
// leaves the previous one (a half-written file is read again 20 ms later).
func readOffset(path string) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		offset.Store(0)
		return
	case err != nil:
		return
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		offset.Store(0)
		return
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return
	}
	offset.Store(int64(d))
}

// Ages measures, on the monotonic clock, how long each key has been seen
// at one version: the leader's TTL reaper asks it how long a TTL node has
// gone unmodified, which no node's wall clock can say when clocks
// disagree or jump. A key is first seen at a version when Seen is called
// with it; a new version starts its age again. Keys not seen during a pass
// (Sweep) are forgotten. Not safe for concurrent use: one reaper owns it.
type Ages struct {
	first map[string]sighting
	pass  uint64
}

type sighting struct {
	version int64
	at      time.Time // monotonic
	pass    uint64    // the last pass that saw it
}

// NewAges returns an empty tracker.
func NewAges() *Ages { return &Ages{first: map[string]sighting{}} }

// Seen records key at version, seen at now (a time.Now reading), and
// returns how long it has been seen at that version.
func (a *Ages) Seen(key string, version int64, now time.Time) time.Duration {
	s, ok := a.first[key]
	if !ok || s.version != version {
		s = sighting{version: version, at: now}
	}
	s.pass = a.pass
	a.first[key] = s
	return now.Sub(s.at)
}

// Sweep ends a pass: keys not seen since the previous Sweep are forgotten
// (deleted, or no longer candidates).
func (a *Ages) Sweep() {
	for k, s := range a.first {
		if s.pass != a.pass {
			delete(a.first, k)
		}
	}
	a.pass++
}

// Reset forgets every key: the next sightings start from zero (a new
// leader gives every TTL node a full TTL, as a new leader gives every
// session a full timeout).
func (a *Ages) Reset() { clear(a.first) }

// Len is the number of keys tracked.
func (a *Ages) Len() int { return len(a.first) }
