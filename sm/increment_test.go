package sm

import (
	"encoding/binary"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Increment creates a missing counter, adds to an existing one as a
// setData (version bump, data event), and refuses what is not a counter.
func TestIncrementIsACounterSetData(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	r := h.do(0, &Increment{Path: "/seq", Delta: 5})
	if r.Err != zkproto.ErrOK || r.Counter != 0 || r.Stat == nil || r.Stat.Version != 0 {
		t.Fatalf("first increment: %+v", r)
	}
	r = h.do(0, &Increment{Path: "/seq", Delta: 3})
	if r.Err != zkproto.ErrOK || r.Counter != 5 || r.Stat.Version != 1 {
		t.Fatalf("second increment: %+v", r)
	}
	if len(h.last) != 1 || len(h.last[0].Events) != 1 || h.last[0].Events[0].Type != zkproto.EventNodeDataChanged {
		t.Fatalf("events of an increment: %+v", h.last)
	}
	v := h.view()
	n, err := v.Get("/seq")
	v.Close()
	if err != nil || binary.BigEndian.Uint64(n.Data) != 8 {
		t.Fatalf("counter %v %v, want 8", n, err)
	}
	h.mustCreate(s, "/text")
	h.do(s, &SetData{Path: "/text", Data: []byte("abc"), Version: -1})
	wantErr(t, "increment of a non-counter", h.do(0, &Increment{Path: "/text", Delta: 1}).Err, zkproto.ErrBadArguments)
	wantErr(t, "increment by 0", h.do(0, &Increment{Path: "/seq", Delta: 0}).Err, zkproto.ErrBadArguments)
	wantErr(t, "overflow", h.do(0, &Increment{Path: "/seq", Delta: 1<<63 - 5}).Err, zkproto.ErrBadArguments)
	wantErr(t, "missing parent", h.do(0, &Increment{Path: "/no/seq", Delta: 1}).Err, zkproto.ErrNoNode)
}
