package node

import "testing"

// An interval's quantiles come from the difference of two snapshots, and a
// quantile lands in the bucket that holds it.
func TestHistogramIntervalQuantiles(t *testing.T) {
	var h Histogram
	for i := 0; i < 1000; i++ {
		h.Observe(50) // before the interval
	}
	before := h.Snapshot()
	for i := 0; i < 98; i++ {
		h.Observe(1)
	}
	h.Observe(100)
	h.Observe(100)
	d := h.Snapshot().Sub(before)
	if d.Total() != 100 {
		t.Fatalf("interval total %d, want 100", d.Total())
	}
	if p50 := d.Quantile(0.5); p50 < 1 || p50 > 1.35 {
		t.Fatalf("p50 %v, want the bucket of 1 ms", p50)
	}
	if p99 := d.Quantile(0.99); p99 < 100 || p99 > 135 {
		t.Fatalf("p99 %v, want the bucket of 100 ms", p99)
	}
	var empty HistogramCounts
	if empty.Quantile(0.99) != 0 {
		t.Fatal("quantile of no observations is not 0")
	}
}
