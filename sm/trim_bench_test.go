package sm

import (
	"fmt"
	"testing"
)

// BenchmarkApplyCreateWhileTrimming applies creates once the change log is
// past its retention, so every Update trims. Trimming used to iterate over
// the tombstones of everything trimmed before (down to ~70 creates/s after
// 40k); it must stay as fast as without trimming.
func BenchmarkApplyCreateWhileTrimming(b *testing.B) {
	h := newHarness(b, Config{ChangeLogMaxRecords: 1000})
	s := h.newSession()
	for i := 0; i < 20000; i++ {
		h.create(s, fmt.Sprintf("/warm%06d", i), []byte("0123456789"), 0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.create(s, fmt.Sprintf("/n%09d", i), []byte("0123456789"), 0)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
