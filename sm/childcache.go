package sm

import (
	"sync"

	"github.com/zkbridge/zkbridge/zkproto"
)

// childCache keeps the child names of recently listed nodes, so a listing
// of a directory whose children did not change since it was last listed
// skips the Pebble scan: building the iterator over every memtable and
// level cost listing three times what a getData costs.
//
// An entry is valid for the node's (czxid, cversion): czxid names one
// incarnation of the node, and cversion moves on with every child created
// or deleted under it, and zxids never repeat (the zxid base only moves
// forward), so within the one history a replica applies those two name
// one set of children whichever view read it. The cache is only read and
// filled by views, never by apply; a snapshot recovery clears it anyway.
type childCache struct {
	mu      sync.Mutex
	entries map[string]childEntry
	names   int // names held by entries
}

type childEntry struct {
	czxid    int64
	cversion int32
	names    []string // shared by every reader: never modified
}

// Bounds: directories cached, names held in all (a few MB), and children
// per cached directory (a bigger listing is scanned every time rather than
// pinned in memory).
const (
	childCacheEntries  = 4096
	childCacheNames    = 1 << 16
	childCacheMaxNames = 1024
)

func newChildCache() *childCache { return &childCache{entries: map[string]childEntry{}} }

// get returns the cached children of p for its stat st.
func (c *childCache) get(p string, st *zkproto.Stat) ([]string, bool) {
	c.mu.Lock()
	e, ok := c.entries[p]
	c.mu.Unlock()
	if !ok || e.czxid != st.Czxid || e.cversion != st.Cversion {
		return nil, false
	}
	return e.names, true
}

// put remembers the children names of p at stat st. When the cache is
// full (entries or names) it starts over: simpler than an LRU, and a
// listing workload refills it within one round.
func (c *childCache) put(p string, st *zkproto.Stat, names []string) {
	if len(names) > childCacheMaxNames {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[p]; ok {
		c.names -= len(old.names)
	} else if len(c.entries) >= childCacheEntries {
		c.clearLocked()
	}
	if c.names+len(names) > childCacheNames {
		c.clearLocked()
	}
	c.entries[p] = childEntry{czxid: st.Czxid, cversion: st.Cversion, names: names}
	c.names += len(names)
}

func (c *childCache) clearLocked() {
	clear(c.entries)
	c.names = 0
}

func (c *childCache) reset() {
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}
