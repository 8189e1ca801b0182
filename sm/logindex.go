package sm

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// logIndex mirrors the retained change log: the zxid and value size of
// every 'l' record, oldest first. Trimming pops from it instead of opening
// an iterator over the log space on every Update (a tenth of Update's CPU
// in a set benchmark: the seek and the step over each record's value).
//
// It is derived state: built from the DB by the first Update after open or
// recovery (load), kept by that Update and the next ones (push, trim), and
// dropped whenever an Update fails (reset), so what it holds is always what
// the DB holds and trimming decides as a scan of the DB would.
//
// It keeps the log's metadata record too (meta, while loaded), which every
// Update rewrites: reading it back from the DB at the start of the next
// Update was a point read through the LSM per Update (issue 36: a tenth of
// a one-entry Update's CPU at one write in flight).
type logIndex struct {
	zxids  []int64
	sizes  []uint32
	head   int // zxids[head:] are retained
	loaded bool
	meta   logMeta // as committed by the last Update (while loaded)
}

// load reads the log space of r unless the index is current.
func (x *logIndex) load(r pebble.Reader, m *logMeta) error {
	if x.loaded {
		return nil
	}
	x.zxids, x.sizes, x.head = x.zxids[:0], x.sizes[:0], 0
	var bytes uint64
	err := scanKV(r, []byte{spaceLog}, []byte{spaceLog + 1}, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("change-log key %q is not 'l' and a zxid", k)
		}
		x.zxids = append(x.zxids, int64(binary.BigEndian.Uint64(k[1:])))
		x.sizes = append(x.sizes, uint32(len(v)))
		bytes += uint64(len(v))
		return nil
	})
	if err != nil {
		return fmt.Errorf("sm: loading the change-log index: %w", err)
	}
	if uint64(len(x.zxids)) != m.Count || bytes != m.Bytes {
		return fmt.Errorf("sm: the change log holds %d records of %d bytes, its metadata says %d of %d", len(x.zxids), bytes, m.Count, m.Bytes)
	}
	x.loaded, x.meta = true, *m
	return nil
}

// push records a new record, the newest.
func (x *logIndex) push(zxid int64, size int) {
	x.zxids = append(x.zxids, zxid)
	x.sizes = append(x.sizes, uint32(size))
}

// trim deletes the oldest records into b until both limits hold, keeping m
// in step.
func (x *logIndex) trim(b *pebble.Batch, m *logMeta, maxRecords, maxBytes uint64) error {
	for x.head < len(x.zxids) && (m.Count > maxRecords || m.Bytes > maxBytes) {
		z := x.zxids[x.head]
		if err := b.Delete(logKey(z), nil); err != nil {
			return fmt.Errorf("trim change log: %w", err)
		}
		m.Count--
		m.Bytes -= uint64(x.sizes[x.head])
		m.Trimmed = z
		x.head++
	}
	// Reuse the front once it is half of the slices.
	if x.head > 1024 && x.head*2 > len(x.zxids) {
		n := copy(x.zxids, x.zxids[x.head:])
		copy(x.sizes, x.sizes[x.head:])
		x.zxids, x.sizes, x.head = x.zxids[:n], x.sizes[:n], 0
	}
	return nil
}

// reset forgets the index; the next Update loads it again.
func (x *logIndex) reset() {
	x.zxids, x.sizes, x.head, x.loaded, x.meta = nil, nil, 0, false, logMeta{}
}
