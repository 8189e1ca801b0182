package node

import (
	"sync"

	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
)

// A leader catching up a follower that restarted (or lagged) reads the
// entries it lacks from the Raft log, on its step worker, in one Replicate
// message of up to 64 MiB: thousands of entries. Dragonboat's tan store
// opens, seeks, decodes and closes the log file once per saved record to
// do so, and the leader sends that message again after every heartbeat
// response until the follower acknowledges it (every 20 ms). On a loaded
// host that stalled the leader's step worker for one to eight seconds
// ("had 427 LocalTick msgs in one batch"), long enough for the other
// follower, with the restarted node's vote, to elect a new leader (issue
// 34, defect 2: a restarted follower caused an election nearly every time).
//
// entryCache keeps the most recent entries this replica saved (a
// contiguous suffix of its log, up to entryCacheBytes) and answers
// IterateEntries from memory when the range starts inside it, which is
// every catch-up of a follower that was down for a little while. It
// follows the store exactly: an update that overwrites a suffix
// (a follower taking a new leader's entries) truncates it first, a gap or
// a snapshot empties it, and entries the store compacted are never served.
const entryCacheBytes = 32 << 20

type entryCache struct {
	mu    sync.Mutex
	rings map[raftio.NodeInfo]*entryRing
}

type entryRing struct {
	ents        []raftpb.Entry // contiguous indexes
	base        []raftpb.Entry // ents' array from its start (see room)
	bytes       uint64
	compactedTo uint64 // entries up to here were removed from the store
	resets      uint64 // times the suffix was dropped (see below)
}

func newEntryCache() *entryCache {
	return &entryCache{rings: map[raftio.NodeInfo]*entryRing{}}
}

// saved records updates the store has just saved.
func (c *entryCache) saved(updates []raftpb.Update) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range updates {
		key := raftio.NodeInfo{ShardID: u.ShardID, ReplicaID: u.ReplicaID}
		r := c.rings[key]
		if r == nil {
			r = &entryRing{}
			c.rings[key] = r
		}
		if !raftpb.IsEmptySnapshot(u.Snapshot) {
			r.reset()
			r.compactedTo = max(r.compactedTo, u.Snapshot.Index)
		}
		r.append(u.EntriesToSave)
	}
}

func (r *entryRing) reset() {
	r.ents, r.base, r.bytes = nil, nil, 0
	r.resets++
}

// room makes space for k more entries without a new array when the
// entries dropped from the front have freed a quarter of it: the cached
// suffix moves to the array's start (and the stale copies behind it are
// zeroed). Otherwise append grows the array. Either way a saved entry
// costs an amortised few entry copies and, once the cache is full, no
// allocation.
func (r *entryRing) room(k int) {
	n := len(r.ents)
	if n+k <= cap(r.ents) {
		return
	}
	dead := cap(r.base) - cap(r.ents)
	if dead < k || dead < n/4 {
		return
	}
	// The whole array: base's length is only what it held when it was
	// taken, fewer than n entries once the suffix grew (copying into it
	// moved just that many and left stale entries in the middle of the
	// suffix, which reads then served under the wrong indexes).
	full := r.base[:cap(r.base)]
	copy(full, r.ents)
	clear(full[n : dead+n])
	r.ents = full[:n]
}

func (r *entryRing) append(ents []raftpb.Entry) {
	if len(ents) == 0 {
		return
	}
	first := ents[0].Index
	if n := len(r.ents); n > 0 {
		switch head, last := r.ents[0].Index, r.ents[n-1].Index; {
		case first > last+1 || first < head:
			r.reset() // a gap, or older than what is kept: start again
		case first <= last:
			// A new leader's entries replace this replica's suffix.
			for _, e := range r.ents[first-head:] {
				r.bytes -= uint64(e.SizeUpperLimit())
			}
			clear(r.ents[first-head:])
			r.ents = r.ents[:first-head]
		}
	}
	r.room(len(ents))
	c := cap(r.ents)
	for _, e := range ents {
		r.ents = append(r.ents, e)
		r.bytes += uint64(e.SizeUpperLimit())
	}
	if cap(r.ents) != c { // a new array
		r.base = r.ents
	}
	// Keep the newest entryCacheBytes. The dropped entries are zeroed, so
	// their commands can be collected, and the slice moves past them
	// without a copy: once the cache is full every save drops a few
	// entries, and copying the whole suffix each time (about 100,000
	// entries of a 32 MiB cache) cost the leader 800 MB of allocation a
	// second and three quarters of its CPU under a write load. The
	// array is reused by room.
	drop := 0
	for drop < len(r.ents)-1 && r.bytes > entryCacheBytes {
		r.bytes -= uint64(r.ents[drop].SizeUpperLimit())
		drop++
	}
	if drop > 0 {
		clear(r.ents[:drop])
		r.ents = r.ents[drop:]
	}
}

