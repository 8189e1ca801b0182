package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Under a native subtree only writes carrying the native API's identity
// pass; read-only refuses every write; the deepest policy wins; policies
// survive a reopen; a refused write is marked Fenced.
func TestCutoverPoliciesFenceWritesInApply(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	zkSession := h.newSession()
	nativeSession := h.newSession(NativeOrigin)
	for _, p := range []string{"/app", "/app/a", "/app/ro", "/other"} {
		h.mustCreate(zkSession, p)
	}
	set := func(p string, m CutoverMode) {
		t.Helper()
		if res := h.update(h.cmd(0, &SetCutover{Path: p, Mode: m}))[0]; res.Err != zkproto.ErrOK {
			t.Fatalf("set cutover %s %v: %v", p, m, res.Err)
		}
	}
	set("/app", CutoverNative)
	set("/app/ro", CutoverReadOnly)

	res := h.do(zkSession, &SetData{Path: "/app/a", Data: []byte("zk"), Version: -1})
	wantErr(t, "ZooKeeper-mode setData under a native subtree", res.Err, zkproto.ErrNoAuth)
	if len(h.last) != 1 || !h.last[0].Fenced {
		t.Fatal("a fenced write is not marked Fenced in the results the node is notified of")
	}
	wantErr(t, "ZooKeeper-mode create under native", h.create(zkSession, "/app/b", nil, 0).Err, zkproto.ErrNoAuth)
	wantErr(t, "ZooKeeper-mode delete under native", h.do(zkSession, &Delete{Path: "/app/a", Version: -1}).Err, zkproto.ErrNoAuth)
	wantErr(t, "ZooKeeper-mode setACL under native", h.do(zkSession, &SetACL{Path: "/app/a", ACL: open, Version: -1}).Err, zkproto.ErrNoAuth)
	multi := h.do(zkSession, &Multi{Ops: []Op{&SetData{Path: "/other", Version: -1}, &SetData{Path: "/app/a", Version: -1}}})
	if multi.Ops[1].Err != zkproto.ErrNoAuth {
		t.Fatalf("multi with a fenced op: %+v", multi.Ops)
	}
	wantErr(t, "ZooKeeper-mode write outside", h.do(zkSession, &SetData{Path: "/other", Version: -1}).Err, zkproto.ErrOK)
	wantErr(t, "native write under native", h.do(nativeSession, &SetData{Path: "/app/a", Data: []byte("n"), Version: -1}).Err, zkproto.ErrOK)
	wantErr(t, "native write under read-only", h.do(nativeSession, &SetData{Path: "/app/ro", Version: -1}).Err, zkproto.ErrNoAuth)
	wantErr(t, "bad path", h.update(h.cmd(0, &SetCutover{Path: "app", Mode: CutoverNative}))[0].Err, zkproto.ErrBadArguments)

	h.s.Close()
	h2 := newHarness(t, Config{Dir: dir})
	v := h2.view()
	ps, err := v.CutoverPolicies()
	v.Close()
	if err != nil || len(ps) != 2 || ps[0] != (CutoverPolicy{"/app", CutoverNative}) || ps[1] != (CutoverPolicy{"/app/ro", CutoverReadOnly}) {
		t.Fatalf("policies after reopen %+v %v", ps, err)
	}
}
