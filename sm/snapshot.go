package sm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

// Snapshot stream format (all of the DB's keys, in key order):
//
//	magic "ZKBSNAP1"
//	repeated: uvarint len(key) > 0, key, uvarint len(value), value
//	uvarint 0                      end of records
//	uint64 BE                      number of records
//	[32]byte                       SHA-256 of every byte above
//
// SaveSnapshot streams from a Pebble snapshot taken in PrepareSnapshot, so
// the tree is never held in memory. RecoverFromSnapshot writes into a fresh
// DB directory and only switches to it after the checksum matched, so a
// corrupt or truncated stream leaves the live tree untouched.
var snapMagic = []byte("ZKBSNAP1")

// maxSnapField bounds one key or value in a snapshot (ZooKeeper data is
// under 1 MiB; anything far larger is corruption).
const maxSnapField = 64 << 20

type snapCtx struct{ snap *pebble.Snapshot }

// PrepareSnapshot captures a point-in-time Pebble snapshot. dragonboat calls
// it while no Update runs.
func (s *StateMachine) PrepareSnapshot() (interface{}, error) {
	db := s.db
	if db == nil {
		return nil, ErrClosed
	}
	return &snapCtx{snap: db.NewSnapshot()}, nil
}

// SaveSnapshot streams the prepared snapshot to w.
func (s *StateMachine) SaveSnapshot(ctx interface{}, w io.Writer, done <-chan struct{}) error {
	sc, ok := ctx.(*snapCtx)
	if !ok {
		return fmt.Errorf("sm: save snapshot: unexpected context %T", ctx)
	}
	defer sc.snap.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20)
	if _, err := bw.Write(snapMagic); err != nil {
		return err
	}
	it, err := sc.snap.NewIter(&pebble.IterOptions{})
	if err != nil {
		return fmt.Errorf("sm: save snapshot: %w", err)
	}
	defer it.Close()
	var count uint64
	var lenBuf [binary.MaxVarintLen64]byte
	for valid := it.First(); valid; valid = it.Next() {
		if count%1024 == 0 {
			select {
			case <-done:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("sm: save snapshot: %w", err)
		}
		k := it.Key()
		for _, field := range [][]byte{k, val} {
			n := binary.PutUvarint(lenBuf[:], uint64(len(field)))
			if _, err := bw.Write(lenBuf[:n]); err != nil {
				return err
			}
			if _, err := bw.Write(field); err != nil {
				return err
			}
		}
		count++
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("sm: save snapshot: %w", err)
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint64(nil, count)); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(h.Sum(nil))
	return err
}

// hashReader hashes exactly the bytes consumed.
type hashReader struct {
	br *bufio.Reader
	h  hash.Hash
}

func (r *hashReader) ReadByte() (byte, error) {
	c, err := r.br.ReadByte()
	if err == nil {
		r.h.Write([]byte{c})
	}
	return c, err
}

func (r *hashReader) full(p []byte) error {
	if _, err := io.ReadFull(r.br, p); err != nil {
		return err
	}
	r.h.Write(p)
	return nil
}

