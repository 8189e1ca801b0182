package sm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// txn is the write overlay of one transaction (one entry) over the Update
// batch. Reads see the overlay first, then the writes of earlier entries of
// the same Update (pending, then the batch) and the DB. commit moves an
// entry's writes to pending, so a failed multi is rolled back by reset.
//
// Pending writes reach the batch in flush, once per key with its last value
// and in key order: an Update that sets the same node twice writes it once,
// and Pebble inserts a batch into its memtable in batch order, keeping the
// place of the last insert, so sorted keys (the change-log records above all,
// which are consecutive) find their place in a few steps. Interleaved
// node and log keys had made the memtable inserts a sixth of a node's CPU.
//
// Invariant: an op performs all of its checks before its first write, so a
// failing single op leaves the overlay untouched. Anything that scans the
// batch (not a point read through txn) flushes first.
type txn struct {
	b     *pebble.Batch
	r     pebble.Reader // b
	nodes map[string]*nodeSlot
	kv    map[string]*kvSlot
	// dirty lists the slots of nodes this entry wrote, in the order of
	// their first write: commit walks it instead of the whole overlay.
	dirty []dirtySlot
	// pendingNodes names the nodes committed by earlier entries and not yet
	// flushed (their records are in written); pendingOrder lists them in
	// the order they were first written, each with whether it was stored
	// under them (in the batch or the DB): that decides whether the flush
	// writes its child index entry. In that order most keys already come
	// sorted (an import's children, a burst of creates under one parent),
	// which the flush's sort exploits.
	pendingNodes map[string]struct{}
	pendingOrder []pendingNode
	// pendingKV holds the other committed writes not yet flushed; nil:
	// delete.
	pendingKV map[string][]byte
	hot       *hotCache // nil outside Update
	// filter spares the Pebble read of a node that surely does not exist;
	// nil outside Update.
	filter *nodeFilter
	// written holds the node records committed by earlier entries of this
	// Update (nil: deleted), pending or flushed, so that the next entry
	// finds a parent it just changed without a Pebble read through the
	// batch, which dominated apply. Entries never alias: node returns a
	// copy.
	written map[string]*nodeRec
	// cache holds committed node records across Updates; nil outside
	// Update.
	cache *nodeCache
	// acls holds decoded ACL lists by id across Updates (aclGet).
	acls map[uint64]decodedACL
	// slots holds the nodeSlots of the current entry, allocated in chunks
	// (a multi of 1,000 setData read 1,000 nodes: one allocation each had
	// been a fifth of apply's allocations); reset reuses the last chunk.
	slots []nodeSlot
	// flush's buffers, kept for the next flush.
	writes  []pendingWrite
	order   []int32
	nodeWs  []nodeWrite
	runs    sortRuns
	scratch []byte
}

type dirtySlot struct {
	path string
	slot *nodeSlot
}

