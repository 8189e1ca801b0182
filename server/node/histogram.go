package node

import (
	"math"
	"sync/atomic"
	"time"
)

// Histogram counts observations (in ms) in fixed, roughly logarithmic
// buckets, lock-free. Readers take cumulative snapshots and subtract two to
// get the distribution of an interval: the web console's p50/p99 of the
// last second, fsync's p99. The buckets bound a quantile's error by its
// bucket's width (about 25%), which is what an operator's chart needs.
type Histogram struct {
	counts [len(HistogramBounds) + 1]atomic.Int64
}

// HistogramBounds are the buckets' upper bounds in ms; the last bucket
// holds everything above the last bound.
var HistogramBounds = func() [48]float64 {
	var b [48]float64
	v := 0.01 // 10 µs
	for i := range b {
		b[i] = math.Round(v*1000) / 1000
		v *= 1.35
	}
	return b
}()

// Observe records one value in ms.
func (h *Histogram) Observe(ms float64) {
	i := 0
	for i < len(HistogramBounds) && ms > HistogramBounds[i] {
		i++
	}
	h.counts[i].Add(1)
}

// ObserveDuration records d.
func (h *Histogram) ObserveDuration(d time.Duration) {
	h.Observe(float64(d.Microseconds()) / 1000)
}

// Snapshot returns the cumulative count of every bucket.
func (h *Histogram) Snapshot() HistogramCounts {
	var c HistogramCounts
	for i := range h.counts {
		c[i] = h.counts[i].Load()
	}
	return c
}

// HistogramCounts is a cumulative snapshot of a Histogram.
type HistogramCounts [len(HistogramBounds) + 1]int64

// Sub returns the counts observed between earlier and c.
func (c HistogramCounts) Sub(earlier HistogramCounts) HistogramCounts {
	var d HistogramCounts
	for i := range c {
		d[i] = c[i] - earlier[i]
	}
	return d
}

// Total is the number of observations.
func (c HistogramCounts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Quantile returns the upper bound of the bucket holding quantile q (0..1),
// or 0 when there are no observations. Values past the last bound report
// twice the last bound.
func (c HistogramCounts) Quantile(q float64) float64 {
	total := c.Total()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, v := range c {
		seen += v
		if seen >= rank {
			if i < len(HistogramBounds) {
				return HistogramBounds[i]
			}
			return 2 * HistogramBounds[len(HistogramBounds)-1]
		}
	}
	return 2 * HistogramBounds[len(HistogramBounds)-1]
}
