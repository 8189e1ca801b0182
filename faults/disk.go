package faults

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/node/logfs"
)

// Disk faults of a stopped zkbridge node: what a crash in the middle of a
// write, or a disk that returns garbage, leaves behind.

var logFile = regexp.MustCompile(`^[0-9]+\.log$`)

// newestLog returns the newest (highest numbered, then latest) ".log" file
// under dir.
func newestLog(dir string) (string, error) {
	var logs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && logFile.MatchString(d.Name()) {
			logs = append(logs, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(logs) == 0 {
		return "", fmt.Errorf("no log file under %s", dir)
	}
	sort.Slice(logs, func(i, j int) bool {
		a, _ := os.Stat(logs[i])
		b, _ := os.Stat(logs[j])
		return a.ModTime().Before(b.ModTime()) || (a.ModTime().Equal(b.ModTime()) && logs[i] < logs[j])
	})
	return logs[len(logs)-1], nil
}

// tearTail cuts the last cut bytes of path (as a write torn by a crash)
// and appends garbage random bytes (a sector written with junk).
func tearTail(path string, cut, garbage int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	size := st.Size()
	// A log reserved at its full size is zeros past its data: tear where
	// the data ends, not at the reserved end.
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	end := int64(len(data))
	for end > 0 && data[end-1] == 0 {
		end--
	}
	if end < size {
		size = end
	}
	newSize := max(0, size-cut)
	if err := os.Truncate(path, newSize); err != nil {
		return err
	}
	junk := make([]byte, garbage)
	_, _ = rand.Read(junk)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(junk)
	return err
}

// CrashMidWrite kills running node i while a Raft log write of it has not
// been synced, and tears that write as a power cut would: the record's
// second half reads as zeros (the log's reserved space). The node had not
// acknowledged the record (tan syncs before anything is acknowledged), so
// it must start and catch up. Cutting bytes of a synced record instead
// (what this nemesis did at first) is a disk losing acknowledged data: the
// leader then commits past the node's log and the node must refuse.
//
// Every sync of the node is held back (the slow-disk hook) until its log
// has stopped growing for 200 ms under the running workloads: the step
// worker is then waiting on the sync of the last record written.
func (z *Zkbridge) CrashMidWrite(i int) (string, error) {
	if err := z.SlowDisk(i, time.Hour); err != nil {
		return "", err
	}
	dir := filepath.Join(z.dataDir(i), "raft")
	var p string
	var last int64 = -1
	stableSince := time.Now()
	for deadline := time.Now().Add(5 * time.Second); ; {
		var end int64
		var err error
		if p, err = newestLog(dir); err == nil {
			_, end, err = logfs.LastRecord(p)
		}
		if err != nil {
			return "", err
		}
		if end != last {
			last, stableSince = end, time.Now()
		} else if time.Since(stableSince) >= 200*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("node %d's Raft log kept growing with its syncs held back", z.nodes[i].id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	killErr := z.Kill(i)
	if err := z.SlowDisk(i, 0); err != nil {
		return "", err
	}
	if killErr != nil {
		return "", killErr
	}
	p, err := newestLog(dir)
	if err != nil {
		return "", err
	}
	start, end, err := logfs.LastRecord(p)
	if err != nil || end == 0 {
		return "", fmt.Errorf("last record of %s: %v", p, err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	mid := start + (end-start)/2
	_, err = f.WriteAt(make([]byte, end-mid), mid)
	return p, err
}

// GarbleRaftLog cuts the tail of stopped node i's newest Raft log file and
// appends random bytes (a sector written with junk). It returns the path
// and the file's bytes before, to put back.
func (z *Zkbridge) GarbleRaftLog(i int) (string, []byte, error) {
	p, err := newestLog(filepath.Join(z.dataDir(i), "raft"))
	if err != nil {
		return "", nil, err
	}
	before, err := os.ReadFile(p)
	if err != nil {
		return "", nil, err
	}
	return p, before, tearTail(p, 100, 300)
}

// UnfinishedStateFlush leaves beside stopped node i's state machine what a
// crash in the middle of a memtable flush leaves: the next sstable, half
// written (random bytes). The state keeps no WAL (the Raft log is its log;
// sm's openDB) and Pebble records a table in its MANIFEST only once it is
// written and synced, so the restart must drop the orphan, open at the
// last completed flush and replay the rest from the Raft log.
func (z *Zkbridge) UnfinishedStateFlush(i int) (string, error) {
	db, err := liveStateDB(filepath.Join(z.dataDir(i), "state"))
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(db)
	if err != nil {
		return "", err
	}
	// Pebble numbers its tables, blob files, logs and MANIFESTs from one
	// counter: the unfinished table takes the next number.
	var last int
	for _, e := range entries {
		name := strings.TrimPrefix(e.Name(), "MANIFEST-")
		if n, err := strconv.Atoi(strings.SplitN(name, ".", 2)[0]); err == nil {
			last = max(last, n)
		}
	}
	p := filepath.Join(db, fmt.Sprintf("%06d.sst", last+1))
	junk := make([]byte, 2048+mrand.IntN(8192))
	for k := range junk {
		junk[k] = byte(mrand.IntN(256))
	}
	return p, os.WriteFile(p, junk, 0o640)
}

// liveStateDB returns the Pebble directory a state machine directory's
// CURRENT pointer names (sm's layout).
func liveStateDB(state string) (string, error) {
	current, err := os.ReadFile(filepath.Join(state, "CURRENT"))
	if err != nil {
		return "", err
	}
	return filepath.Join(state, strings.TrimSpace(string(current))), nil
}

func (z *Zkbridge) dataDir(i int) string {
	return filepath.Join(z.dir, fmt.Sprintf("node%d", z.nodes[i].id))
}

// DamageState damages the state a restart of stopped node i opens: one of
// its state machine's files (Pebble's CURRENT pointer or its MANIFEST; the
// state keeps no WAL) or its newest Raft snapshot file, chosen at
// random, 64 bytes in the middle (the whole file when shorter) flipped.
// It returns what it damaged and a function that puts the node's state and
// snapshots back as they were.
func (z *Zkbridge) DamageState(i int) (string, func() error, error) {
	data := z.dataDir(i)
	state := filepath.Join(data, "state")
	backup := filepath.Join(z.dir, fmt.Sprintf("node%d.state-backup", z.nodes[i].id))
	_ = os.RemoveAll(backup)
	if err := copyTree(state, filepath.Join(backup, "state")); err != nil {
		return "", nil, err
	}
	var targets []string
	if db, err := liveStateDB(state); err == nil {
		targets = append(targets, filepath.Join(state, "CURRENT"))
		if m, _ := filepath.Glob(filepath.Join(db, "MANIFEST-*")); len(m) > 0 {
			targets = append(targets, m[len(m)-1])
		}
	}
	var snaps []string
	_ = filepath.WalkDir(filepath.Join(data, "raft"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gbsnap") {
			snaps = append(snaps, p)
		}
		return nil
	})
	sort.Strings(snaps) // snapshot-<hex index>: the newest sorts last
	if len(snaps) > 0 {
		targets = append(targets, snaps[len(snaps)-1])
	}
	if len(targets) == 0 {
		return "", nil, fmt.Errorf("node %d: no state or snapshot file under %s", z.nodes[i].id, data)
	}
	target := targets[mrand.IntN(len(targets))]
	snapBefore := map[string][]byte{}
	for _, p := range snaps {
		if b, err := os.ReadFile(p); err == nil {
			snapBefore[p] = b
		}
	}
	b, err := os.ReadFile(target)
	if err != nil {
		return "", nil, err
	}
	from := max(0, len(b)/2-32)
	for k := from; k < min(len(b), from+64); k++ {
		b[k] ^= 0x5a
	}
	if err := os.WriteFile(target, b, 0o640); err != nil {
		return "", nil, err
	}
	restore := func() error {
		if err := os.RemoveAll(state); err != nil {
			return err
		}
		if err := copyTree(filepath.Join(backup, "state"), state); err != nil {
			return err
		}
		for p, b := range snapBefore {
			if err := os.WriteFile(p, b, 0o640); err != nil {
				return err
			}
		}
		return os.RemoveAll(backup)
	}
	rel, _ := filepath.Rel(data, target)
	return rel, restore, nil
}

// copyTree copies directory src to dst (regular files and directories).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o750)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o640)
	})
}
