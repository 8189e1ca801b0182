package node

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// The cache must answer exactly what the log holds: random appends,
// suffix overwrites (a follower taking a new leader's entries), gaps,
// snapshots and removals, checked against a plain model of the log.
func TestEntryCacheFollowsTheLog(t *testing.T) {
	t.Run("eventful", func(t *testing.T) { entryCacheModel(t, 20, 5000, 20) })
	// Snapshots and restarts empty the cache; without them it fills, drops
	// its oldest entries on every save and moves the suffix to the front
	// of its array (room), which the eventful run seldom reaches. A move
	// once copied only part of the suffix, and reads then returned entries
	// under the wrong indexes.
	t.Run("filling", func(t *testing.T) { entryCacheModel(t, 2000, 5000, 0) })
}

// entryCacheModel runs steps random saves and reads, checked against the
// model; snapshots, prefix removals and overwrites each come about once in
// rare steps (restarts a quarter as often); at least wantPrepends reads
// below the cache must have joined it.
func entryCacheModel(t *testing.T, rare, steps, wantPrepends int) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newEntryCache()
	key := raftio.NodeInfo{ShardID: 1, ReplicaID: 2}
	model := map[uint64]raftpb.Entry{} // index -> entry in the log
	var last, compacted uint64
	term := uint64(1)
	answered, prepended := 0, 0
	moves := 0
	for step := 0; step < steps; step++ {
		u := raftpb.Update{ShardID: 1, ReplicaID: 2}
		switch k := rng.IntN(rare); {
		case k == 0 && last > 0: // a snapshot replaces the log up to its index
			idx := last + uint64(rng.IntN(5))
			u.Snapshot = raftpb.Snapshot{Index: idx, Term: term, ShardID: 1}
			clear(model)
			last, compacted = idx, max(compacted, idx)
		case k == 1 && last > compacted+2: // removal of a prefix
			to := compacted + 1 + uint64(rng.IntN(int(last-compacted-1)))
			c.removedTo(key, to)
			compacted = to
			continue
		case k == 2 && rng.IntN(4) == 0: // a restart: the log stays, the cache is empty
			c = newEntryCache()
		case k < 5 && last > compacted+1: // overwrite a suffix
			term++
			first := last - uint64(rng.IntN(int(min(last-compacted-1, 5))))
			for i := first; i <= last; i++ {
				delete(model, i)
			}
			last = first - 1
		}
		n := 1 + rng.IntN(4)
		for i := 0; i < n; i++ {
			last++
			e := raftpb.Entry{Index: last, Term: term, Cmd: make([]byte, rng.IntN(64<<10))}
			u.EntriesToSave = append(u.EntriesToSave, e)
			model[last] = e
		}
		if r := c.rings[key]; r != nil && len(r.ents) > 0 && len(r.ents)+n > cap(r.ents) {
			moves++ // a save that needs room (a move or a new array)
		}
		c.saved([]raftpb.Update{u})
		// Now and then the entries below the cached suffix are read from
		// the log and put in front of it (a catch-up after a restart).
		if rng.IntN(10) == 0 {
			from := compacted + 1 + uint64(rng.IntN(int(last-compacted)))
			if head, mark, _, ok := c.below(key, from); ok {
				var gap []raftpb.Entry
				for i := from; i < head; i++ {
					gap = append(gap, model[i])
				}
				if c.prepend(key, gap, mark) {
					prepended++
				}
			}
		}
		// Ask for a random range; whatever the cache answers must match.
		low := compacted + 1 + uint64(rng.IntN(int(last-compacted)))
		high := low + 1 + uint64(rng.IntN(20))
		maxSize := uint64(rng.IntN(256 << 10))
		got, size, ok := c.iterate(nil, 0, key, low, high, maxSize)
		if !ok {
			continue
		}
		answered++
		var want []raftpb.Entry
		var wantSize uint64
		lim := maxSize
		if lim == 0 {
			lim = ^uint64(0)
		}
		for i := low; i < high; i++ {
			e, present := model[i]
			if !present {
				break
			}
			want = append(want, e)
			wantSize += uint64(e.SizeUpperLimit())
			if wantSize > lim {
				break
			}
		}
		if len(got) != len(want) || size != wantSize {
			t.Fatalf("step %d: [%d,%d) max %d: got %d entries (%d bytes), want %d (%d bytes)", step, low, high, maxSize, len(got), size, len(want), wantSize)
		}
		for i := range got {
			if got[i].Index != want[i].Index || got[i].Term != want[i].Term || len(got[i].Cmd) != len(want[i].Cmd) {
				t.Fatalf("step %d: entry %d is %d/%d, want %d/%d", step, i, got[i].Index, got[i].Term, want[i].Index, want[i].Term)
			}
		}
	}
	if answered < steps/5 || prepended < wantPrepends || moves < 20 {
		t.Fatalf("the cache answered only %d of %d reads, took entries below it %d times and needed room %d times", answered, steps, prepended, moves)
	}
}

