package sm

import (
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A ReapTTL with Mzxid deletes the node the leader watched for its TTL,
// whatever the wall clocks say, and never a node modified since: a leader
// whose clock jumped ahead cannot expire a TTL node early, one whose clock
// is behind does not keep it forever.
func TestReapTTLGuardedByMzxid(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	create := func(p string) {
		wantErr(t, "create "+p, h.do(s, &Create{OpCode: zkproto.OpCreateTTL, Path: p, ACL: open, Flags: 5, TTL: 60_000}).Err, zkproto.ErrOK)
	}
	create("/t")
	create("/u")
	create("/parent")
	h.mustCreate(s, "/parent/kid")
	var seen []TTLNode
	v := h.view()
	err := v.TTLNodes(func(n TTLNode) error { seen = append(seen, n); return nil })
	v.Close()
	want := []TTLNode{{Path: "/t", TTL: 60_000, Mzxid: h.stat("/t").Mzxid}, {Path: "/u", TTL: 60_000, Mzxid: h.stat("/u").Mzxid}}
	if err != nil || !reflect.DeepEqual(seen, want) {
		t.Fatalf("TTLNodes = %+v, %v; want %+v (a node with children is left out)", seen, err, want)
	}
	reap := func(op *ReapTTL, at int64) *Result {
		return h.update(&Command{Header: Header{Time: at}, Op: op})[0]
	}
	seenT := want[0].Mzxid
	// Modified after the leader's sighting: refused, even at a time an
	// hour past its TTL by the wall clock.
	wantErr(t, "setData", h.do(s, &SetData{Path: "/t", Data: []byte("x"), Version: -1}).Err, zkproto.ErrOK)
	late := h.stat("/t").Mtime + 3_600_000
	wantErr(t, "reap a modified node", reap(&ReapTTL{Path: "/t", Mzxid: seenT}, late).Err, zkproto.ErrBadVersion)
	if !h.exists("/t") {
		t.Fatal("a TTL node modified after the leader's sighting was reaped")
	}
	// Unchanged: deleted although the stamp is the node's own mtime (the
	// leader's wall clock behind the stamping node's).
	r := reap(&ReapTTL{Path: "/u", Mzxid: want[1].Mzxid}, h.stat("/u").Mtime)
	wantErr(t, "reap unchanged", r.Err, zkproto.ErrOK)
	if h.exists("/u") {
		t.Fatal("unchanged TTL node not reaped")
	}
}

func TestReapTTLRoundTrip(t *testing.T) {
	for _, op := range []*ReapTTL{{Path: "/t"}, {Path: "/t", Mzxid: 1<<32 + 5}} {
		c := &Command{Header: Header{Time: 9}, Op: op}
		got, err := DecodeCommand(c.Encode())
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip %+v: got %+v, %v", op, got, err)
		}
	}
}
