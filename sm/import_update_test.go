package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A catch-up pass overwrites imported nodes with the source's newer stat,
// data and ACL, deletes what the source deleted, creates what it created,
// and sets the root's stat; a failing pass changes nothing.
func TestImportUpdateOverwritesDeletesAndCreates(t *testing.T) {
	h := newHarness(t, Config{})
	base := []ImportedNode{
		{Path: "/app", Czxid: 0x100000002, Mzxid: 0x100000002, Pzxid: 0x100000004, Creates: 2},
		{Path: "/app/a", Data: []byte("v0"), Czxid: 0x100000003, Mzxid: 0x100000003, Pzxid: 0x100000003},
		{Path: "/app/b", Czxid: 0x100000004, Mzxid: 0x100000004, Pzxid: 0x100000004},
	}
	if r := h.do(0, &ImportNodes{Nodes: base}); r.Err != zkproto.ErrOK {
		t.Fatalf("import: %+v", r)
	}
	digest := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: "u:hash"}}}
	up := &ImportUpdate{Deletes: []string{"/app/b"}, Nodes: []ImportedNode{
		{Path: "/", Czxid: 0, Mzxid: 0, Pzxid: 0x100000002, Creates: 3},
		{Path: "/app", Czxid: 0x100000002, Mzxid: 0x100000002, Pzxid: 0x100000009, Creates: 3},
		{Path: "/app/a", Data: []byte("v1"), ACL: digest, Czxid: 0x100000003, Mzxid: 0x100000007, Pzxid: 0x100000003, Mtime: 77, Version: 1, Aversion: 2},
		{Path: "/app/c", Czxid: 0x100000008, Mzxid: 0x100000008, Pzxid: 0x100000008, EphemeralOwner: ownerContainer},
	}}
	if r := h.do(0, up); r.Err != zkproto.ErrOK {
		t.Fatalf("update: %+v", r)
	}
	if h.exists("/app/b") || !h.exists("/app/c") {
		t.Fatalf("/app/b exists %v, /app/c exists %v", h.exists("/app/b"), h.exists("/app/c"))
	}
	if st := h.stat("/app"); st.Pzxid != 0x100000009 || st.NumChildren != 2 || st.Cversion != 2*3-2 {
		t.Fatalf("/app stat %+v", st)
	}
	if st := h.stat("/app/a"); st.Mzxid != 0x100000007 || st.Version != 1 || st.Aversion != 2 || st.Mtime != 77 || st.DataLength != 2 {
		t.Fatalf("/app/a stat %+v", st)
	}
	if st := h.stat("/"); st.Pzxid != 0x100000002 || st.Cversion != 2*3-st.NumChildren {
		t.Fatalf("/ stat %+v", st)
	}
	v := h.view()
	n, err := v.Get("/app/a")
	v.Close()
	if err != nil || string(n.Data) != "v1" || len(n.ACL) != 1 || n.ACL[0].ID.Scheme != "digest" {
		t.Fatalf("/app/a %+v %v", n, err)
	}
	// A delete of a node with children fails the whole pass.
	r := h.do(0, &ImportUpdate{Deletes: []string{"/app"}, Nodes: []ImportedNode{{Path: "/app/d"}}})
	if r.Err != zkproto.ErrNotEmpty || r.Path != "/app" || h.exists("/app/d") {
		t.Fatalf("delete of a parent: %+v", r)
	}
	wantErr(t, "a special path", h.do(0, &ImportUpdate{Nodes: []ImportedNode{{Path: "/zookeeper"}}}).Err, zkproto.ErrBadArguments)
	// Every field survives the Raft log's encoding.
	cmd := &Command{Op: up}
	back, err := DecodeCommand(cmd.Encode())
	if err != nil {
		t.Fatal(err)
	}
	got := back.Op.(*ImportUpdate)
	if len(got.Deletes) != 1 || len(got.Nodes) != 4 || got.Nodes[2].Mtime != 77 || got.Nodes[3].EphemeralOwner != ownerContainer {
		t.Fatalf("decoded %+v", got)
	}
}

// Quota nodes move as the source has them: the stats node keeps the
// source's count and bytes whatever order the subtree is imported in, and
// the quota is known (later client writes adjust the stats).
func TestImportKeepsQuotaStatsVerbatim(t *testing.T) {
	h := newHarness(t, Config{})
	nodes := []ImportedNode{
		{Path: "/app", Data: []byte("root")},
		{Path: "/zookeeper/quota/app"},
		{Path: "/zookeeper/quota/app/zookeeper_limits", Data: []byte("count=100,bytes=-1")},
		{Path: "/zookeeper/quota/app/zookeeper_stats", Data: []byte("count=3,bytes=9")},
		{Path: "/app/a", Data: []byte("aa")},
		{Path: "/app/a/b", Data: []byte("bbb")},
	}
	if r := h.do(0, &ImportNodes{Nodes: nodes}); r.Err != zkproto.ErrOK {
		t.Fatalf("import: %+v", r)
	}
	stats := func() string {
		v := h.view()
		defer v.Close()
		n, err := v.Get("/zookeeper/quota/app/zookeeper_stats")
		if err != nil {
			t.Fatal(err)
		}
		return string(n.Data)
	}
	if got := stats(); got != "count=3,bytes=9" {
		t.Fatalf("stats after the import: %q", got)
	}
	s := h.newSession()
	h.create(s, "/app/c", []byte("c"), 0)
	if got := stats(); got != "count=4,bytes=10" {
		t.Fatalf("stats after a client's create: %q", got)
	}
}