// iterate answers an IterateEntries from memory, as the store would, when
// low lies within the cached suffix; ok=false leaves it to the store.
func (c *entryCache) iterate(ents []raftpb.Entry, size uint64, key raftio.NodeInfo, low, high, maxSize uint64) ([]raftpb.Entry, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rings[key]
	if r == nil || len(r.ents) == 0 || low <= r.compactedTo || low < r.ents[0].Index || low > r.ents[len(r.ents)-1].Index {
		return nil, 0, false
	}
	if maxSize == 0 {
		maxSize = ^uint64(0)
	}
	if n := len(ents); n > 0 && ents[n-1].Index+1 != low {
		return nil, 0, false // the store would panic on the gap; let it
	}
	head := r.ents[0].Index
	for i := low - head; i < uint64(len(r.ents)) && r.ents[i].Index < high; i++ {
		size += uint64(r.ents[i].SizeUpperLimit())
		ents = append(ents, r.ents[i])
		if size > maxSize {
			break
		}
	}
	return ents, size, true
}

// A replica caches only what it saved since it started. After a restart
// of the whole cluster the leader holds none of the entries a node that
// came back later lacks, and read them from the store for every Replicate
// it sent again after a heartbeat response: its step worker did nothing
// else for seven seconds, and the other follower elected a new leader
// (issue 34, found 17). So a read below the cached suffix takes the store's
// entries up to the suffix once and puts them in front of it (below and
// prepend), and the leader's next Replicates come from memory.

// below reports whether low lies below the cached suffix, above what the
// store compacted, with room left in the cache: then the entries from low
// to the suffix's head (the index returned), up to space bytes, may join
// the cache; mark is passed back to prepend.
func (c *entryCache) below(key raftio.NodeInfo, low uint64) (head, mark, space uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rings[key]
	if r == nil || len(r.ents) == 0 || low <= r.compactedTo || low >= r.ents[0].Index || r.bytes >= entryCacheBytes {
		return 0, 0, 0, false
	}
	return r.ents[0].Index, r.resets, entryCacheBytes - r.bytes, true
}

// prepend puts ents, read from the store, in front of the cached suffix
// when they end right before its head, nothing dropped the suffix since
// below returned mark, none of them was compacted since, and the whole
// fits in entryCacheBytes. It reports whether it did.
func (c *entryCache) prepend(key raftio.NodeInfo, ents []raftpb.Entry, mark uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rings[key]
	if r == nil || len(r.ents) == 0 || len(ents) == 0 || r.resets != mark ||
		ents[len(ents)-1].Index+1 != r.ents[0].Index || ents[0].Index <= r.compactedTo {
		return false
	}
	var size uint64
	for _, e := range ents {
		size += uint64(e.SizeUpperLimit())
	}
	if r.bytes+size > entryCacheBytes {
		return false
	}
	merged := make([]raftpb.Entry, 0, len(ents)+len(r.ents)+len(r.ents)/4)
	merged = append(append(merged, ents...), r.ents...)
	clear(r.ents)
	r.ents, r.base, r.bytes = merged, merged, r.bytes+size
	return true
}

// removedTo records that the store removed entries up to index.
func (c *entryCache) removedTo(key raftio.NodeInfo, index uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rings[key]
	if r == nil {
		r = &entryRing{}
		c.rings[key] = r
	}
	r.compactedTo = max(r.compactedTo, index)
}

// forget drops a replica's entries (its data was removed or replaced).
func (c *entryCache) forget(key raftio.NodeInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rings, key)
}
