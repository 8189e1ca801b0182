package sm

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// txn is the write overlay of one transaction (one entry) over the Update
// batch. Reads see the overlay first, then the batch (earlier entries of the
// same Update) and the DB. Nothing reaches the batch before commit, so a
// failed multi is rolled back by reset.
//
// Invariant: an op performs all of its checks before its first write, so a
// failing single op leaves the overlay untouched.
type txn struct {
	r     pebble.Reader
	nodes map[string]*nodeSlot
	kv    map[string]*kvSlot
	hot   *hotCache // nil outside Update
	// filter spares the Pebble read of a node that surely does not exist;
	// nil outside Update.
	filter *nodeFilter
	// written holds the node records committed into the batch by earlier
	// entries of this Update (nil: deleted), so that the next entry finds
	// a parent it just changed without a Pebble read through the batch,
	// which dominated apply. Entries never alias: node returns a copy.
	written map[string]*nodeRec
	// cache holds committed node records across Updates; nil outside
	// Update.
	cache *nodeCache
}

type nodeSlot struct {
	rec   *nodeRec // nil: absent
	dirty bool
	// stored: the node exists in the reader under the overlay, so its child
	// index entry does too. Commit writes that entry only when a node
	// appears or disappears, never for a setData or a stat change.
	stored bool
}

type kvSlot struct {
	val   []byte // nil with dirty: deleted
	dirty bool
}

func newTxn(r pebble.Reader) *txn {
	return &txn{r: r, nodes: map[string]*nodeSlot{}, kv: map[string]*kvSlot{}, written: map[string]*nodeRec{}}
}

func (t *txn) reset() {
	clear(t.nodes)
	clear(t.kv)
}

// readRaw returns a copy of the stored value or nil if absent.
func readRaw(r pebble.Reader, k []byte) ([]byte, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", k, err)
	}
	out := append(make([]byte, 0, len(v)), v...)
	if err := closer.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *txn) get(k []byte) ([]byte, error) {
	if s, ok := t.kv[string(k)]; ok {
		return s.val, nil
	}
	hot := cacheable(k)
	if hot {
		if v, ok := t.hot.lookup(k); ok {
			t.kv[string(k)] = &kvSlot{val: v}
			return v, nil
		}
	}
	v, err := readRaw(t.r, k)
	if err != nil {
		return nil, err
	}
	if hot {
		t.hot.remember(k, v)
	}
	t.kv[string(k)] = &kvSlot{val: v}
	return v, nil
}

func (t *txn) set(k, v []byte) {
	if v == nil {
		v = []byte{}
	}
	t.kv[string(k)] = &kvSlot{val: v, dirty: true}
}

func (t *txn) del(k []byte) { t.kv[string(k)] = &kvSlot{dirty: true} }

// node returns the node at path p, or nil if it does not exist. Paths that
// are not valid ZooKeeper paths never exist (and never become keys).
func (t *txn) node(p string) (*nodeRec, error) {
	if s, ok := t.nodes[p]; ok {
		return s.rec, nil
	}
	if !validPath(p) {
		return nil, nil
	}
	if w, ok := t.written[p]; ok {
		var rec *nodeRec
		if w != nil {
			c := *w
			rec = &c
		}
		t.nodes[p] = &nodeSlot{rec: rec, stored: rec != nil}
		return rec, nil
	}
	if rec, ok := t.cache.lookup(p); ok {
		t.nodes[p] = &nodeSlot{rec: rec, stored: true}
		return rec, nil
	}
	k := nodeKey(p)
	if t.filter.absent(k) {
		t.nodes[p] = &nodeSlot{}
		return nil, nil
	}
	v, err := readRaw(t.r, k)
	if err != nil {
		return nil, err
	}
	var rec *nodeRec
	if v != nil {
		if rec, err = decodeNode(v); err != nil {
			return nil, fmt.Errorf("node %s: %w", p, err)
		}
	}
	t.cache.remember(p, rec) // a copy: rec is the op's to mutate
	t.nodes[p] = &nodeSlot{rec: rec, stored: rec != nil}
	return rec, nil
}

// putNode records rec (mutated in place or new) for p.
func (t *txn) putNode(p string, rec *nodeRec) { t.setSlot(p, rec) }

func (t *txn) delNode(p string) { t.setSlot(p, nil) }

func (t *txn) setSlot(p string, rec *nodeRec) {
	if s, ok := t.nodes[p]; ok {
		s.rec, s.dirty = rec, true
		return
	}
	// Not read first (initTree does that): the child index entry is written
	// (or deleted) in any case, which is harmless if it was already so.
	t.nodes[p] = &nodeSlot{rec: rec, dirty: true, stored: rec == nil}
}

// commit writes the overlay into batch b in sorted key order and resets it.
func (t *txn) commit(b *pebble.Batch) error {
	paths := make([]string, 0, len(t.nodes))
	for p, s := range t.nodes {
		if s.dirty {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		s := t.nodes[p]
		var err error
		switch {
		case s.rec == nil:
			k := nodeKey(p)
			err = b.Delete(k, nil)
			if err == nil && s.stored {
				t.filter.remove(k)
				err = b.Delete(childKey(p), nil)
			}
		default:
			k := nodeKey(p)
			err = b.Set(k, s.rec.encode(), nil)
			if err == nil && !s.stored {
				t.filter.add(k)
				err = b.Set(childKey(p), nil, nil)
			}
		}
		if err != nil {
			return fmt.Errorf("write node %s: %w", p, err)
		}
		t.written[p] = s.rec
	}
	keys := make([]string, 0, len(t.kv))
	for k, s := range t.kv {
		if s.dirty {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := t.kv[k]
		if t.hot != nil && cacheable([]byte(k)) {
			// Reads of this Update find it staged; the batch gets the
			// last value once, at the end (hotCache.write).
			t.hot.stage(k, s.val)
			continue
		}
		if err := writeKV(b, k, s.val); err != nil {
			return err
		}
	}
	t.reset()
	return nil
}

// writeKV puts k = v into batch b, or deletes k when v is nil.
func writeKV(b *pebble.Batch, k string, v []byte) error {
	var err error
	if v == nil {
		err = b.Delete([]byte(k), nil)
	} else {
		err = b.Set([]byte(k), v, nil)
	}
	if err != nil {
		return fmt.Errorf("write %q: %w", k, err)
	}
	return nil
}
