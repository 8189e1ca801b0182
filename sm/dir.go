package sm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/zkbridge/zkbridge/diskfull"
)

// Directory layout of a replica:
//
//	Dir/CURRENT      name of the live DB directory ("db-<generation>")
//	Dir/db-<n>/      the live Pebble DB
//
// RecoverFromSnapshot builds db-<n+1> beside the live one and then switches
// CURRENT atomically (write, fsync, rename, fsync dir). Any other db-* or
// tmp entry found at Open is a leftover of an interrupted recovery and is
// removed.

const currentFile = "CURRENT"

func prepareDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("sm: Config.Dir is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("sm: create %s: %w", dir, err)
	}
	name := "db-1"
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	switch {
	case err == nil:
		name = strings.TrimSpace(string(b))
		if _, ok := dbGeneration(name); !ok {
			return "", fmt.Errorf("sm: %s names %q, not a db directory", currentFile, name)
		}
	case os.IsNotExist(err):
		if err := writeCurrent(dir, name); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("sm: read %s: %w", currentFile, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("sm: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == currentFile || e.Name() == name {
			continue
		}
		if _, ok := dbGeneration(e.Name()); ok || strings.HasSuffix(e.Name(), ".tmp") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return "", fmt.Errorf("sm: remove leftover %s: %w", e.Name(), err)
			}
		}
	}
	return name, nil
}

func dbGeneration(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, "db-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil && n > 0
}

func writeCurrent(dir, name string) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("sm: write %s: %w", currentFile, err)
	}
	if _, err := f.WriteString(name + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("sm: write %s: %w", currentFile, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sm: sync %s: %w", currentFile, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sm: close %s: %w", currentFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, currentFile)); err != nil {
		return fmt.Errorf("sm: rename %s: %w", currentFile, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sm: open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sm: sync dir %s: %w", dir, err)
	}
	return nil
}

func (s *StateMachine) openDB(name string) (*pebble.DB, error) {
	const memTableSize, memTables = 32 << 20, 4
	opts := &pebble.Options{
		// Pebble reserves each memtable's arena in the block cache, so the
		// cache gets room for all of them on top of 64 MiB of blocks. With
		// 64 MiB in all, two memtables left no block cached at all: every
		// read decompressed its index and data blocks from the file.
		CacheSize:                   64<<20 + memTableSize*memTables,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTables,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       12,
		Logger:                      quietLogger{},
	}
	// Bloom filters make the many negative point reads of apply (does this
	// node exist?) cheap; later levels inherit L0's policy.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	if s.cfg.Pebble != nil {
		s.cfg.Pebble(opts)
	}
	// The Raft log is the state's write-ahead log: an Update is applied
	// from a committed entry, and after a crash dragonboat replays the
	// entries after the index the state opens with (kept in the same
	// batches). Pebble's own WAL wrote every value a second time on every
	// node (1 MB sets: a quarter of the disk writes, a tenth of the CPU),
	// so it is off, and Sync flushes the memtables instead (durable).
	opts.DisableWAL = true
	// Values of 4 KiB and more go to blob files when flushed, and
	// compactions move references to them instead of rewriting them: with
	// 100 KB values compaction was a third of a node's CPU. Blob files
	// whose values are half dead are rewritten after 5 minutes.
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 4 << 10, MaxBlobReferenceDepth: 10,
			RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.5}
	}
	// Pinned so that replicas and snapshot recovery stay compatible.
	opts.FormatMajorVersion = pebble.FormatValueSeparation
	// A full disk stalls Pebble's writes until space returns instead of
	// failing them: Pebble panics when its WAL cannot be written.
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	opts.FS = diskfull.PebbleFS(opts.FS)
	path := filepath.Join(s.cfg.Dir, name)
	db, err := pebble.Open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("sm: open pebble %s: %w", path, err)
	}
	return db, nil
}

// quietLogger drops Pebble's informational messages; errors still surface.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

// durable makes every batch committed to db durable. Without a WAL that
// is a flush of the memtables to sstables (Flush waits for it and for the
// MANIFEST's fsync).
func durable(db *pebble.DB) error {
	return db.Flush()
}

// commitDurable commits b and makes it durable.
func commitDurable(db *pebble.DB, b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	return durable(db)
}
