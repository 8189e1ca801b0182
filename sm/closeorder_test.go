package sm

import (
	"reflect"
	"testing"
)

// The expected orders were printed by Java 17: a HashSet filled in the
// given order, cloned, and listed (what ZooKeeper's closeSession does).
func TestCloseOrderMatchesJava(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{
			in: []string{"/p/alpha", "/p/b", "/p/c-1", "/p/zeta", "/p/0", "/p/member", "/p/leader",
				"/p/lock-0000000007", "/p/lock-0000000008", "/p/lock-0000000009", "/q"},
			want: []string{"/p/lock-0000000008", "/p/lock-0000000009", "/q", "/p/b", "/p/member", "/p/zeta",
				"/p/0", "/p/leader", "/p/lock-0000000007", "/p/c-1", "/p/alpha"},
		},
		{in: []string{"/e1", "/e2"}, want: []string{"/e2", "/e1"}},
		{in: []string{"/a", "/b", "/c"}, want: []string{"/a", "/b", "/c"}},
		{in: []string{"/only"}, want: []string{"/only"}},
	} {
		paths := append([]string(nil), tc.in...)
		czxid := make([]int64, len(paths))
		for i := range czxid {
			czxid[i] = int64(i + 1) // creation order
		}
		HashSetOrder(paths, czxid)
		if !reflect.DeepEqual(paths, tc.want) {
			t.Errorf("HashSetOrder(%v) = %v, want %v", tc.in, paths, tc.want)
		}
	}
}

func TestJavaStringHashAndTableSize(t *testing.T) {
	// Values of "…".hashCode() in Java.
	for s, want := range map[string]int32{"": 0, "a": 97, "ip": 3367, "hello": 99162322} {
		if got := JavaStringHash(s); got != want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
	for c, want := range map[int]uint32{0: 1, 1: 1, 2: 2, 3: 4, 5: 8, 16: 16, 17: 32} {
		if got := javaTableSizeFor(c); got != want {
			t.Errorf("javaTableSizeFor(%d) = %d, want %d", c, got, want)
		}
	}
}
