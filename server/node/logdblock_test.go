package node

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// syncAuditFS watches the Raft log's files: a sync of a file already
// closed, or a file closed with records written since its last sync, is a
// record that was acknowledged without being on disk. Each sync takes a
// millisecond, as an fsync would, so that writers overlap.
type syncAuditFS struct {
	vfs.FS
	mu         sync.Mutex
	violations []string
}

type auditedFile struct {
	vfs.File
	fs     *syncAuditFS
	name   string
	dirty  atomic.Bool
	closed atomic.Bool
}

func (fs *syncAuditFS) violation(format string, args ...any) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.violations = append(fs.violations, fmt.Sprintf(format, args...))
}

func (fs *syncAuditFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &auditedFile{File: f, fs: fs, name: name}, nil
}

func (fs *syncAuditFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs *syncAuditFS) OpenForAppend(name string) (vfs.File, error) {
	f, err := fs.FS.OpenForAppend(name)
	return fs.wrap(name, f, err)
}

func (fs *syncAuditFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

func (f *auditedFile) Write(p []byte) (int, error) {
	if f.closed.Load() {
		f.fs.violation("write to %s after it was closed", f.name)
	}
	f.dirty.Store(true)
	return f.File.Write(p)
}

func (f *auditedFile) Sync() error {
	time.Sleep(time.Millisecond)
	if f.closed.Load() {
		// tan panics on a failed sync; the test reports it instead.
		f.fs.violation("sync of %s after it was closed", f.name)
		return nil
	}
	f.dirty.Store(false)
	return f.File.Sync()
}

func (f *auditedFile) Close() error {
	if f.dirty.Load() {
		f.fs.violation("%s closed with records written since its last sync", f.name)
	}
	f.closed.Store(true)
	return f.File.Close()
}

// The step worker's log saves and the snapshot worker's compactions write
// to the same replica's log file from two goroutines. Every save of new
// entries must be synced in the file it went to, also when the other
// writer fills that file and opens the next (every 64 MiB; here every 64
// saves of 1 MiB). Without the write locks tan synced after the file was
// closed (a panic in production: nodes died under 100 KB sets) or synced
// the next file instead.
func TestLogSavesAndCompactionsDoNotSyncAClosedFile(t *testing.T) {
	fs := &syncAuditFS{FS: vfs.NewMem()}
	nhc := config.NodeHostConfig{Expert: config.ExpertConfig{FS: fs, LogDB: logDBConfig()}}
	f := timedLogDBFactory{inner: tan.Factory, observe: func(time.Duration) {}}
	db, err := f.Create(nhc, func(config.LogDBInfo) {}, []string{"/log"}, []string{"/log"})
	if err != nil {
		t.Fatalf("open tan: %v", err)
	}
	defer db.Close()
	const shard, replica = 1, 1
	value := make([]byte, 1<<20)
	const saves = 64 * 6 // six files filled
	var saved atomic.Uint64
	done := make(chan struct{})
	compactErr := make(chan error, 1)
	go func() {
		defer close(compactErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if to := saved.Load(); to > 1 {
				if err := db.RemoveEntriesTo(shard, replica, to-1); err != nil {
					compactErr <- err
					return
				}
			}
		}
	}()
	for i := uint64(1); i <= saves; i++ {
		u := raftpb.Update{ShardID: shard, ReplicaID: replica,
			State:         raftpb.State{Term: 1, Vote: 1, Commit: i - 1},
			EntriesToSave: []raftpb.Entry{{Index: i, Term: 1, Type: raftpb.ApplicationEntry, Cmd: value}}}
		if err := db.SaveRaftState([]raftpb.Update{u}, shard); err != nil {
			t.Fatalf("save entry %d: %v", i, err)
		}
		saved.Store(i)
	}
	close(done)
	if err := <-compactErr; err != nil {
		t.Fatalf("compaction: %v", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n := len(fs.violations); n > 0 {
		t.Fatalf("%d records acknowledged without a sync of their file, first: %s", n, fs.violations[0])
	}
}
