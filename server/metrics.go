package server

import (
	"strconv"
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

	respLast, respMin, respMax atomic.Int64 // client response sizes, bytes

	requests summary // request latency, ms
	fsync    summary // Raft log write + fsync, ms (ZooKeeper's fsynctime)
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

// summary is a min/avg/max/count of observations, as ZooKeeper's
// AvgMinMaxCounter.
type summary struct {
	mu                   sync.Mutex
	min, max, sum, count float64
}

func (s *summary) observe(v float64) {
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

// get returns min, avg, max and count (all 0 when nothing was observed).
func (s *summary) get() (min, avg, max, count float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 {
		return 0, 0, 0, 0
	}
	return s.min, s.sum / s.count, s.max, s.count
}

func (s *summary) reset() {
	s.mu.Lock()
	s.min, s.max, s.sum, s.count = 0, 0, 0, 0
	s.mu.Unlock()
}

func (m *metrics) recordLatency(ms int64) { m.requests.observe(float64(ms)) }

// latency returns min/avg/max in ms (0/0.0/0 when idle, as ZooKeeper).
func (m *metrics) latency() (min int64, avg float64, max int64) {
	lo, avg, hi, _ := m.requests.get()
	return int64(lo), avg, int64(hi)
}

// reset is srst: latency and packet counters start over.
func (m *metrics) reset() {
	m.requests.reset()
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
	lag := prometheus.NewDesc("raft_follower_lag", "leader only: entries a replica has still to apply (-1: it did not answer)", []string{"replica"}, nil)
	for id, n := range c.s.followerLag() {
		ch <- prometheus.MustNewConstMetric(lag, prometheus.GaugeValue, float64(n), strconv.FormatUint(id, 10))
	}
}
