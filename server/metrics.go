package server

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkbridge/zkbridge/sm"
)

// metrics are the node's counters, reported by srvr/stat/mntr, the admin
// endpoints and /metrics.
type metrics struct {
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	outstanding     atomic.Int64
	authFailed      atomic.Int64
	applied         atomic.Int64
	failedWrites    atomic.Int64

	latMu    sync.Mutex
	latMin   int64
	latMax   int64
	latSum   int64
	latCount int64
}

func newMetrics() *metrics { return &metrics{latMin: -1} }

func (m *metrics) recordLatency(ms int64) {
	m.latMu.Lock()
	if m.latMin < 0 || ms < m.latMin {
		m.latMin = ms
	}
	if ms > m.latMax {
		m.latMax = ms
	}
	m.latSum += ms
	m.latCount++
	m.latMu.Unlock()
}

// latency returns min/avg/max in ms (0/0.0/0 when idle, as ZooKeeper).
func (m *metrics) latency() (min int64, avg float64, max int64) {
	m.latMu.Lock()
	defer m.latMu.Unlock()
	if m.latCount == 0 {
		return 0, 0, 0
	}
	return m.latMin, float64(m.latSum) / float64(m.latCount), m.latMax
}

// reset is srst: latency and packet counters start over.
func (m *metrics) reset() {
	m.latMu.Lock()
	m.latMin, m.latMax, m.latSum, m.latCount = -1, 0, 0, 0
	m.latMu.Unlock()
	m.packetsReceived.Store(0)
	m.packetsSent.Store(0)
}

func (m *metrics) recordApply(res *sm.Result) {
	m.applied.Add(1)
	if res.Err != 0 {
		m.failedWrites.Add(1)
	}
}

// collector exposes the node to Prometheus under ZooKeeper's mntr names
// plus raft_* gauges.
type collector struct{ s *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, kv := range c.s.monitorValues() {
		if kv.num == nil {
			continue
		}
		desc := prometheus.NewDesc(kv.key, kv.help, nil, nil)
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, *kv.num)
	}
}
