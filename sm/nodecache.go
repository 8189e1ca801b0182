package sm

// nodeCache keeps, across Updates, the decoded records of the nodes the
// apply path read or wrote last. Every setData, delete and create reads a
// node (the target, or the parent) that an earlier Update usually touched;
// without it each one is a Pebble point lookup through the memtables and
// the levels, and a decode (a third of a set benchmark's apply CPU at
// 3 nodes).
//
// It mirrors committed state only, so it cannot change what Apply
// computes: a node read from Pebble under the Update's batch was not
// written by this Update (txn.written would hold it), so it is the
// committed value whether or not the Update commits; the records this
// Update wrote enter only after its batch committed (publish); a replaced
// database empties it (reset). Records in it are never handed out: a
// lookup returns a copy, as txn.written's are, because ops mutate the
// records they read. A node's data slice is replaced by a write, never
// changed in place, so copies share it.
//
// It is bounded by records and by data bytes; when either bound would be
// crossed it starts empty again, which keeps the policy free of map order
// and of per-entry bookkeeping (the working set of a busy tree refills it
// in a few Updates).
type nodeCache struct {
	recs      map[string]*nodeRec
	dataBytes int
	maxRecs   int
	maxBytes  int
}

// The bounds: 16,384 records and 16 MiB of data (a few MiB of heap for
// the records themselves). Variables so a test can make them tiny.
var (
	nodeCacheMaxRecs  = 1 << 14
	nodeCacheMaxBytes = 16 << 20
)

func newNodeCache() *nodeCache {
	return &nodeCache{recs: map[string]*nodeRec{}, maxRecs: nodeCacheMaxRecs, maxBytes: nodeCacheMaxBytes}
}

// lookup returns a copy of the cached record of p, with its data.
func (c *nodeCache) lookup(p string) (*nodeRec, bool) { return c.find(p, false) }

// lookupMeta returns a copy of the cached record of p, which may leave a
// large value out (omittedLen): what an op that replaces the data needs.
func (c *nodeCache) lookupMeta(p string) (*nodeRec, bool) { return c.find(p, true) }

func (c *nodeCache) find(p string, withoutData bool) (*nodeRec, bool) {
	if c == nil {
		return nil, false
	}
	r, ok := c.recs[p]
	if !ok || r.omittedLen > 0 && !withoutData {
		return nil, false // a record without its data is not copied for a read
	}
	cp := *r
	return &cp, true
}

// nodeCacheMetaOnlyMin: a record whose data would cross the data bound and
// is larger than this is kept without its data (the data bound would
// otherwise empty the cache every few large records). A setData of it
// then needs no read: before, a set of a 1 MB node read the old megabyte
// from Pebble (a blob file, decompressed) only to drop it, an eighth of
// every node's CPU under 1 MB sets. A variable so a test can make it tiny.
var nodeCacheMetaOnlyMin = 4096

// remember caches the committed record of p (nil: absent, which the node
// filter already answers, so absence is not kept).
func (c *nodeCache) remember(p string, rec *nodeRec) {
	if c == nil {
		return
	}
	if rec == nil {
		c.forget(p)
		return
	}
	c.forget(p)
	if len(c.recs)+1 > c.maxRecs {
		c.reset()
	}
	cp := *rec
	if c.dataBytes+len(cp.data) > c.maxBytes {
		if len(cp.data) > nodeCacheMetaOnlyMin {
			cp.data, cp.omittedLen = nil, len(cp.data)
		} else {
			c.reset()
			if len(cp.data) > c.maxBytes {
				return
			}
		}
	}
	c.recs[p] = &cp
	c.dataBytes += len(cp.data)
}

func (c *nodeCache) forget(p string) {
	if old, ok := c.recs[p]; ok {
		c.dataBytes -= len(old.data)
		delete(c.recs, p)
	}
}

// publish takes the records an Update wrote (nil: deleted), after its
// batch committed.
func (c *nodeCache) publish(written map[string]*nodeRec) {
	if c == nil {
		return
	}
	// An Update that wrote more than a quarter of the cache (a migration
	// import's batches) empties it instead: its records would push the
	// cache past its bound within a few Updates anyway, and copying each
	// one in was a twentieth of an import's apply.
	if len(written) > max(c.maxRecs/4, 1024) {
		c.reset()
		return
	}
	for p, rec := range written {
		c.remember(p, rec)
	}
}

// reset forgets everything (the DB was replaced, or a bound was reached).
func (c *nodeCache) reset() {
	if c != nil {
		clear(c.recs)
		c.dataBytes = 0
	}
}