// RecoverFromSnapshot replaces the tree with the snapshot's. It builds a new
// DB directory, verifies the checksum, makes it durable, switches CURRENT
// and only then drops the old DB. On any error the old tree stays live.
func (s *StateMachine) RecoverFromSnapshot(r io.Reader, done <-chan struct{}) error {
	gen, _ := dbGeneration(s.dbName)
	name := fmt.Sprintf("db-%d", gen+1)
	path := filepath.Join(s.cfg.Dir, name)
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	db, err := s.openDB(name)
	if err != nil {
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	if err := loadSnapshot(db, r, done); err != nil {
		db.Close()
		os.RemoveAll(path)
		if errors.Is(err, sm.ErrSnapshotStopped) {
			return err
		}
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	if err := durable(db); err != nil {
		db.Close()
		os.RemoveAll(path)
		return fmt.Errorf("sm: recover snapshot: sync: %w", err)
	}
	applied, base, last, err := readMeta(db)
	if err != nil {
		db.Close()
		os.RemoveAll(path)
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	stats, err := readTreeStats(db)
	if err != nil {
		db.Close()
		os.RemoveAll(path)
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	if err := s.filter.rebuild(db); err != nil {
		db.Close()
		os.RemoveAll(path)
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}

	s.mu.Lock()
	old, oldName := s.db, s.dbName
	if err := writeCurrent(s.cfg.Dir, name); err != nil {
		s.mu.Unlock()
		db.Close()
		os.RemoveAll(path)
		return fmt.Errorf("sm: recover snapshot: %w", err)
	}
	s.db, s.dbName = db, name
	// With the database, under the lock: a LockedView answers LastZxid
	// from here, and must not pair the new database with the old zxid.
	s.applied.Store(applied)
	s.lastZxid.Store(last)
	s.dropCaches() // a locked view reads the node cache
	s.mu.Unlock()
	s.zxidBase = base
	s.statsMu.Lock()
	s.stats = stats
	s.statsMu.Unlock()
	if old != nil {
		if err := old.Close(); err != nil {
			return fmt.Errorf("sm: recover snapshot: close old db: %w", err)
		}
	}
	if oldName != "" && oldName != name {
		if err := os.RemoveAll(filepath.Join(s.cfg.Dir, oldName)); err != nil {
			return fmt.Errorf("sm: recover snapshot: remove old db: %w", err)
		}
	}
	return nil
}

func loadSnapshot(db *pebble.DB, r io.Reader, done <-chan struct{}) error {
	hr := &hashReader{br: bufio.NewReaderSize(r, 1<<20), h: sha256.New()}
	magic := make([]byte, len(snapMagic))
	if err := hr.full(magic); err != nil {
		return fmt.Errorf("reading header: %w", noEOF(err))
	}
	if !bytes.Equal(magic, snapMagic) {
		return fmt.Errorf("not a zkbridge snapshot (bad magic %q)", magic)
	}
	b := db.NewBatch()
	defer func() { b.Close() }()
	var count uint64
	var prev []byte
	readField := func(what string, allowEmpty bool) ([]byte, error) {
		n, err := binary.ReadUvarint(hr)
		if err != nil {
			return nil, fmt.Errorf("record %d: reading %s length: %w", count, what, noEOF(err))
		}
		if n == 0 && !allowEmpty {
			return nil, nil
		}
		if n > maxSnapField {
			return nil, fmt.Errorf("record %d: %s length %d exceeds limit", count, what, n)
		}
		p := make([]byte, n)
		if err := hr.full(p); err != nil {
			return nil, fmt.Errorf("record %d: reading %s: %w", count, what, noEOF(err))
		}
		return p, nil
	}
	for {
		if count%1024 == 0 {
			select {
			case <-done:
				return sm.ErrSnapshotStopped
			default:
			}
		}
		k, err := readField("key", false)
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("record %d: keys out of order (corrupt snapshot)", count)
		}
		v, err := readField("value", true)
		if err != nil {
			return err
		}
		if err := b.Set(k, v, nil); err != nil {
			return err
		}
		prev = k
		count++
		if b.Len() >= 4<<20 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = db.NewBatch()
		}
	}
	var tail [8]byte
	if err := hr.full(tail[:]); err != nil {
		return fmt.Errorf("reading record count: %w", noEOF(err))
	}
	if got := binary.BigEndian.Uint64(tail[:]); got != count {
		return fmt.Errorf("record count mismatch: trailer says %d, read %d", got, count)
	}
	want := hr.h.Sum(nil)
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(hr.br, sum); err != nil {
		return fmt.Errorf("reading checksum: %w", noEOF(err))
	}
	if !bytes.Equal(sum, want) {
		return fmt.Errorf("checksum mismatch (corrupt snapshot)")
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	for _, k := range [][]byte{keySpecialVer, keyApplied} {
		v, err := readRaw(db, k)
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("snapshot lacks %q: not a state machine image", k)
		}
	}
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated snapshot: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// ContentHash returns a SHA-256 over every key and value of the DB, in key
// order. Replicas that applied the same entries have equal hashes.
func (s *StateMachine) ContentHash() ([32]byte, error) {
	v, err := s.View()
	if err != nil {
		return [32]byte{}, err
	}
	defer v.Close()
	h := sha256.New()
	var lenBuf [binary.MaxVarintLen64]byte
	err = scanKV(v.snap, nil, nil, func(k, val []byte) error {
		for _, f := range [][]byte{k, val} {
			n := binary.PutUvarint(lenBuf[:], uint64(len(f)))
			h.Write(lenBuf[:n])
			h.Write(f)
		}
		return nil
	})
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, err
}

// GetHash implements dragonboat's optional IHash.
func (s *StateMachine) GetHash() (uint64, error) {
	h, err := s.ContentHash()
	return binary.BigEndian.Uint64(h[:8]), err
}
