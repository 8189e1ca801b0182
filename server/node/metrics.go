package node

import (
	"sync"
	"sync/atomic"

	"github.com/zkbridge/zkbridge/sm"
)

// Summary is a min/avg/max/count of observations, as ZooKeeper's
// AvgMinMaxCounter.
type Summary struct {
	mu                   sync.Mutex
	min, max, sum, count float64
}

// Observe records one value.
func (s *Summary) Observe(v float64) {
	s.mu.Lock()
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if v > s.max {
		s.max = v
	}
	s.sum += v
	s.count++
	s.mu.Unlock()
}

// Get returns min, avg, max and count (all 0 when nothing was observed).
func (s *Summary) Get() (min, avg, max, count float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 {
		return 0, 0, 0, 0
	}
	return s.min, s.sum / s.count, s.max, s.count
}

// Reset starts over.
func (s *Summary) Reset() {
	s.mu.Lock()
	s.min, s.max, s.sum, s.count = 0, 0, 0, 0
	s.mu.Unlock()
}

// metrics are the replicated core's counters.
type metrics struct {
	applied      atomic.Int64
	failedWrites atomic.Int64
	fsync        Summary   // Raft log write + fsync, ms (ZooKeeper's fsynctime)
	fsyncHist    Histogram // the same, for its p99 (web console)
}

func (m *metrics) recordApply(res *sm.Result) {
	m.applied.Add(1)
	if res.Err != 0 {
		m.failedWrites.Add(1)
	}
}

// Metrics is a snapshot of the core's counters, for mntr and /metrics.
type Metrics struct {
	// Applied counts results applied since start; FailedWrites those that
	// failed (an error transaction).
	Applied, FailedWrites int64
	// Fsync is the Raft log write and its fsync, in ms: min, avg, max, count.
	FsyncMin, FsyncAvg, FsyncMax, FsyncCount float64
	// LeaderChanges counts new leaders seen since start.
	LeaderChanges int64
}

// Metrics returns the core's counters.
func (n *Node) Metrics() Metrics {
	m := Metrics{Applied: n.metrics.applied.Load(), FailedWrites: n.metrics.failedWrites.Load()}
	m.FsyncMin, m.FsyncAvg, m.FsyncMax, m.FsyncCount = n.metrics.fsync.Get()
	if n.raft != nil {
		m.LeaderChanges = n.raft.leaders.changes.Load()
	}
	return m
}
