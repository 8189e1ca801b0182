package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestRejectedConsumesZxidAndSequence(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.s.Stats()
	r := h.do(s, &Rejected{Code: zkproto.ErrMarshallingError})
	wantErr(t, "rejected", r.Err, zkproto.ErrMarshallingError)
	if r.Zxid != int64(h.index) || len(r.Events) != 0 {
		t.Fatalf("rejected result %+v at index %d", r, h.index)
	}
	if h.s.Stats() != before {
		t.Fatal("a rejected write changed the tree")
	}
	// The next write of the session carries the next sequence number: the
	// rejected one counted.
	wantErr(t, "create after", h.create(s, "/a", nil, 0).Err, zkproto.ErrOK)
	cmd, err := DecodeCommand((&Command{Op: &Rejected{Code: zkproto.ErrBadArguments}}).Encode())
	if err != nil || cmd.Op.(*Rejected).Code != zkproto.ErrBadArguments {
		t.Fatalf("round trip: %+v, %v", cmd, err)
	}
}

func TestTouchSessionsReportsLiveSessionsAndConsumesNoZxid(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.create(s, "/a", nil, 0).Zxid
	r := h.update(&Command{Op: &TouchSessions{IDs: []int64{s, 999}}})[0]
	if r.Zxid != before || len(r.Touched) != 1 || r.Touched[0] != s {
		t.Fatalf("touch result zxid %d touched %v (last zxid %d)", r.Zxid, r.Touched, before)
	}
	if got := h.create(s, "/b", nil, 0).Zxid; got != before+1 {
		t.Fatalf("the write after a touch has zxid %d, want %d", got, before+1)
	}
}
