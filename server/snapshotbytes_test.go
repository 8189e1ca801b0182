package server

import (
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/server/node/logfs"
)

// dirBytes is the size of the files under dir (their apparent size).
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile (compaction)
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The Raft log is bounded in bytes, not only in entries: with large values
// a snapshot every snapshot_entries would let it hold tens of GB. The log
// lives in files of 64 MiB (tan's, reserved at full size), removed once
// every entry in them is compacted: 250 MiB of 400 KiB sets against a
// 16 MiB snapshot_bytes must leave at most two of them (the one written and
// the one before, which may hold the entries kept behind the snapshot);
// with the byte rule off the same writes leave all 250 MiB.
func TestRaftLogIsBoundedInBytes(t *testing.T) {
	const value, writes = 400 << 10, 640
	const bound = 2*logfs.Reserve + 1<<20 // two log files, and the rest of the directory
	run := func(t *testing.T, snapshotBytes uint64) int64 {
		s := startTestServer(t, func(c *Config) {
			c.SnapshotEntries = 1 << 20 // the entry rule never fires here
			c.SnapshotBytes = snapshotBytes
			c.MaxBuffer = 1 << 20
		})
		zc, _, err := gozk.Connect([]string{s.ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer zc.Close()
		if _, err := zc.Create("/big", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, value)
		start := time.Now()
		for i := 0; i < writes; i++ {
			data[0] = byte(i)
			if _, err := zc.Set("/big", data, -1); err != nil {
				t.Fatalf("set %d: %v", i, err)
			}
		}
		t.Logf("%d sets in %v", writes, time.Since(start))
		got, _, err := zc.Get("/big")
		if err != nil || len(got) != value || got[0] != byte((writes-1)%256) {
			t.Fatalf("get after the sets: %d bytes, first %d (%v)", len(got), got[0], err)
		}
		raftDir := filepath.Join(s.cfg.DataDir, "raft")
		// Compaction runs after the snapshot is recorded: poll for it.
		var size int64
		deadline := time.Now().Add(20 * time.Second)
		for {
			size = dirBytes(t, raftDir)
			if snapshotBytes > 1<<40 || size <= bound || time.Now().After(deadline) {
				return size
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	written := int64(value * writes)
	t.Run("bounded", func(t *testing.T) {
		if size := run(t, 16<<20); size > bound {
			t.Fatalf("Raft log holds %d MiB after %d MiB written with snapshot_bytes 16 MiB: not bounded in bytes", size>>20, written>>20)
		} else {
			t.Logf("Raft log %.1f MiB after %d MiB written", float64(size)/(1<<20), written>>20)
		}
	})
	t.Run("entry rule alone", func(t *testing.T) {
		// The control: without the byte rule the log keeps every byte, so
		// the bound above is the rule's doing.
		if size := run(t, 1<<62); size < written {
			t.Fatalf("Raft log holds %d MiB after %d MiB written with no byte rule: the test cannot tell", size>>20, written>>20)
		} else {
			t.Logf("Raft log %.1f MiB after %d MiB written", float64(size)/(1<<20), written>>20)
		}
	})
}
