package bench

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestBucketsContiguous(t *testing.T) {
	// Every value lands in a bucket whose range holds it, and buckets
	// follow each other without gaps.
	prevHigh := uint64(0)
	for i := 1; i <= bucketOf(maxValue); i++ {
		low := prevHigh + 1
		if bucketOf(low) != i || bucketOf(bucketHigh(i)) != i {
			t.Fatalf("bucket %d: [%d,%d] maps to %d,%d", i, low, bucketHigh(i), bucketOf(low), bucketOf(bucketHigh(i)))
		}
		// Width is at most 1/64 of the low end once buckets are wider than 1.
		if w := bucketHigh(i) - low + 1; w > 1 && float64(w) > float64(low)/64+1 {
			t.Fatalf("bucket %d too wide: %d for values from %d", i, w, low)
		}
		prevHigh = bucketHigh(i)
	}
}

func TestQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Count() != 0 {
		t.Fatal("empty histogram")
	}
	// 1…100000 µs, shuffled: the exact q-quantile is q·100000 µs.
	vals := make([]time.Duration, 100000)
	for i := range vals {
		vals[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	for _, v := range vals {
		h.Record(v)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := time.Duration(q*100000) * time.Microsecond
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/64 {
			t.Errorf("p%v = %v, want within 1/64 above %v", q*100, got, exact)
		}
	}
	if h.Max() != 100*time.Millisecond || h.Quantile(1) != 100*time.Millisecond {
		t.Errorf("max %v, p100 %v", h.Max(), h.Quantile(1))
	}
	if m := h.Mean(); m < 50*time.Millisecond || m > 50*time.Millisecond+time.Microsecond {
		t.Errorf("mean %v", m)
	}
}

func TestQuantileAgainstSortedSample(t *testing.T) {
	// Log-normal-ish latencies: quantiles agree with a sorted sample to 1/64.
	rng := rand.New(rand.NewPCG(1, 2))
	var h, a, b Histogram
	vals := make([]time.Duration, 20000)
	for i := range vals {
		vals[i] = time.Duration(rng.ExpFloat64()*float64(time.Millisecond)) + 50*time.Microsecond
		h.Record(vals[i])
		if i%2 == 0 {
			a.Record(vals[i])
		} else {
			b.Record(vals[i])
		}
	}
	a.Merge(&b)
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := vals[int(q*float64(len(vals)))-1]
		for name, hh := range map[string]*Histogram{"single": &h, "merged": &a} {
			got := hh.Quantile(q)
			if got < exact || float64(got-exact) > float64(exact)/64 {
				t.Errorf("%s p%v = %v, sorted sample says %v", name, q*100, got, exact)
			}
		}
	}
	if a.Count() != h.Count() || a.Max() != h.Max() {
		t.Errorf("merge: count %d max %v, want %d %v", a.Count(), a.Max(), h.Count(), h.Max())
	}
}

func TestRecordClamps(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	h.Record(time.Duration(maxValue) * 4)
	if h.Count() != 2 || h.Quantile(0.5) != 0 || h.Max() != time.Duration(maxValue) {
		t.Fatalf("count %d p50 %v max %v", h.Count(), h.Quantile(0.5), h.Max())
	}
}
