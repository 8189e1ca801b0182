package node

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"

	"github.com/zkbridge/zkbridge/server/node/logfs"
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

// openTanOn opens the tan log store in dir through fs, as startRaft does.
func openTanOn(t *testing.T, dir string, fs vfs.FS) raftio.ILogDB {
	t.Helper()
	nhc := config.NodeHostConfig{Expert: config.ExpertConfig{FS: fs, LogDB: logDBConfig()}}
	db, err := tan.Factory.Create(nhc, func(config.LogDBInfo) {}, []string{dir}, []string{dir})
	if err != nil {
		t.Fatalf("open tan: %v", err)
	}
	return db
}

func saveEntries(t *testing.T, db raftio.ILogDB, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		u := raftpb.Update{ShardID: 1, ReplicaID: 1, EntriesToSave: []raftpb.Entry{entry(i, 1)},
			State: raftpb.State{Term: 1, Vote: 1, Commit: i}}
		if err := db.SaveRaftState([]raftpb.Update{u}, 1); err != nil {
			t.Fatalf("save entry %d: %v", i, err)
		}
	}
}

func checkEntries(t *testing.T, what string, db raftio.ILogDB, n uint64) {
	t.Helper()
	ents, _, err := db.IterateEntries(nil, 0, 1, 1, 1, n+1, 1<<30)
	if err != nil || uint64(len(ents)) != n || ents[n-1].Index != n {
		t.Fatalf("%s: read %d entries (%v), want %d", what, len(ents), err, n)
	}
	rs, err := db.ReadRaftState(1, 1, 0)
	if err != nil || rs.State.Commit != n || rs.EntryCount != n {
		t.Fatalf("%s: state %+v (%v), want commit and count %d", what, rs, err, n)
	}
}

// tanLogs lists the log files under dir with their sizes.
func tanLogs(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	logs := map[string]int64{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
			fi, _ := d.Info()
			logs[p] = fi.Size()
		}
		return nil
	})
	return logs
}

// Tan through logfs: the live log, reserved at full size, reads to its
// last record; a closed log is cut to its records; and a log a crash left
// at its reserved size, or a closed one whose cut did not happen, opens
// after TrimReserved with every entry.
func TestLogStoreOnReservedLogs(t *testing.T) {
	dir := t.TempDir()
	db := openTanOn(t, dir, logfs.New(vfs.Default))
	saveEntries(t, db, 1, 200)
	checkEntries(t, "live log", db, 200)
	reserved := false
	for _, s := range tanLogs(t, dir) {
		reserved = reserved || s == logfs.Reserve
	}
	if !reserved {
		t.Skip("this file system cannot reserve the log (no fallocate)")
	}

	// A crash: the directory as it is on disk while tan has it open.
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for p, s := range tanLogs(t, dir) {
		if s == logfs.Reserve {
			t.Fatalf("closed log %s still at its reserved size", p)
		}
	}
	db = openTanOn(t, dir, logfs.New(vfs.Default))
	checkEntries(t, "after a clean close", db, 200)
	saveEntries(t, db, 201, 250)
	db.Close()

	trimmed, err := logfs.TrimReserved(crashed)
	if err != nil || len(trimmed) != 1 {
		t.Fatalf("crash image: trimmed %v (%v), want the one live log", trimmed, err)
	}
	db = openTanOn(t, crashed, logfs.New(vfs.Default))
	checkEntries(t, "after a crash", db, 200)
	db.Close()

	// A closed, indexed log whose cut a crash prevented: zeros to the
	// reserved size behind its records. Without the trim tan cannot read
	// the log to its end.
	uncut := t.TempDir()
	if err := os.CopyFS(uncut, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	for p, s := range tanLogs(t, uncut) {
		if s > 0 {
			if err := os.Truncate(p, logfs.Reserve); err != nil {
				t.Fatal(err)
			}
		}
	}
	db = openTanOn(t, uncut, vfs.Default)
	if _, _, err := db.IterateEntries(nil, 0, 1, 1, 1, 251, 1<<30); err == nil {
		t.Log("tan read a zero-tailed log without the trim")
	}
	db.Close()
	if trimmed, err := logfs.TrimReserved(uncut); err != nil || len(trimmed) == 0 {
		t.Fatalf("uncut logs: trimmed %v (%v)", trimmed, err)
	}
	db = openTanOn(t, uncut, logfs.New(vfs.Default))
	defer db.Close()
	checkEntries(t, "after trimming uncut logs", db, 250)
}