type pendingNode struct {
	path   string
	stored bool
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

func newTxn(b *pebble.Batch) *txn {
	return &txn{
		b: b, r: b,
		nodes: map[string]*nodeSlot{}, kv: map[string]*kvSlot{},
		pendingNodes: map[string]struct{}{}, pendingKV: map[string][]byte{},
		written: map[string]*nodeRec{},
		acls:    map[uint64]decodedACL{},
	}
}

// rebind readies t for the next Update, over batch b: empty, its maps
// and buffers kept (growing them was a tenth of the leader's allocations).
// The records of written stay valid for whoever kept them: nothing
// mutates a committed record.
func (t *txn) rebind(b *pebble.Batch) {
	t.b, t.r = b, b
	t.reset()
	clear(t.pendingNodes)
	clear(t.pendingOrder)
	t.pendingOrder = t.pendingOrder[:0]
	clear(t.pendingKV)
	clear(t.written)
	t.hot, t.filter, t.cache = nil, nil, nil
}

func (t *txn) reset() {
	clear(t.nodes)
	clear(t.kv)
	clear(t.dirty) // drop the references
	t.dirty = t.dirty[:0]
	// Nothing points into the slots any more (nodes and dirty were their
	// only holders), so the current chunk serves the next entry.
	clear(t.slots)
	t.slots = t.slots[:0]
}

// slot returns a new slot holding s for the current entry. A full chunk is
// left to the slots already handed out and a larger one started, so no
// slot ever moves.
func (t *txn) slot(s nodeSlot) *nodeSlot {
	if len(t.slots) == cap(t.slots) {
		t.slots = make([]nodeSlot, 0, min(max(16, 2*cap(t.slots)), 1024))
	}
	t.slots = append(t.slots, s)
	return &t.slots[len(t.slots)-1]
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
	if v, ok := t.pendingKV[string(k)]; ok {
		t.kv[string(k)] = &kvSlot{val: v}
		return v, nil
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
	if s, ok := t.nodes[p]; ok && (s.rec == nil || s.rec.omittedLen == 0) {
		return s.rec, nil
	}
	// Not read yet, or read without its data (nodeMeta) and not written
	// since: read it whole.
	if !validPath(p) {
		return nil, nil
	}
	if w, ok := t.written[p]; ok {
		var rec *nodeRec
		if w != nil {
			c := *w
			rec = &c
		}
		t.nodes[p] = t.slot(nodeSlot{rec: rec, stored: rec != nil})
		return rec, nil
	}
	if rec, ok := t.cache.lookup(p); ok {
		t.nodes[p] = t.slot(nodeSlot{rec: rec, stored: true})
		return rec, nil
	}
	k := nodeKey(p)
	if t.filter.absent(k) {
		t.nodes[p] = t.slot(nodeSlot{})
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
	t.nodes[p] = t.slot(nodeSlot{rec: rec, stored: rec != nil})
	return rec, nil
}

// nodeMeta is node for an op that replaces the node's data (setData): the
// record may come without its data (omittedLen, from the node cache), so
// a large value is not read from Pebble only to be dropped.
func (t *txn) nodeMeta(p string) (*nodeRec, error) {
	if _, ok := t.nodes[p]; !ok && validPath(p) {
		if _, written := t.written[p]; !written {
			if rec, ok := t.cache.lookupMeta(p); ok { // with its data or without
				t.nodes[p] = t.slot(nodeSlot{rec: rec, stored: true})
				return rec, nil
			}
		}
	}
	return t.node(p)
}

// surelyAbsent reports that no node exists at p as far as the node filter
// knows, without node's lookups of this Update's writes and the cache
// (which hold no node the filter does not count): for paths that are
// expected to be new, a migration import's. False says nothing; ask node.
func (t *txn) surelyAbsent(p string) bool {
	if _, ok := t.nodes[p]; ok {
		return false
	}
	return validPath(p) && t.filter.absent(nodeKey(p))
}

// putNode records rec (mutated in place or new) for p.
func (t *txn) putNode(p string, rec *nodeRec) { t.setSlot(p, rec) }

func (t *txn) delNode(p string) { t.setSlot(p, nil) }

func (t *txn) setSlot(p string, rec *nodeRec) {
	if s, ok := t.nodes[p]; ok {
		if !s.dirty {
			t.dirty = append(t.dirty, dirtySlot{p, s})
		}
		s.rec, s.dirty = rec, true
		return
	}
	// Not read first (initTree does that): the child index entry is written
	// (or deleted) in any case, which is harmless if it was already so.
	s := t.slot(nodeSlot{rec: rec, dirty: true, stored: rec == nil})
	t.nodes[p] = s
	t.dirty = append(t.dirty, dirtySlot{p, s})
}

// commit moves the entry's writes to pending and resets the overlay.
func (t *txn) commit() {
	for _, d := range t.dirty {
		p, s := d.path, d.slot
		switch {
		case s.rec == nil && s.stored:
			t.filter.remove(nodeKey(p))
		case s.rec != nil && !s.stored:
			t.filter.add(nodeKey(p))
		}
		if _, ok := t.pendingNodes[p]; !ok {
			t.pendingNodes[p] = struct{}{}
			t.pendingOrder = append(t.pendingOrder, pendingNode{p, s.stored})
		}
		t.written[p] = s.rec
	}
	for k, s := range t.kv {
		if !s.dirty {
			continue
		}
		t.pendingKV[k] = s.val
		if t.hot != nil && cacheable([]byte(k)) {
			t.hot.stage(k, s.val) // for the cache, once the batch commits
		}
	}
	t.reset()
}

// pendingWrite is one key of a flush: a set of val (or of rec, encoded
// when written), or a delete.
type pendingWrite struct {
	key []byte
	val []byte
	rec *nodeRec
	del bool
}

// nodeWrite is a pending node of a flush: its node key, and its record
// (nil: deleted) and child index entry to write.
type nodeWrite struct {
	key    []byte
	rec    *nodeRec
	stored bool
}

// flush writes the pending writes into the batch in key order. The node
// records ('n') and child index entries ('k') of the same paths sort alike,
// so the pending nodes are sorted once, by a merge of the sorted runs of
// the order they were written in, and the other keys, which lie outside
// both spaces, around them.
func (t *txn) flush() error {
	if len(t.pendingOrder) == 0 && len(t.pendingKV) == 0 {
		return nil
	}
	nws := t.nodeWs[:0]
	for _, pn := range t.pendingOrder {
		rec := t.written[pn.path]
		// Neither stored nor now present: created and deleted since the
		// last flush, so there is nothing to write.
		if rec != nil || pn.stored {
			nws = append(nws, nodeWrite{key: nodeKey(pn.path), rec: rec, stored: pn.stored})
		}
	}
	nodeOrder := t.runs.sort(len(nws), func(x, y int32) int { return bytes.Compare(nws[x].key, nws[y].key) })
	ws := t.writes[:0]
	for k, v := range t.pendingKV {
		ws = append(ws, pendingWrite{key: []byte(k), val: v, del: v == nil})
	}
	// Sort positions, not the writes: swapping 64-byte records that hold
	// pointers (write barriers) had been most of a large flush's sort.
	order := t.order[:0]
	for i := range ws {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(x, y int32) int { return bytes.Compare(ws[x].key, ws[y].key) })
	t.order = order
	children, nodes := false, false // written yet
	for i := 0; i <= len(order); i++ {
		var w *pendingWrite
		if i < len(order) {
			w = &ws[order[i]]
		}
		if !children && (w == nil || w.key[0] > spaceChild) {
			children = true
			if err := t.writeChildren(nws, nodeOrder); err != nil {
				return err
			}
		}
		if !nodes && (w == nil || w.key[0] > spaceNode) {
			nodes = true
			if err := t.writeNodes(nws, nodeOrder); err != nil {
				return err
			}
		}
		if w == nil {
			break
		}
		var err error
		if w.del {
			err = t.b.Delete(w.key, nil)
		} else {
			err = t.b.Set(w.key, w.val, nil)
		}
		if err != nil {
			return fmt.Errorf("write %q: %w", w.key, err)
		}
	}
	clear(ws) // drop the references the next flush would keep alive
	t.writes = ws[:0]
	clear(nws)
	t.nodeWs = nws[:0]
	clear(t.pendingNodes)
	clear(t.pendingOrder)
	t.pendingOrder = t.pendingOrder[:0]
	clear(t.pendingKV)
	return nil
}

// writeChildren writes the child index entries of the pending nodes that
// appeared or disappeared, in key order.
func (t *txn) writeChildren(nws []nodeWrite, order []int32) error {
	for _, i := range order {
		w := &nws[i]
		if w.rec != nil && w.stored {
			continue // it was there and still is
		}
		t.scratch = append(append(t.scratch[:0], spaceChild), w.key[1:]...)
		var err error
		if w.rec == nil {
			err = t.b.Delete(t.scratch, nil)
		} else {
			err = t.b.Set(t.scratch, nil, nil)
		}
		if err != nil {
			return fmt.Errorf("write %q: %w", t.scratch, err)
		}
	}
	return nil
}

// writeNodes writes the pending node records, in key order.
func (t *txn) writeNodes(nws []nodeWrite, order []int32) error {
	for _, i := range order {
		w := &nws[i]
		var err error
		if w.rec == nil {
			err = t.b.Delete(w.key, nil)
		} else if w.rec.omittedLen > 0 {
			// A copy without its data is setData's, which always gives it
			// new data; writing one would lose the node's value.
			return fmt.Errorf("write %q: a node record without its data (%d bytes left out)", w.key, w.rec.omittedLen)
		} else {
			// The batch copies the value, so one buffer serves them all.
			t.scratch = w.rec.appendTo(t.scratch[:0])
			err = t.b.Set(w.key, t.scratch, nil)
		}
		if err != nil {
			return fmt.Errorf("write %q: %w", w.key, err)
		}
	}
	return nil
}

// sortRuns sorts positions by a merge of the ascending runs they come in:
// n·log(runs) comparisons, few when the input is mostly in order. Its
// buffers are kept for the next sort.
type sortRuns struct {
	a, b   []int32
	starts []int
}

// sort returns the positions 0..n-1 ordered by cmp (which never returns 0
// for two positions: the keys are distinct). The result is valid until
// the next sort.
func (s *sortRuns) sort(n int, cmp func(x, y int32) int) []int32 {
	a := s.a[:0]
	for i := 0; i < n; i++ {
		a = append(a, int32(i))
	}
	starts := append(s.starts[:0], 0)
	for i := 1; i < n; i++ {
		if cmp(a[i-1], a[i]) > 0 {
			starts = append(starts, i)
		}
	}
	b := slices.Grow(s.b[:0], n)[:n]
	for len(starts) > 1 {
		// Merge runs pairwise from a into b; the starts of the merged runs
		// overwrite the front of starts as it is read.
		w := 0
		for r := 0; r < len(starts); r += 2 {
			lo, mid, hi := starts[r], n, n
			if r+1 < len(starts) {
				mid = starts[r+1]
			}
			if r+2 < len(starts) {
				hi = starts[r+2]
			}
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if cmp(a[i], a[j]) < 0 {
					b[k] = a[i]
					i++
				} else {
					b[k] = a[j]
					j++
				}
				k++
			}
			k += copy(b[k:], a[i:mid])
			copy(b[k:], a[j:hi])
			starts[w] = lo
			w++
		}
		starts = starts[:w]
		a, b = b, a
	}
	s.a, s.b, s.starts = a, b, starts
	return a
}
