package zk

import (
	"sync/atomic"

	"github.com/zkbridge/zkbridge/server/node"
)

// metrics are the ZooKeeper door's counters, reported by srvr/stat/mntr,
// the admin endpoints and /metrics.
type metrics struct {
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	outstanding     atomic.Int64
	authFailed      atomic.Int64
	fencedWrites    atomic.Int64 // refused by a cutover policy

	respLast, respMin, respMax atomic.Int64 // client response sizes, bytes

	requests node.Summary // request latency, ms

	// For the web console: replies by opcode and their latency histogram.
	byOp        opCounter
	latencyHist node.Histogram
}

func newMetrics() *metrics {
	m := &metrics{}
	m.respLast.Store(-1)
	m.respMin.Store(-1)
	m.respMax.Store(-1)
	return m
}

// recordResponseSize tracks the serialized size of replies and
// notifications (mntr's zk_*_client_response_size; -1 until the first).
func (m *metrics) recordResponseSize(n int) {
	v := int64(n)
	m.respLast.Store(v)
	for {
		cur := m.respMin.Load()
		if (cur >= 0 && cur <= v) || m.respMin.CompareAndSwap(cur, v) {
			break
		}
	}
	for {
		cur := m.respMax.Load()
		if cur >= v || m.respMax.CompareAndSwap(cur, v) {
			break
		}
	}
}

func (m *metrics) recordLatency(ms int64) { m.requests.Observe(float64(ms)) }

// latency returns min/avg/max in ms (0/0.0/0 when idle, as ZooKeeper).
func (m *metrics) latency() (min int64, avg float64, max int64) {
	lo, avg, hi, _ := m.requests.Get()
	return int64(lo), avg, int64(hi)
}

// reset is srst: latency and packet counters start over.
func (m *metrics) reset() {
	m.requests.Reset()
	m.packetsReceived.Store(0)
	m.packetsSent.Store(0)
}

// Outstanding is the number of requests in flight on this door.
func (s *Server) Outstanding() int64 { return s.metrics.outstanding.Load() }
