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
