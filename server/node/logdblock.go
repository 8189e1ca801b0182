package node

import (
	"cmp"
	"slices"
	"sync"

	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
)

// replicaWriteLocks serialises the writes to one replica's Raft log.
//
// Dragonboat's tan log store keeps one log file per replica and fsyncs it
// without a lock, after the write that took one: SaveRaftState syncs in a
// goroutine of its own, RemoveEntriesTo (a compaction after a snapshot)
// and SaveSnapshots sync after their writes, and these run on different
// goroutines (the step worker, the snapshot worker). A write that fills
// the 64 MiB file closes it and opens the next. When that write came
// between another writer's write and its sync, the sync either hit the
// closed file ("bad file descriptor", which tan answers with a panic that
// ends the process) or synced the new file while the record just written
// sat unsynced in the closed one. With 100 KB values a file fills every
// few hundred writes and a snapshot (so a compaction) follows every
// 256 MiB, and nodes died under a set load. Holding a replica's lock
// across a write and its sync keeps a file from closing under a sync.
//
// SaveRaftState takes the locks of every replica in its batch, in one
// order (shard, then replica), so two batches cannot deadlock. The locks
// are per replica: one step worker's fsync does not wait for another's.
type replicaWriteLocks struct {
	mu    sync.Mutex
	locks map[raftio.NodeInfo]*sync.Mutex
}

func (r *replicaWriteLocks) of(key raftio.NodeInfo) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[raftio.NodeInfo]*sync.Mutex{}
	}
	l, ok := r.locks[key]
	if !ok {
		l = &sync.Mutex{}
		r.locks[key] = l
	}
	return l
}

// lock takes one replica's lock and returns its unlock.
func (r *replicaWriteLocks) lock(shardID, replicaID uint64) func() {
	l := r.of(raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID})
	l.Lock()
	return l.Unlock
}

// lockUpdates takes the locks of every replica the updates write to.
func (r *replicaWriteLocks) lockUpdates(updates []raftpb.Update) func() {
	switch len(updates) {
	case 0:
		return func() {}
	case 1:
		return r.lock(updates[0].ShardID, updates[0].ReplicaID)
	}
	keys := make([]raftio.NodeInfo, 0, len(updates))
	for _, u := range updates {
		keys = append(keys, raftio.NodeInfo{ShardID: u.ShardID, ReplicaID: u.ReplicaID})
	}
	slices.SortFunc(keys, func(a, b raftio.NodeInfo) int {
		return cmp.Or(cmp.Compare(a.ShardID, b.ShardID), cmp.Compare(a.ReplicaID, b.ReplicaID))
	})
	keys = slices.Compact(keys)
	held := make([]*sync.Mutex, 0, len(keys))
	for _, k := range keys {
		l := r.of(k)
		l.Lock()
		held = append(held, l)
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock()
		}
	}
}
