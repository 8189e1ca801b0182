package sm

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func createOp(p string) *Create {
	return &Create{OpCode: zkproto.OpCreate2, Path: p, Data: []byte("x"), ACL: open}
}

// The node filter spares reads of absent nodes; it must never hide one that
// exists: not within one batch (create, delete, create again), not across
// batches, not after a reopen rebuilt it, and not when two keys share a
// hash.
func TestNodeFilterNeverHidesANode(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	s := h.newSession()
	res := h.update(
		h.cmd(s, createOp("/x")),
		h.cmd(s, &Delete{Path: "/x", Version: -1}),
		h.cmd(s, createOp("/x")),
		h.cmd(s, createOp("/x")),
	)
	for i, want := range []zkproto.ErrCode{zkproto.ErrOK, zkproto.ErrOK, zkproto.ErrOK, zkproto.ErrNodeExists} {
		wantErr(t, fmt.Sprintf("entry %d", i), res[i].Err, want)
	}
	wantErr(t, "create /x in a later batch", h.create(s, "/x", nil, 0).Err, zkproto.ErrNodeExists)
	wantErr(t, "delete /x", h.do(s, &Delete{Path: "/x", Version: -1}).Err, zkproto.ErrOK)
	wantErr(t, "create /x after its delete", h.create(s, "/x", nil, 0).Err, zkproto.ErrOK)

	// Two keys under one hash: removing one leaves the count of the
	// other; a batch that did not commit removes nothing.
	f := newNodeFilter()
	k := nodeKey("/same")
	f.add(k)
	f.add(k)
	f.remove(k)
	f.publish()
	if f.absent(k) {
		t.Fatal("one removal cleared a count of two")
	}
	f.remove(k)
	f.discard()
	if f.absent(k) {
		t.Fatal("a discarded batch's removal counted")
	}
	f.remove(k)
	f.publish()
	if !f.absent(k) {
		t.Fatal("count not cleared")
	}

	// A reopen rebuilds the counts from the database.
	h.s.Close()
	h2 := newHarness(t, Config{Dir: dir})
	h2.conn, h2.seq, h2.auth, h2.index = h.conn, h.seq, h.auth, h.index
	if h2.s.filter.absent(nodeKey("/x")) || !h2.s.filter.absent(nodeKey("/never")) {
		t.Fatal("rebuilt filter is wrong: /x exists, /never does not")
	}
	wantErr(t, "create /x after reopen", h2.create(s, "/x", nil, 0).Err, zkproto.ErrNodeExists)

	// So does a snapshot recovery, over a replica whose filter knew none
	// of the snapshot's nodes.
	snap := saveSnapshot(t, h2.s)
	h3 := newHarness(t, Config{})
	if err := h3.s.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	h3.conn, h3.seq, h3.auth, h3.index = h2.conn, h2.seq, h2.auth, h3.s.AppliedIndex()
	wantErr(t, "create /x after snapshot recovery", h3.create(s, "/x", nil, 0).Err, zkproto.ErrNodeExists)
}

// The table is an exact multiset of hashes: against a map of counts, through
// random inserts and drops that collide on home slots and repeat hashes,
// and across growth.
func TestNodeFilterTableIsAMultiset(t *testing.T) {
	f := newNodeFilter()
	model := map[uint32]int{}
	r := rand.New(rand.NewSource(5))
	for step := 0; step < 200_000; step++ {
		h := uint32(1 + r.Intn(5000)) // few distinct hashes: many repeats
		if r.Intn(3) > 0 {
			f.insert(h)
			model[h]++
		} else if model[h] > 0 {
			f.drop(h)
			model[h]--
		}
		if step%997 == 0 {
			for x := uint32(1); x <= 5000; x++ {
				if f.has(x) != (model[x] > 0) {
					t.Fatalf("step %d: has(%d)=%v, model count %d", step, x, f.has(x), model[x])
				}
			}
		}
	}
	total := 0
	for _, n := range model {
		total += n
	}
	if f.n != total {
		t.Fatalf("table holds %d, model %d", f.n, total)
	}
}
