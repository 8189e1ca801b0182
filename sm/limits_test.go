package sm

import (
	"fmt"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Writes applied in one batch (as many proposed at once arrive) are each
// checked against the sizes the earlier ones left: the tree ends exactly
// at the znode limit, never past it.
func TestWithinLimitsZnodesExactInOneBatch(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	base := h.s.Stats().Nodes // the special nodes count
	limit := base + 5
	var cmds []*Command
	for i := range 12 {
		op, limited := Limit(&Create{OpCode: zkproto.OpCreate, Path: fmt.Sprintf("/n%d", i), ACL: open}, limit, 0)
		if !limited {
			t.Fatal("a create was not limited")
		}
		cmds = append(cmds, h.cmd(s, op))
	}
	ok, refused := 0, 0
	for _, r := range h.update(cmds...) {
		switch r.Err {
		case zkproto.ErrOK:
			ok++
		case zkproto.ErrQuotaExceeded:
			refused++
			if len(r.Events) != 0 || r.Path != "" {
				t.Fatalf("a refused create left events or a path: %+v", r)
			}
		default:
			t.Fatalf("create: %v", r.Err)
		}
	}
	if ok != 5 || refused != 7 || h.s.Stats().Nodes != limit {
		t.Fatalf("%d created, %d refused, %d znodes; want 5, 7 and %d", ok, refused, h.s.Stats().Nodes, limit)
	}
	// A refused write consumed its sequence number: the session writes on.
	if r := h.do(s, &Delete{Path: "/n0", Version: -1}); r.Err != zkproto.ErrOK {
		t.Fatalf("delete after refusals: %v", r.Err)
	}
	// Room again for one, not two (a multi is all or nothing).
	op, _ := Limit(&Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/m1", ACL: open},
		&Create{OpCode: zkproto.OpCreate, Path: "/m2", ACL: open},
	}}, limit, 0)
	wantErr(t, "multi of two creates with room for one", h.do(s, op).Err, zkproto.ErrQuotaExceeded)
	if h.exists("/m1") {
		t.Fatal("the refused multi's first create is in the tree")
	}
	op, _ = Limit(&Create{OpCode: zkproto.OpCreate, Path: "/m1", ACL: open}, limit, 0)
	wantErr(t, "create into the room left", h.do(s, op).Err, zkproto.ErrOK)
}

func TestWithinLimitsBytes(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	wantErr(t, "create", h.create(s, "/a", make([]byte, 100), 0).Err, zkproto.ErrOK)
	limit := h.s.Stats().DataBytes + 50
	op, _ := Limit(&SetData{Path: "/a", Data: make([]byte, 140), Version: -1}, 0, limit)
	wantErr(t, "setData growing by 40", h.do(s, op).Err, zkproto.ErrOK)
	op, _ = Limit(&SetData{Path: "/a", Data: make([]byte, 160), Version: -1}, 0, limit)
	wantErr(t, "setData growing past the limit", h.do(s, op).Err, zkproto.ErrQuotaExceeded)
	if got := h.stat("/a").DataLength; got != 140 {
		t.Fatalf("refused setData changed the data: %d bytes", got)
	}
	// Over a lowered limit, shrinking is still admitted.
	op, _ = Limit(&SetData{Path: "/a", Data: make([]byte, 10), Version: -1}, 0, 1)
	wantErr(t, "setData shrinking under a lowered limit", h.do(s, op).Err, zkproto.ErrOK)
	// Ops that cannot grow the tree are not wrapped.
	if _, limited := Limit(&Delete{Path: "/a", Version: -1}, 1, 1); limited {
		t.Fatal("a delete was limited")
	}
	cmd, err := DecodeCommand((&Command{Op: &WithinLimits{MaxZnodes: 7, MaxBytes: 9, Op: &Increment{Path: "/c", Delta: 2}}}).Encode())
	if err != nil {
		t.Fatal(err)
	}
	if w := cmd.Op.(*WithinLimits); w.MaxZnodes != 7 || w.MaxBytes != 9 || w.Op.(*Increment).Delta != 2 {
		t.Fatalf("round trip: %+v", w)
	}
}