// Once the cache is full every save drops its oldest entries; that must
// not copy the cached suffix each time (it did: about 3 MB per save of a
// small entry, most of a leader's CPU under a write load).
func TestEntryCacheFullSaveIsCheap(t *testing.T) {
	c := newEntryCache()
	cmd := make([]byte, 1<<10)
	ups := []raftpb.Update{{ShardID: 1, ReplicaID: 2, EntriesToSave: make([]raftpb.Entry, 1)}}
	var index uint64
	save := func() {
		index++
		ups[0].EntriesToSave[0] = raftpb.Entry{Index: index, Term: 1, Cmd: cmd}
		c.saved(ups)
	}
	for index < 2*entryCacheBytes/uint64(len(cmd)) { // full, and trimming
		save()
	}
	const saves = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < saves; i++ {
		save()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / saves; per > 64 {
		t.Fatalf("a save into a full cache allocated %d bytes, want none (under 64)", per)
	}
	key := raftio.NodeInfo{ShardID: 1, ReplicaID: 2}
	got, _, ok := c.iterate(nil, 0, key, index, index+1, 0)
	if !ok || len(got) != 1 || got[0].Index != index {
		t.Fatalf("the newest entry %d is not served from the cache: %v %v", index, ok, got)
	}
	if b := c.rings[key].bytes; b > entryCacheBytes {
		t.Fatalf("the cache holds %d bytes, over its %d", b, entryCacheBytes)
	}
}

// openCountingFS counts the files opened for reading (tan opens the log
// file once per saved record it reads).
type openCountingFS struct {
	vfs.FS
	opens *atomic.Int64
}

func (fs openCountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	fs.opens.Add(1)
	return fs.FS.Open(name, opts...)
}

// After a restart a leader caches only what it saved since, and a node
// that came back later needs older entries: they are read from the store
// once, join the cache in front of its suffix, and the Replicates sent
// again after every heartbeat response come from memory (found 17: the
// leader's step worker read them from the store for seven seconds).
func TestEntriesBelowTheCacheAreReadFromTheStoreOnce(t *testing.T) {
	dir := t.TempDir()
	var opens atomic.Int64
	fs := openCountingFS{FS: vfs.Default, opens: &opens}
	open := func() raftio.ILogDB {
		nhc := config.NodeHostConfig{Expert: config.ExpertConfig{FS: fs, LogDB: logDBConfig()}}
		f := timedLogDBFactory{inner: tan.Factory, observe: func(time.Duration) {}}
		db, err := f.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
		if err != nil {
			t.Fatalf("open tan: %v", err)
		}
		return db
	}
	db := open()
	saveEntries(t, db, 1, 500) // before the restart
	db.Close()
	db = open() // the restart: nothing cached
	if _, err := db.ReadRaftState(1, 1, 0); err != nil {
		t.Fatal(err)
	}
	saveEntries(t, db, 501, 510) // since the restart: cached
	defer db.Close()
	read := func() {
		t.Helper()
		ents, _, err := db.IterateEntries(nil, 0, 1, 1, 7, 511, 64<<20)
		if err != nil || len(ents) != 504 {
			t.Fatalf("read [7, 511): %d entries (%v), want 504", len(ents), err)
		}
		for i, e := range ents {
			if e.Index != uint64(7+i) || e.Term != 1 || string(e.Cmd) != "cmd" {
				t.Fatalf("entry %d is %d/%d %q", i, e.Index, e.Term, e.Cmd)
			}
		}
	}
	opens.Store(0)
	read()
	if n := opens.Load(); n == 0 {
		t.Fatalf("the first read below the cache opened no log file: it was not read from the store")
	}
	opens.Store(0)
	for i := 0; i < 5; i++ {
		read()
	}
	if n := opens.Load(); n != 0 {
		t.Fatalf("reads after the first opened log files %d times: the entries did not join the cache", n)
	}
	// Entries the store compacts are never served from the cache.
	if err := db.RemoveEntriesTo(1, 1, 100); err != nil {
		t.Fatal(err)
	}
	if ents, _, _ := db.IterateEntries(nil, 0, 1, 1, 50, 60, 64<<20); len(ents) != 0 {
		t.Fatalf("read [50, 60) after compacting to 100: %d entries, want none", len(ents))
	}
}
