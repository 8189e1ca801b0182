package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestTreeStatsFollowApply(t *testing.T) {
	h := newHarness(t, Config{})
	want := specialTreeStats()
	check := func(what string) {
		t.Helper()
		if got := h.s.Stats(); got != want {
			t.Fatalf("%s: stats %+v, want %+v", what, got, want)
		}
	}
	check("fresh tree")
	s := h.newSession()
	wantErr(t, "create", h.create(s, "/a", []byte("hello"), 0).Err, zkproto.ErrOK)
	want.Nodes, want.DataBytes = want.Nodes+1, want.DataBytes+int64(len("/a")+5)
	check("after create")
	wantErr(t, "ephemeral", h.create(s, "/a/e", []byte("x"), int32(zkproto.ModeEphemeral)).Err, zkproto.ErrOK)
	want.Nodes, want.Ephemerals, want.DataBytes = want.Nodes+1, 1, want.DataBytes+int64(len("/a/e")+1)
	check("after ephemeral")
	wantErr(t, "set", h.do(s, &SetData{Path: "/a", Data: []byte("hi"), Version: -1}).Err, zkproto.ErrOK)
	want.DataBytes -= 3
	check("after setData")
	// A failed multi changes nothing.
	r := h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/b", ACL: zkproto.OpenACLUnsafe()},
		&Delete{Path: "/nope", Version: -1},
	}})
	wantErr(t, "multi", r.Ops[1].Err, zkproto.ErrNoNode)
	check("after failed multi")
	r = h.do(s, &CloseSession{})
	wantErr(t, "close", r.Err, zkproto.ErrOK)
	if r.ClosedSession != s {
		t.Fatalf("ClosedSession %#x, want %#x", r.ClosedSession, s)
	}
	want.Nodes, want.Ephemerals, want.DataBytes = want.Nodes-1, 0, want.DataBytes-int64(len("/a/e")+1)
	check("after session close")
}

func TestEventsCarryTheNodeACL(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession(zkproto.Id{Scheme: "digest", ID: "alice:hash"})
	mine := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "digest", ID: "alice:hash"}}}
	r := h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/p", ACL: mine})
	wantErr(t, "create", r.Err, zkproto.ErrOK)
	if len(r.Events) != 2 || r.Events[0].ACL[0] != mine[0] || r.Events[1].ACL[0] != openACL[0] {
		t.Fatalf("create events %+v", r.Events)
	}
	r = h.do(s, &Delete{Path: "/p", Version: -1})
	wantErr(t, "delete", r.Err, zkproto.ErrOK)
	if len(r.Events) != 2 || len(r.Events[0].ACL) != 1 || r.Events[0].ACL[0] != mine[0] {
		t.Fatalf("delete events %+v (the deleted node's ACL must survive its unref)", r.Events)
	}
}
