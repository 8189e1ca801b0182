package sm

import (
	"math/rand"
	"testing"
)

func TestNodeCacheLookupIsACopy(t *testing.T) {
	c := newNodeCache()
	c.remember("/a", &nodeRec{version: 1, data: []byte("x")})
	r, ok := c.lookup("/a")
	if !ok || r.version != 1 {
		t.Fatalf("lookup /a = %+v, %v", r, ok)
	}
	r.version = 7 // an op mutates what it read
	if again, _ := c.lookup("/a"); again.version != 1 {
		t.Fatalf("cached record changed through a lookup: version %d", again.version)
	}
	c.publish(map[string]*nodeRec{"/a": nil, "/b": {version: 2}})
	if _, ok := c.lookup("/a"); ok {
		t.Fatal("a deleted node is still cached")
	}
	if r, ok := c.lookup("/b"); !ok || r.version != 2 {
		t.Fatalf("published /b = %+v, %v", r, ok)
	}
	c.reset()
	if _, ok := c.lookup("/b"); ok || c.dataBytes != 0 {
		t.Fatal("reset kept records")
	}
}

func TestNodeCacheBounds(t *testing.T) {
	c := &nodeCache{recs: map[string]*nodeRec{}, maxRecs: 2, maxBytes: 10}
	c.remember("/a", &nodeRec{data: make([]byte, 4)})
	c.remember("/b", &nodeRec{data: make([]byte, 4)})
	c.remember("/b", &nodeRec{data: make([]byte, 5)}) // a rewrite replaces, not adds
	if len(c.recs) != 2 || c.dataBytes != 9 {
		t.Fatalf("records %d, data bytes %d; want 2, 9", len(c.recs), c.dataBytes)
	}
	c.remember("/c", &nodeRec{data: make([]byte, 1)}) // a third record: starts over
	if len(c.recs) != 1 || c.dataBytes != 1 {
		t.Fatalf("after the record bound: records %d, data bytes %d; want 1, 1", len(c.recs), c.dataBytes)
	}
	c.remember("/big", &nodeRec{data: make([]byte, 11)}) // larger than the cache
	if _, ok := c.lookup("/big"); ok || c.dataBytes != 0 {
		t.Fatalf("a record over the byte bound was cached (data bytes %d)", c.dataBytes)
	}
}

// TestModelTinyNodeCache runs the model with a node cache of a few records,
// so it empties itself every few entries: what Apply computes must not
// depend on what the cache holds.
func TestModelTinyNodeCache(t *testing.T) {
	recs, bytes := nodeCacheMaxRecs, nodeCacheMaxBytes
	nodeCacheMaxRecs, nodeCacheMaxBytes = 3, 64
	defer func() { nodeCacheMaxRecs, nodeCacheMaxBytes = recs, bytes }()
	s, _ := runModel(t, 3, 4000, func(r *rand.Rand) int { return 1 + r.Intn(8) }, t.TempDir())
	s.Close()
}
