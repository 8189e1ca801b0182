package wallclock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOffsetFile(t *testing.T) {
	defer offset.Store(0)
	path := filepath.Join(t.TempDir(), "clock")
	for _, c := range []struct {
		text string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"-2m\n", -2 * time.Minute},
		{"not a duration", -2 * time.Minute}, // kept: a half-written file
		{"", 0},
	} {
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		readOffset(path)
		if got := time.Duration(offset.Load()); got != c.want {
			t.Errorf("file %q: offset %v, want %v", c.text, got, c.want)
		}
	}
	offset.Store(int64(time.Hour))
	readOffset(filepath.Join(t.TempDir(), "missing"))
	if offset.Load() != 0 {
		t.Errorf("a missing file left offset %v", time.Duration(offset.Load()))
	}
}

func TestNowIsSkewedWallTimeWithoutMonotonicReading(t *testing.T) {
	defer offset.Store(0)
	offset.Store(int64(time.Hour))
	got := Now()
	if d := got.Sub(time.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("Now is %v from time.Now, want an hour", d)
	}
	// Without a monotonic reading Round(0) changes nothing.
	if !got.Equal(got.Round(0)) || got.String() != got.Round(0).String() {
		t.Fatalf("Now carries a monotonic reading: %s", got.String())
	}
}

func TestAgesCountFromTheFirstSightingOfAVersion(t *testing.T) {
	a := NewAges()
	t0 := time.Now()
	if age := a.Seen("/a", 5, t0); age != 0 {
		t.Fatalf("first sighting: age %v", age)
	}
	a.Seen("/b", 1, t0)
	a.Sweep()
	if age := a.Seen("/a", 5, t0.Add(3*time.Second)); age != 3*time.Second {
		t.Fatalf("same version 3 s later: age %v", age)
	}
	// A new version starts again.
	if age := a.Seen("/a", 6, t0.Add(4*time.Second)); age != 0 {
		t.Fatalf("new version: age %v", age)
	}
	a.Sweep() // /b was not seen in this pass: forgotten
	if a.Len() != 1 {
		t.Fatalf("after sweep %d keys, want 1", a.Len())
	}
	if age := a.Seen("/b", 1, t0.Add(5*time.Second)); age != 0 {
		t.Fatalf("a forgotten key seen again: age %v, want 0", age)
	}
	a.Reset()
	if age := a.Seen("/a", 6, t0.Add(9*time.Second)); age != 0 {
		t.Fatalf("after Reset: age %v, want 0", age)
	}
}
