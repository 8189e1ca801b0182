package sm

import (
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Listings served from the child cache are those a scan gives: after
// creates and deletes under the node, for a view older than the cached
// entry, and for a node deleted and created again that reaches the cached
// entry's cversion under another czxid.
func TestChildCacheListsWhatTheTreeHolds(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	list := func(v *View, want ...string) {
		t.Helper()
		got, _, err := v.Children("/d")
		if err != nil {
			t.Fatalf("children: %v", err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("children %v, want %v", got, want)
		}
	}
	listNow := func(want ...string) {
		t.Helper()
		for i := 0; i < 2; i++ { // the second listing is a cache hit
			v := h.view()
			list(v, want...)
			v.Close()
		}
	}
	h.mustCreate(s, "/d")
	h.mustCreate(s, "/d/a")
	h.mustCreate(s, "/d/b")
	listNow("a", "b")
	old := h.view() // sees a, b
	h.mustCreate(s, "/d/c")
	listNow("a", "b", "c")
	list(old, "a", "b") // older than the cached entry
	listNow("a", "b", "c")
	old.Close()
	h.do(s, &Delete{Path: "/d/a", Version: -1})
	listNow("b", "c")

	// Deleted and created again, with no listing in between: two creates
	// give the new node the cversion under which [b c] sits cached, with
	// another czxid.
	for _, p := range []string{"/d/b", "/d/c", "/d"} {
		h.do(s, &Delete{Path: p, Version: -1})
	}
	h.mustCreate(s, "/d")
	h.mustCreate(s, "/d/x")
	h.mustCreate(s, "/d/y")
	h.mustCreate(s, "/d/z")
	h.do(s, &Delete{Path: "/d/z", Version: -1})
	if st := h.stat("/d"); st.Cversion != 4 {
		t.Fatalf("recreated /d cversion %d, want 4, that of the cached [b c] (the test relies on it)", st.Cversion)
	}
	listNow("x", "y")
}

// The cache stays within its bounds: it starts over rather than grow past
// its entry or name budget, and never keeps an oversize listing.
func TestChildCacheBounds(t *testing.T) {
	c := newChildCache()
	names := make([]string, childCacheMaxNames)
	for i := 0; i < 3*childCacheNames/childCacheMaxNames; i++ {
		c.put(string(rune('a'+i%26))+string(rune(i)), &zkproto.Stat{Czxid: int64(i)}, names)
		if c.names > childCacheNames || len(c.entries) > childCacheEntries {
			t.Fatalf("after %d puts: %d names in %d entries", i+1, c.names, len(c.entries))
		}
	}
	c.put("/big", &zkproto.Stat{}, make([]string, childCacheMaxNames+1))
	if _, ok := c.get("/big", &zkproto.Stat{}); ok {
		t.Fatalf("an oversize listing was cached")
	}
	for i := 0; i < 2*childCacheEntries; i++ {
		c.put("/d"+string(rune(i)), &zkproto.Stat{}, nil)
		if len(c.entries) > childCacheEntries {
			t.Fatalf("%d entries", len(c.entries))
		}
	}
	// Replacing an entry keeps the name count exact.
	c.reset()
	c.put("/x", &zkproto.Stat{Cversion: 1}, make([]string, 10))
	c.put("/x", &zkproto.Stat{Cversion: 2}, make([]string, 3))
	if c.names != 3 {
		t.Fatalf("names %d after replacing an entry, want 3", c.names)
	}
}
