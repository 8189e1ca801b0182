package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node/logfs"
)

// openTanRecovering opens tan as startRaft does (trim, tail check, open)
// and reads back the state and every entry; a panic is an error.
func openTanRecovering(t *testing.T, dir string) (entries uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if _, err := logfs.TrimReserved(dir); err != nil {
		return 0, err
	}
	if err := logfs.CheckTails(dir); err != nil {
		return 0, err
	}
	var db raftio.ILogDB = openTanOn(t, dir, logfs.New(vfs.Default))
	defer db.Close()
	rs, err := db.ReadRaftState(1, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("read state: %w", err)
	}
	ents, _, err := db.IterateEntries(nil, 0, 1, 1, 1, rs.EntryCount+1, 1<<30)
	if err != nil {
		return 0, fmt.Errorf("read entries: %w", err)
	}
	for i, e := range ents {
		if e.Index != uint64(i+1) {
			return 0, fmt.Errorf("entry %d has index %d", i+1, e.Index)
		}
	}
	if rs.State.Commit > uint64(len(ents)) {
		return 0, fmt.Errorf("commit %d past the last entry %d", rs.State.Commit, len(ents))
	}
	return uint64(len(ents)), nil
}

// crashImage writes n synced updates of varied size through logfs and
// returns a copy of the directory as a crash leaves it (the live log at
// its reserved size), the log's path in it and the log's bytes.
func crashImage(t *testing.T, n uint64) (string, string, []byte) {
	t.Helper()
	dir := t.TempDir()
	db := openTanOn(t, dir, logfs.New(vfs.Default))
	for i := uint64(1); i <= n; i++ {
		e := entry(i, 1)
		e.Cmd = []byte(strings.Repeat("x", 100+int(i%7)*300))
		u := raftpb.Update{ShardID: 1, ReplicaID: 1, EntriesToSave: []raftpb.Entry{e},
			State: raftpb.State{Term: 1, Vote: 1, Commit: i}}
		if err := db.SaveRaftState([]raftpb.Update{u}, 1); err != nil {
			t.Fatal(err)
		}
	}
	crashed := t.TempDir()
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for p, size := range tanLogs(t, crashed) {
		if size == logfs.Reserve {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return crashed, p, b
		}
	}
	t.Skip("this file system cannot reserve the log (no fallocate)")
	return "", "", nil
}

// recordEnds returns the offset just past each record of a tan log (its
// full or last chunk); chunks are a 7-byte header (checksum, length, type)
// and payload in 32 KiB blocks.
func recordEnds(b []byte) []int {
	var ends []int
	for base := 0; base < len(b); base += 32 << 10 {
		blk := b[base:min(len(b), base+32<<10)]
		for i := 0; i+7 <= len(blk); {
			length := int(blk[i+4]) | int(blk[i+5])<<8
			kind := blk[i+6]
			if kind == 0 {
				return ends
			}
			i += 7 + length
			if kind == 1 || kind == 4 {
				ends = append(ends, base+i)
			}
		}
	}
	return ends
}

func dataEnd(b []byte) int {
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return end
}

// A crash during the last write leaves that write's record torn: on a
// reserved log, written up to some byte and zeros after it (the reserved
// space); on a log that was not reserved, the file ends there. Whatever
// the byte, the node must open with every record before the torn one (only
// the torn one was not synced, so not acknowledged). Before the fix a
// reserved log torn inside a chunk failed tan's checksum ("tan: crc
// mismatch") and the node could not start.
func TestTornRaftLogTailRecoversAtEveryCut(t *testing.T) {
	const n = 100
	crashed, logPath, data := crashImage(t, n)
	rel, err := filepath.Rel(crashed, logPath)
	if err != nil {
		t.Fatal(err)
	}
	ends := recordEnds(data)
	if len(ends) != n || dataEnd(data) > ends[n-1] {
		t.Fatalf("found %d records, the last ending at %d, data to %d, want %d", len(ends), ends[len(ends)-1], dataEnd(data), n)
	}
	end := ends[n-1]
	for _, mode := range []string{"zeros", "truncated"} {
		// Cut anywhere in the last three records.
		for cut := end; cut > ends[n-4]; cut -= 29 {
			img := t.TempDir()
			if err := os.CopyFS(img, os.DirFS(crashed)); err != nil {
				t.Fatal(err)
			}
			b := append([]byte(nil), data...)
			if mode == "zeros" {
				clear(b[cut:])
			} else {
				b = b[:cut]
			}
			if err := os.WriteFile(filepath.Join(img, rel), b, 0o640); err != nil {
				t.Fatal(err)
			}
			got, err := openTanRecovering(t, img)
			if err != nil {
				t.Fatalf("%s at byte %d of %d: %v", mode, cut, end, err)
			}
			// Every record that ends before the cut, and nothing else.
			want := uint64(0)
			for _, e := range ends {
				if e <= cut {
					want++
				}
			}
			if got != want {
				t.Fatalf("%s at byte %d of %d: %d entries, want %d", mode, cut, end, got, want)
			}
			_ = os.RemoveAll(img)
		}
	}
}

