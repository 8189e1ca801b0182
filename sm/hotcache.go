package sm

import (
	"bytes"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// hotCache keeps, across Updates, the values of the few keys nearly every
// write reads: ACL records and their dedupe index, the quota count, and the
// session records (every write of a session reads and rewrites its record
// for the primary-order check). Without it each setData pays three Pebble
// point lookups that reach sstables (a third of the apply CPU in a set
// benchmark, and a sixth more for the session).
//
// It cannot change what Apply computes: txn.commit stages the cacheable
// keys it writes instead of putting them in the batch, later entries read
// them staged, write puts each one in the batch once before it commits,
// and only a successful batch commit publishes them (publish); a snapshot
// recovery drops everything (reset). It is touched only by the apply path,
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

// write puts the staged writes into the Update's batch, each key once with
// its last value, in key order. Every entry of the Update writes a session
// record (and many an ACL record); staging them instead of writing each
// into the batch spares a batch and a memtable insert per entry, and
// compaction the versions nobody could read.
func (c *hotCache) write(b *pebble.Batch) error {
	if c == nil || len(c.staged) == 0 {
		return nil
	}
	keys := make([]string, 0, len(c.staged))
	for k := range c.staged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := writeKV(b, k, c.staged[k]); err != nil {
			return err
		}
	}
	return nil
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
