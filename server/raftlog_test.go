package server

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// syncCountingFS counts Sync calls on every file the log store opens.
type syncCountingFS struct {
	vfs.FS
	syncs *atomic.Int64
}

type syncCountingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f syncCountingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

func (fs syncCountingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return syncCountingFile{File: f, syncs: fs.syncs}, nil
}

func (fs syncCountingFS) Create(name string) (vfs.File, error) { return fs.wrap(fs.FS.Create(name)) }
func (fs syncCountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.Open(name, opts...))
}
func (fs syncCountingFS) OpenForAppend(name string) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenForAppend(name))
}
func (fs syncCountingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname))
}

// openTan opens the tan log store in dir through the timing wrapper, its
// files counting their syncs, and returns the number of fsync times
// observed through a pointer.
func openTan(t *testing.T, dir string, syncs *atomic.Int64) (raftio.ILogDB, *int) {
	t.Helper()
	observed := new(int)
	nhc := config.NodeHostConfig{Expert: config.ExpertConfig{FS: syncCountingFS{FS: vfs.Default, syncs: syncs}, LogDB: logDBConfig()}}
	f := timedLogDBFactory{inner: tan.Factory, observe: func(time.Duration) { *observed++ }}
	db, err := f.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
	if err != nil {
		t.Fatalf("open tan: %v", err)
	}
	return db, observed
}

func entry(index, term uint64) raftpb.Entry {
	return raftpb.Entry{Index: index, Term: term, Type: raftpb.ApplicationEntry, Cmd: []byte("cmd")}
}

// A write's new entries arrive in an update without a state (unchanged),
// and the commit that follows in an update with only the state. The
// commit must not cost an fsync; the entries must; a new term must; and
// after a restart the store holds the last state and every entry.
func TestLogStoreSyncsEntriesAndTermsNotCommits(t *testing.T) {
	dir := t.TempDir()
	var syncs atomic.Int64
	db, observed := openTan(t, dir, &syncs)
	const shard, replica = 1, 1
	save := func(what string, u raftpb.Update, wantSync bool) {
		t.Helper()
		u.ShardID, u.ReplicaID = shard, replica
		before, observedBefore := syncs.Load(), *observed
		caller := []raftpb.Update{u}
		if err := db.SaveRaftState(caller, shard); err != nil {
			t.Fatalf("%s: save: %v", what, err)
		}
		if !raftpb.IsStateEqual(caller[0].State, u.State) {
			t.Fatalf("%s: the caller's update was changed: state %v", what, caller[0].State)
		}
		gotSync := syncs.Load() > before
		if gotSync != wantSync {
			t.Fatalf("%s: synced=%v, want %v", what, gotSync, wantSync)
		}
		if gotObserved := *observed > observedBefore; gotObserved != wantSync {
			t.Fatalf("%s: fsync time observed=%v, want %v", what, gotObserved, wantSync)
		}
	}
	save("first state", raftpb.Update{State: raftpb.State{Term: 1, Vote: 1, Commit: 0}, EntriesToSave: []raftpb.Entry{entry(1, 1)}}, true)
	save("commit 1", raftpb.Update{State: raftpb.State{Term: 1, Vote: 1, Commit: 1}}, false)
	for i := uint64(2); i <= 20; i++ {
		save("entry alone", raftpb.Update{EntriesToSave: []raftpb.Entry{entry(i, 1)}}, true)
		save("its commit", raftpb.Update{State: raftpb.State{Term: 1, Vote: 1, Commit: i}}, false)
	}
	save("new term", raftpb.Update{State: raftpb.State{Term: 2, Vote: 2, Commit: 20}}, true)
	save("entry of the new term", raftpb.Update{EntriesToSave: []raftpb.Entry{entry(21, 2)}}, true)
	save("its commit", raftpb.Update{State: raftpb.State{Term: 2, Vote: 2, Commit: 21}}, false)
	db.Close()

	db, _ = openTan(t, dir, &syncs)
	defer db.Close()
	rs, err := db.ReadRaftState(shard, replica, 0)
	if err != nil {
		t.Fatalf("read state after reopen: %v", err)
	}
	if want := (raftpb.State{Term: 2, Vote: 2, Commit: 21}); !raftpb.IsStateEqual(rs.State, want) {
		t.Fatalf("state after reopen %v, want %v", rs.State, want)
	}
	if rs.FirstIndex != 1 || rs.EntryCount != 21 {
		t.Fatalf("entries after reopen: first %d count %d, want 1 and 21", rs.FirstIndex, rs.EntryCount)
	}
	ents, _, err := db.IterateEntries(nil, 0, shard, replica, 1, 22, 1<<20)
	if err != nil || len(ents) != 21 || ents[20].Term != 2 {
		t.Fatalf("entries after reopen: %d (%v)", len(ents), err)
	}
}
