package sm

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
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
	// A large value over the bound: its record is kept without the data,
	// for setData alone, and the small records stay.
	c.remember("/s", &nodeRec{data: make([]byte, 3)})
	c.remember("/large", &nodeRec{version: 4, data: make([]byte, nodeCacheMetaOnlyMin+1)})
	if _, ok := c.lookup("/large"); ok {
		t.Fatal("a record without its data was returned for a read")
	}
	if r, ok := c.lookupMeta("/large"); !ok || r.data != nil || r.omittedLen != nodeCacheMetaOnlyMin+1 || r.version != 4 || r.dataLen() != nodeCacheMetaOnlyMin+1 {
		t.Fatalf("lookupMeta /large = %+v, %v", r, ok)
	}
	if _, ok := c.lookup("/s"); !ok || c.dataBytes != 3 {
		t.Fatalf("the small record went (data bytes %d)", c.dataBytes)
	}
}

// TestModelTinyNodeCache runs the model with a node cache of a few bytes,
// so it empties itself every few entries and keeps most records without
// their data (setData's): what Apply computes must not depend on what the
// cache holds.
func TestModelTinyNodeCache(t *testing.T) {
	recs, bytes, metaOnly := nodeCacheMaxRecs, nodeCacheMaxBytes, nodeCacheMetaOnlyMin
	nodeCacheMaxRecs, nodeCacheMaxBytes, nodeCacheMetaOnlyMin = 16, 6, 2 // most values cross the bound and are kept without their data
	defer func() { nodeCacheMaxRecs, nodeCacheMaxBytes, nodeCacheMetaOnlyMin = recs, bytes, metaOnly }()
	s, _ := runModel(t, 3, 4000, func(r *rand.Rand) int { return 1 + r.Intn(8) }, t.TempDir())
	s.Close()
}

// A setData of a node the cache keeps without its data (a large value
// over the data bound) replaces the value without reading it, and what
// the node holds after it, and after ops that need the whole record, is
// the new value.
func TestSetDataOfANodeCachedWithoutItsData(t *testing.T) {
	maxBytes := nodeCacheMaxBytes
	nodeCacheMaxBytes = 1024
	defer func() { nodeCacheMaxBytes = maxBytes }()
	h := newHarness(t, Config{})
	s := h.newSession()
	value := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	get := func(what string, want []byte, version int32) {
		t.Helper()
		v := h.view()
		defer v.Close()
		n, err := v.Get("/big")
		if err != nil || !bytes.Equal(n.Data, want) || n.Stat.DataLength != int32(len(want)) || n.Stat.Version != version {
			t.Fatalf("%s: /big holds %d bytes, stat length %d, version %d (%v); want %d bytes, version %d",
				what, len(n.Data), n.Stat.DataLength, n.Stat.Version, err, len(want), version)
		}
	}
	cached := func(what string) {
		t.Helper()
		if r, ok := h.s.nodes.lookupMeta("/big"); !ok || r.omittedLen == 0 {
			t.Fatalf("%s: /big is not cached without its data", what)
		}
	}
	h.create(s, "/big", value('a', 5000), 0)
	cached("after the create")
	if r := h.do(s, &SetData{Path: "/big", Data: value('b', 6000), Version: 0}); r.Err != zkproto.ErrOK || r.Stat.DataLength != 6000 {
		t.Fatalf("setData: %v, length %d", r.Err, r.Stat.DataLength)
	}
	get("after the set", value('b', 6000), 1)
	cached("after the set")
	// A failed set, then ops that rewrite the whole record: a setACL, and
	// a child's create (the parent's cversion).
	if r := h.do(s, &SetData{Path: "/big", Data: []byte("x"), Version: 7}); r.Err != zkproto.ErrBadVersion {
		t.Fatalf("setData at a wrong version: %v", r.Err)
	}
	if r := h.do(s, &SetACL{Path: "/big", ACL: open, Version: -1}); r.Err != zkproto.ErrOK {
		t.Fatalf("setACL: %v", r.Err)
	}
	h.mustCreate(s, "/big/a")
	get("after a failed set, a setACL and a child's create", value('b', 6000), 1)
	// In one multi: the set, then a child's create.
	cached("before the multi")
	if r := h.do(s, &Multi{Ops: []Op{&SetData{Path: "/big", Data: value('c', 7000), Version: 1},
		&Create{OpCode: zkproto.OpCreate, Path: "/big/b", ACL: open}}}); r.Err != zkproto.ErrOK {
		t.Fatalf("multi: %v", r.Err)
	}
	get("after the multi", value('c', 7000), 2)
	// A multi whose set fails after a check of the same node.
	cached("before the failed multi")
	h.do(s, &Multi{Ops: []Op{&Check{Path: "/big", Version: 2}, &SetData{Path: "/big", Data: []byte("y"), Version: 9}}})
	get("after the failed multi", value('c', 7000), 2)
}
