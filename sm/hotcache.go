package sm

import "bytes"

// hotCache keeps, across Updates, the values of the few keys nearly every
// write reads: ACL records and their dedupe index, the quota count, and the
// session records (every write of a session reads and rewrites its record
// for the primary-order check). Without it each setData pays three Pebble
// point lookups that reach sstables (a third of the apply CPU in a set
// benchmark, and a sixth more for the session).
//
// It cannot change what Apply computes: txn.commit stages the cacheable
// keys it writes (the batch gets them from txn's pending writes, as every
// other key), later entries read them staged, and only a successful batch
// commit publishes them (publish); a snapshot recovery drops everything
// (reset). It is touched only by the apply path,
// and every apply read of these keys goes through txn.get.
type hotCache struct {
	vals    map[string][]byte // nil value: known absent
	staged  map[string][]byte // written by this Update's committed entries
	maxKeys int
}

func newHotCache() *hotCache {
	return &hotCache{vals: map[string][]byte{}, staged: map[string][]byte{}, maxKeys: 1 << 14}
}

// cacheable reports whether k is one of the hot keys.
func cacheable(k []byte) bool {
	return len(k) > 0 && (k[0] == spaceACL || k[0] == spaceACLIndex || k[0] == spaceSession) || bytes.Equal(k, keyQuotaCount)
}

// lookup returns the value this Update would read for k: the staged write
// of an earlier entry first, then the committed cache.
func (c *hotCache) lookup(k []byte) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	if v, ok := c.staged[string(k)]; ok {
		return v, true
	}
	v, ok := c.vals[string(k)]
	return v, ok
}

// remember caches a value read from Pebble (committed state only: the
// Update's own writes are staged, so they are never read from Pebble here
// unless staged already).
func (c *hotCache) remember(k, v []byte) {
	if c == nil || len(c.vals) >= c.maxKeys {
		return
	}
	c.vals[string(k)] = v[:len(v):len(v)] // an append by a reader must copy
}

// stage records a write of this Update's batch.
func (c *hotCache) stage(k string, v []byte) {
	if c != nil {
		c.staged[k] = v[:len(v):len(v)]
	}
}

// publish makes the staged writes committed, after the batch committed.
func (c *hotCache) publish() {
	if c == nil {
		return
	}
	for k, v := range c.staged {
		if v == nil && k[0] == spaceSession {
			// A closed session is not looked up again: keeping its
			// absence would fill the cache with the dead.
			delete(c.vals, k)
			continue
		}
		if _, ok := c.vals[k]; ok || len(c.vals) < c.maxKeys {
			c.vals[k] = v
		}
	}
	clear(c.staged)
}

// discard drops the staged writes of a failed Update.
func (c *hotCache) discard() {
	if c != nil {
		clear(c.staged)
	}
}

// reset forgets everything (the DB was replaced).
func (c *hotCache) reset() {
	if c != nil {
		clear(c.vals)
		clear(c.staged)
	}
}
