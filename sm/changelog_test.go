package sm

import (
	"bytes"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A value larger than changeValueInline stays in its node: the log reads
// it from there while the node is at the change's version, and marks the
// change superseded once a later change replaced it; small values and
// the records' other fields are as before.
func TestChangeLogLeavesLargeValuesInTheirNodes(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	big := func(b byte) []byte { return bytes.Repeat([]byte{b}, changeValueInline+1) }
	edge := bytes.Repeat([]byte{'e'}, changeValueInline) // the largest copied
	h.create(s, "/small", []byte("s"), 0)
	h.create(s, "/edge", edge, 0)
	h.create(s, "/big", big('a'), 0)
	h.do(s, &SetData{Path: "/big", Data: big('b'), Version: -1})
	// One multi: created, set, deleted, created again.
	if r := h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/m", Data: big('c'), ACL: open},
		&SetData{Path: "/m", Data: big('d'), Version: -1},
		&Create{OpCode: zkproto.OpCreate, Path: "/n", Data: big('e'), ACL: open},
		&Delete{Path: "/n", Version: -1},
		&Create{OpCode: zkproto.OpCreate, Path: "/n", Data: big('f'), ACL: open},
	}}); r.Err != zkproto.ErrOK {
		t.Fatalf("multi: %v", r.Err)
	}
	h.create(s, "/gone", big('g'), 0)
	h.do(s, &Delete{Path: "/gone", Version: -1})

	v := h.view()
	recs, _, err := v.ChangeLog(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		path       string
		data       []byte // nil with superseded
		superseded bool
	}
	var got []want
	for _, r := range recs {
		for _, c := range r.Changes {
			if carriesData(c.Type) {
				got = append(got, want{c.Path, c.Data, c.DataSuperseded})
			}
			if c.DataSuperseded && c.Data != nil {
				t.Fatalf("%s: superseded with data", c.Path)
			}
			if c.dataInNode {
				t.Fatalf("%s: the node's value was not read", c.Path)
			}
		}
	}
	exp := []want{
		{"/small", []byte("s"), false},
		{"/edge", edge, false},
		{"/big", nil, true}, // replaced by the set
		{"/big", big('b'), false},
		{"/m", nil, true}, // the multi's set replaced it
		{"/m", big('d'), false},
		{"/n", nil, true}, // deleted in the multi
		{"/n", big('f'), false},
		{"/gone", nil, true}, // deleted later
	}
	if len(got) != len(exp) {
		t.Fatalf("%d value changes, want %d", len(got), len(exp))
	}
	for i := range exp {
		if got[i].path != exp[i].path || !bytes.Equal(got[i].data, exp[i].data) || got[i].superseded != exp[i].superseded {
			t.Fatalf("change %d: %s %d bytes superseded=%v, want %s %d bytes superseded=%v", i,
				got[i].path, len(got[i].data), got[i].superseded, exp[i].path, len(exp[i].data), exp[i].superseded)
		}
	}

	// The record holds the small value and not the large one.
	for _, r := range recs {
		enc := r.encode()
		if len(enc) > changeValueInline*2+1024 {
			t.Fatalf("record at %d is %d bytes: a large value was copied", r.Zxid, len(enc))
		}
	}
}

// A record that left a value in its node decodes back to the same
// changes, and its truncations fail.
func TestChangeRecordRoundTripWithValueInNode(t *testing.T) {
	r := &ChangeRecord{Zxid: 9, Time: 5, Changes: []Change{
		{Type: ChangeData, Path: "/a", Stat: zkproto.Stat{Czxid: 3, Mzxid: 9, Version: 2}, Data: make([]byte, changeValueInline+1)},
		{Type: ChangeData, Path: "/b", Stat: zkproto.Stat{Czxid: 4, Mzxid: 9, Version: 1}, Data: []byte("x")},
		{Type: ChangeDeleted, Path: "/c"},
	}}
	b := r.encode()
	got, err := decodeChangeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Changes[0].dataInNode || got.Changes[0].Data != nil || string(got.Changes[1].Data) != "x" || got.Changes[1].dataInNode {
		t.Fatalf("decoded %+v", got.Changes)
	}
	for i := 1; i < len(b); i++ {
		if _, err := decodeChangeRecord(b[:i]); err == nil {
			t.Fatalf("truncated at %d decoded", i)
		}
	}
	// The mark is refused where no value belongs.
	bad := (&ChangeRecord{Zxid: 1, Changes: []Change{{Type: ChangeACL, Path: "/a"}}}).encode()
	if bad[len(bad)-1] != 1 { // the varint of null, -1
		t.Fatalf("an ACL change ends in %d, not a null value", bad[len(bad)-1])
	}
	bad[len(bad)-1] = 3 // the varint of dataInNodeMark, -2
	if _, err := decodeChangeRecord(bad); err == nil {
		t.Fatal("a value left in the node of an ACL change decoded")
	}
}

// Change records come from the state's own Pebble, but a corrupt file must
// give an error, never a panic; what decodes encodes and decodes again.
func FuzzDecodeChangeRecord(f *testing.F) {
	f.Add((&ChangeRecord{Zxid: 9, Time: 5, Changes: []Change{
		{Type: ChangeData, Path: "/a", Stat: zkproto.Stat{Czxid: 3, Mzxid: 9, Version: 2}, Data: make([]byte, changeValueInline+1)},
		{Type: ChangeCreated, Path: "/b", Data: []byte("x")},
		{Type: ChangeSessionClosed, Session: 7},
	}}).encode())
	f.Add([]byte{changeRecVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeChangeRecord(b)
		if err != nil {
			return
		}
		if _, err := decodeChangeRecord(r.encode()); err != nil {
			t.Fatalf("a decoded record does not decode again: %v", err)
		}
	})
}
