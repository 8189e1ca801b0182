package sm

import (
	"math/rand"
	"slices"
	"testing"
)

// sortRuns orders positions by their keys whatever the input: sorted,
// reversed, random, runs of any length, and reuses its buffers.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s sortRuns
	for round := 0; round < 300; round++ {
		n := rng.Intn(200)
		keys := rng.Perm(n)
		switch round % 4 {
		case 0: // sorted
			slices.Sort(keys)
		case 1: // reversed
			slices.Sort(keys)
			slices.Reverse(keys)
		case 2: // sorted runs of random lengths
			for i := 0; i < n; {
				j := min(n, i+1+rng.Intn(20))
				slices.Sort(keys[i:j])
				i = j
			}
		}
		got := s.sort(n, func(x, y int32) int { return keys[x] - keys[y] })
		if len(got) != n {
			t.Fatalf("round %d: %d positions for %d keys", round, len(got), n)
		}
		for i := range got {
			if keys[got[i]] != i { // keys are 0..n-1
				t.Fatalf("round %d: position %d holds key %d", round, i, keys[got[i]])
			}
		}
	}
}
