package sm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// nodeFilter knows, without a Pebble read, that no node record exists
// under a key. Every create looks its new path up first, and that lookup
// misses: Pebble then searches every memtable and level (about a quarter of
// the apply CPU in a create benchmark). The filter holds a 32-bit hash per
// node key, as a multiset in an open-addressing table (4 bytes a slot, 5 to
// 11 bytes a node); a hash not held means surely absent, a held one falls
// through to Pebble, so a collision only costs the read it would have cost
// anyway and the filter never changes what Apply computes.
//
// It never undercounts: a key is counted as soon as an entry writes it,
// and uncounted only once the batch that deletes it has committed. It is
// touched only by the apply path and by Open/RecoverFromSnapshot, which
// rebuild it from the database.
type nodeFilter struct {
	slots []uint32 // 0: empty, else a key's hash (never 0); len a power of 2
	n     int
	// removed holds the hashes of node keys this Update deleted.
	removed []uint32
}

func newNodeFilter() *nodeFilter { return &nodeFilter{slots: make([]uint32, 1024)} }

// keyHash is FNV-1a folded to 32 bits, never 0: fixed, so every replica
// holds the same table (not that it matters to the results).
func keyHash(k []byte) uint32 {
	h := uint64(14695981039346656037)
	for _, c := range k {
		h ^= uint64(c)
		h *= 1099511628211
	}
	if f := uint32(h>>32) ^ uint32(h); f != 0 {
		return f
	}
	return 1
}

// home is h's first slot.
func (f *nodeFilter) home(h uint32) int {
	return int((h * 0x9E3779B1) & uint32(len(f.slots)-1))
}

func (f *nodeFilter) has(h uint32) bool {
	mask := len(f.slots) - 1
	for i := f.home(h); f.slots[i] != 0; i = (i + 1) & mask {
		if f.slots[i] == h {
			return true
		}
	}
	return false
}

func (f *nodeFilter) insert(h uint32) {
	if (f.n+1)*4 > len(f.slots)*3 {
		old := f.slots
		f.slots, f.n = make([]uint32, 2*len(old)), 0
		for _, x := range old {
			if x != 0 {
				f.insert(x)
			}
		}
	}
	mask := len(f.slots) - 1
	i := f.home(h)
	for f.slots[i] != 0 {
		i = (i + 1) & mask
	}
	f.slots[i] = h
	f.n++
}

// drop removes one copy of h, shifting later slots of its run back so that
// every remaining hash stays reachable from its home slot.
func (f *nodeFilter) drop(h uint32) {
	mask := len(f.slots) - 1
	i := f.home(h)
	for f.slots[i] != h {
		if f.slots[i] == 0 {
			return // not held: nothing to drop
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; f.slots[j] != 0; j = (j + 1) & mask {
		k := f.home(f.slots[j])
		// The entry at j may move to the hole at i unless its home lies
		// cyclically in (i, j].
		if (i < j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			f.slots[i] = f.slots[j]
			i = j
		}
	}
	f.slots[i] = 0
	f.n--
}

// absent reports whether no node record exists under k (committed, or
// written by an entry of this Update).
func (f *nodeFilter) absent(k []byte) bool { return f != nil && !f.has(keyHash(k)) }

// add counts k, written by an entry.
func (f *nodeFilter) add(k []byte) {
	if f != nil {
		f.insert(keyHash(k))
	}
}

// remove uncounts k once this Update's batch has committed (publish).
func (f *nodeFilter) remove(k []byte) {
	if f != nil {
		f.removed = append(f.removed, keyHash(k))
	}
}

// publish applies the removals of a committed batch.
func (f *nodeFilter) publish() {
	for _, h := range f.removed {
		f.drop(h)
	}
	f.removed = f.removed[:0]
}

// discard forgets the removals of a batch that did not commit (its adds
// stay: an overcount is harmless).
func (f *nodeFilter) discard() { f.removed = f.removed[:0] }

// rebuild counts every node key of r.
func (f *nodeFilter) rebuild(r pebble.Reader) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceNode}, UpperBound: []byte{spaceNode + 1}})
	if err != nil {
		return fmt.Errorf("sm: node filter: %w", err)
	}
	fresh := newNodeFilter()
	for ok := it.First(); ok; ok = it.Next() {
		fresh.insert(keyHash(it.Key()))
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("sm: node filter: %w", err)
	}
	f.slots, f.n, f.removed = fresh.slots, fresh.n, f.removed[:0]
	return nil
}
