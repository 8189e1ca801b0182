package node

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	dbsm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/rs/zerolog"
)

// byteSnapshots requests a Raft snapshot of a replica once the entries it
// applied since its last request pass a size. dragonboat's own trigger
// counts entries (SnapshotEntries) and keeps CompactionOverhead entries
// behind each snapshot; with large values the Raft log, about one byte per
// byte written, then grows far past what a disk holds (1 MB values: some
// 60 GB per node). ZooKeeper has the same pair: snapCount and
// snapSizeLimitInKb.
//
// A snapshot of the on-disk state machine is cheap (a Sync and metadata).
// It keeps behind it the entries of the last interval, at most the entry
// rule's overhead, so the log holds about two intervals' bytes.
type byteSnapshots struct {
	nh    *dragonboat.NodeHost
	shard uint64
	// limit is the bytes applied that trigger a request; 0 turns it off.
	limit int64
	// maxKeep bounds the entries a requested snapshot keeps behind it:
	// never more than the entry rule keeps.
	maxKeep uint64
	log     zerolog.Logger

	bytes, entries atomic.Int64 // applied since the last completed request
	// next is the byte count at which to ask: limit, or further after a
	// request failed (another snapshot under way, the shard stopping).
	next    atomic.Int64
	pending atomic.Bool
}

func newByteSnapshots(nh *dragonboat.NodeHost, shard uint64, limit, maxKeep uint64, log zerolog.Logger) *byteSnapshots {
	b := &byteSnapshots{nh: nh, shard: shard, limit: int64(limit), maxKeep: maxKeep, log: log}
	b.next.Store(b.limit)
	return b
}

// applied counts a batch the state machine applied; it runs on the apply
// path, so the request itself is made on its own goroutine.
func (b *byteSnapshots) applied(ents []dbsm.Entry) {
	if b == nil || b.limit <= 0 {
		return
	}
	var n int64
	for _, e := range ents {
		n += int64(len(e.Cmd))
	}
	b.entries.Add(int64(len(ents)))
	if b.bytes.Add(n) < b.next.Load() || !b.pending.CompareAndSwap(false, true) {
		return
	}
	go b.request()
}

func (b *byteSnapshots) request() {
	defer b.pending.Store(false)
	bytes, entries := b.bytes.Load(), b.entries.Load()
	keep := min(uint64(entries), b.maxKeep)
	if err := b.snapshot(keep); err != nil {
		// Asked again after another eighth of the limit: a snapshot
		// already under way or at this index is the usual cause.
		b.next.Store(bytes + b.limit/8)
		b.log.Debug().Err(err).Int64("bytes", bytes).Msg("size-triggered snapshot not taken")
		return
	}
	b.bytes.Add(-bytes)
	b.entries.Add(-entries)
	b.next.Store(b.limit)
	b.log.Debug().Int64("bytes", bytes).Int64("entries", entries).Uint64("kept", keep).Msg("snapshot taken: the log since the last passed snapshot_bytes")
}

func (b *byteSnapshots) snapshot(keep uint64) error {
	opt := dragonboat.SnapshotOption{OverrideCompactionOverhead: true, CompactionOverhead: keep}
	rs, err := b.nh.RequestSnapshot(b.shard, opt, 30*time.Second)
	if err != nil {
		return fmt.Errorf("request snapshot of shard %d: %w", b.shard, err)
	}
	defer rs.Release()
	res := <-rs.ResultC()
	switch {
	case res.Completed():
		return nil
	case res.Rejected():
		return errors.New("snapshot rejected (one under way or none needed)")
	default:
		return fmt.Errorf("snapshot of shard %d did not complete (timeout, dropped or shard closed)", b.shard)
	}
}
