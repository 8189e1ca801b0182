package faults

import (
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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

// TearRaftLog cuts the tail of stopped node i's newest Raft log file as a
// crash in the middle of a write does: the node must recover.
func (z *Zkbridge) TearRaftLog(i int) (string, error) {
	p, err := newestLog(filepath.Join(z.dataDir(i), "raft"))
	if err != nil {
		return "", err
	}
	return p, tearTail(p, 100, 0)
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

// TearStateLog tears the tail of stopped node i's state machine WAL (the
// local state a restart opens; dragonboat's local snapshots of an on-disk
// state machine are metadata only, so this is the "snapshot" a restart
// loads).
func (z *Zkbridge) TearStateLog(i int) (string, error) {
	p, err := newestLog(filepath.Join(z.dataDir(i), "state"))
	if err != nil {
		return "", err
	}
	return p, tearTail(p, 100, 300)
}

func (z *Zkbridge) dataDir(i int) string {
	return filepath.Join(z.dir, fmt.Sprintf("node%d", z.nodes[i].id))
}
