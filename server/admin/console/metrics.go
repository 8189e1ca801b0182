package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
)

// The live charts read a ring buffer of this node's own metrics, one sample
// a second for the last 15 minutes, filled by a sampler in this process:
// the console needs no Prometheus. Pages subscribe over Server-Sent Events
// and receive the history once, then one sample a second (no polling).

const (
	ringSize       = 15 * 60
	sampleInterval = time.Second
)

// opSeries are the op types the ops/s chart draws, in order; every other
// op counts as "other".
var opSeries = []string{"getData", "getChildren", "exists", "create", "setData", "delete", "multi", "ping", "other"}

var opSeriesOf = map[string]string{
	"getData": "getData", "getChildren": "getChildren", "getChildren2": "getChildren", "exists": "exists",
	"create": "create", "create2": "create", "createContainer": "create", "createTTL": "create",
	"setData": "setData", "delete": "delete", "deleteContainer": "delete", "multi": "multi", "multiRead": "multi",
	"ping": "ping",
}

// Sample is one second of this node's metrics.
type Sample struct {
	Time        int64     `json:"t"`    // unix seconds
	Ops         []float64 `json:"ops"`  // per second, in opSeries order
	P50         float64   `json:"p50"`  // request latency, ms
	P99         float64   `json:"p99"`  // request latency, ms
	Outstanding float64   `json:"out"`  // requests in flight
	ApplyLag    float64   `json:"lag"`  // committed, not yet applied entries
	FsyncP99    float64   `json:"fp99"` // Raft log write+fsync p99, ms
}

type ring struct {
	mu      sync.Mutex
	buf     []Sample
	next    int
	full    bool
	waiters map[chan Sample]struct{}
	// fsync keeps the last minute of fsync histograms for the node table's
	// fsync p99.
	fsync []node.HistogramCounts
}

func newRing(n int) *ring { return &ring{buf: make([]Sample, n), waiters: map[chan Sample]struct{}{}} }

func (r *ring) add(s Sample, fsync node.HistogramCounts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
	r.fsync = append(r.fsync, fsync)
	if len(r.fsync) > 61 {
		r.fsync = r.fsync[1:]
	}
	for ch := range r.waiters {
		select {
		case ch <- s:
		default: // a slow page misses a sample rather than stalling others
		}
	}
}

// history returns the samples, oldest first.
func (r *ring) history() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]Sample(nil), r.buf[:r.next]...)
	}
	return append(append([]Sample(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// fsyncP99 is the p99 of Raft log writes over the last minute.
func (r *ring) fsyncP99() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.fsync) < 2 {
		return 0
	}
	return r.fsync[len(r.fsync)-1].Sub(r.fsync[0]).Quantile(0.99)
}

func (r *ring) subscribe() (chan Sample, func()) {
	ch := make(chan Sample, 4)
	r.mu.Lock()
	r.waiters[ch] = struct{}{}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.waiters, ch)
		r.mu.Unlock()
	}
}

// sampleLoop takes one sample a second until Close.
func (c *Console) sampleLoop() {
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	prev := c.opt.Doors.RequestStats()
	prevFsync := c.opt.Node.FsyncHistogram()
	prevAt := time.Now()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			cur := c.opt.Doors.RequestStats()
			fsync := c.opt.Node.FsyncHistogram()
			secs := now.Sub(prevAt).Seconds()
			if secs <= 0 {
				secs = 1
			}
			s := Sample{Time: now.Unix(), Ops: make([]float64, len(opSeries))}
			for op, n := range cur.ByOp {
				d := float64(n - prev.ByOp[op])
				if d <= 0 {
					continue
				}
				series, ok := opSeriesOf[op]
				if !ok {
					series = "other"
				}
				for i, name := range opSeries {
					if name == series {
						s.Ops[i] += d / secs
					}
				}
			}
			lat := cur.Latency.Sub(prev.Latency)
			s.P50, s.P99 = lat.Quantile(0.5), lat.Quantile(0.99)
			s.FsyncP99 = fsync.Sub(prevFsync).Quantile(0.99)
			c.opt.Doors.Gauges(func(name, _ string, v float64) {
				switch name {
				case "zk_outstanding_requests":
					s.Outstanding = v
				case "raft_apply_lag":
					s.ApplyLag = v
				}
			})
			c.ring.add(s, fsync)
			prev, prevFsync, prevAt = cur, fsync, now
		}
	}
}

// metricsEvents streams the ring buffer: event "history" once, then
// "sample" every second, until the page goes away or the node stops.
func (c *Console) metricsEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.viewerOr401(w, r); !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch, done := c.ring.subscribe()
	defer done()
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send("history", map[string]any{"series": opSeries, "samples": c.ring.history()}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.stop:
			return
		case s := <-ch:
			if !send("sample", s) {
				return
			}
		}
	}
}
