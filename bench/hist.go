package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets, as HdrHistogram does:
// values below 2^subBits nanoseconds each have their own bucket, and every
// power of two above is split into 2^(subBits-1) equal buckets, so a
// bucket's width is under 1/64 of its values whatever their magnitude.
// Memory is fixed (a few thousand counters) however many values arrive.
// The zero value is ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts []uint64
	n      uint64
	sum    float64 // nanoseconds, for the mean
	min    uint64
	max    uint64
}

const (
	subBits   = 7
	subCount  = 1 << subBits    // 128
	halfCount = subCount / 2    // buckets per power of two above subCount
	maxValue  = uint64(1) << 40 // ~18 minutes in ns; larger values are clamped
)

// bucketOf returns v's bucket. For v ≥ 128, e = bitlen(v)-7 ≥ 1 and the top
// seven bits m = v>>e lie in [64,128), so 64e+m is contiguous with the
// direct buckets 0…127.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - subBits
	return halfCount*e + int(v>>e)
}

// bucketHigh returns the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	e := i/halfCount - 1
	m := uint64(i - halfCount*e)
	return (m+1)<<e - 1
}

// Record adds one duration (negative ones count as 0).
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	v = min(v, maxValue)
	if h.counts == nil {
		h.counts = make([]uint64, bucketOf(maxValue)+1)
		h.min = math.MaxUint64
	}
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, len(o.counts))
		h.min = math.MaxUint64
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the mean of the recorded values (exact).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value below or at which a fraction q of the
// recorded values lie: the upper end of the bucket holding the
// ceil(q·n)-th smallest value, never above the exact maximum. Its error
// is under 1/64 of the value.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(bucketHigh(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// histJSON is a histogram on the wire between load-generator processes:
// the non-empty buckets only.
type histJSON struct {
	Buckets map[int]uint64 `json:"buckets,omitempty"`
	N       uint64         `json:"n"`
	Sum     float64        `json:"sum"`
	Min     uint64         `json:"min"`
	Max     uint64         `json:"max"`
}

// MarshalJSON encodes the histogram for another process to Merge.
func (h Histogram) MarshalJSON() ([]byte, error) {
	j := histJSON{N: h.n, Sum: h.sum, Min: h.min, Max: h.max}
	for i, c := range h.counts {
		if c > 0 {
			if j.Buckets == nil {
				j.Buckets = map[int]uint64{}
			}
			j.Buckets[i] = c
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encoded.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*h = Histogram{}
	if j.N == 0 {
		return nil
	}
	h.counts = make([]uint64, bucketOf(maxValue)+1)
	for i, c := range j.Buckets {
		if i < 0 || i >= len(h.counts) {
			return fmt.Errorf("histogram bucket %d out of range", i)
		}
		h.counts[i] = c
	}
	h.n, h.sum, h.min, h.max = j.N, j.Sum, j.Min, j.Max
	return nil
}