// Junk at the tail (a complete chunk that fails its checksum, then random
// bytes) may be an acknowledged entry the disk garbled: neither the trim
// nor tan's recovery may drop it, and the node refuses to start with a
// one-line error naming the file and how to rebuild the member, instead of
// tan's panic.
func TestJunkAtRaftLogTailIsRefusedWithAClearError(t *testing.T) {
	crashed, logPath, data := crashImage(t, 20)
	end := dataEnd(data)
	b := append([]byte(nil), data...)
	for i := end - 100; i < end+200; i++ {
		b[i] = byte(i*7 + 3) // the last record's tail and 200 bytes after it
	}
	if err := os.WriteFile(logPath, b, 0o640); err != nil {
		t.Fatal(err)
	}
	if trimmed, err := logfs.TrimReserved(crashed); err != nil || len(trimmed) != 0 {
		t.Fatalf("trim: %v (%v), want the junk left in place", trimmed, err)
	}
	err := logfs.CheckTails(crashed)
	var corrupt *logfs.CorruptTailError
	if !errors.As(err, &corrupt) || corrupt.File != logPath {
		t.Fatalf("check: %v, want a corrupt tail in %s", err, logPath)
	}
	msg := corruptLogError(&config.Config{DataDir: "/var/lib/zkbridge", ReplicaID: 3, PeerAddr: "10.0.0.3:2888"}, corrupt).Error()
	for _, want := range []string{logPath, "refuses to start", "zkbridge raft remove-voter --admin HEALTHY_ADMIN 3",
		"mv /var/lib/zkbridge /var/lib/zkbridge.corrupt", "zkbridge raft add-voter --admin HEALTHY_ADMIN NEW_ID 10.0.0.3:2888", "--join"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message is not one line: %s", msg)
	}
}

// A follower whose log lost entries it had synced and acknowledged (the
// fault suite's old torn-raft-log cut synced records) is told by the
// leader to commit past its last entry; dragonboat panics there. The node
// says what happened and how to rebuild it, and exits non-zero without a
// stack trace.
func TestLostAcknowledgedEntriesStopTheNodeWithAClearError(t *testing.T) {
	var code int
	exited := false
	exitProcess = func(c int) { code, exited = c, true }
	defer func() { exitProcess = os.Exit }()
	steps := rebuildSteps(&config.Config{DataDir: "/var/lib/zkbridge", ReplicaID: 2, PeerAddr: "10.0.0.2:2888"})
	rebuildHint.Store(&steps)
	defer rebuildHint.Store(nil)

	var logged strings.Builder
	l := &raftLogger{log: zerolog.New(&logged)}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panicked: %v", r)
			}
		}()
		l.Panicf("invalid commitTo index %d, lastIndex() %d", 29066, 29062)
	}()
	if !exited || code != 1 {
		t.Fatalf("exited=%v code %d, want exit 1", exited, code)
	}
	for _, want := range []string{"29066", "lost synced entries", "refuses to serve", "zkbridge raft remove-voter --admin HEALTHY_ADMIN 2"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q: %s", want, logged.String())
		}
	}
	// Any other dragonboat panic stays a panic.
	defer func() {
		if recover() == nil {
			t.Fatal("another Panicf did not panic")
		}
	}()
	l.Panicf("gap in indexes")
}
