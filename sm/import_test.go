package sm

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Imported znodes keep every stat field, containers and TTL nodes keep
// their kind, ephemerals belong to their imported session, and the next
// sequential suffix continues the source's.
func TestImportKeepsStatsKindsAndCounters(t *testing.T) {
	h := newHarness(t, Config{})
	const sid = int64(0x0100017f00000001) // a ZooKeeper session id of server 1
	pw := bytes.Repeat([]byte{7}, zkproto.PasswordLength)
	r := h.do(0, &ImportSessions{Sessions: []ImportedSession{{ID: sid, Timeout: 30000, Password: pw}}})
	if r.Err != zkproto.ErrOK || len(h.last[0].Imported) != 1 {
		t.Fatalf("import sessions: %+v %+v", r, h.last[0])
	}
	digest := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: "u:hash"}}}
	nodes := []ImportedNode{
		{Path: "/app", Czxid: 0x100000002, Mzxid: 0x100000002, Pzxid: 0x100000009, Ctime: 1000, Mtime: 1000, Creates: 7},
		{Path: "/app/a", Data: []byte("v3"), ACL: digest, Czxid: 0x100000003, Mzxid: 0x100000008, Pzxid: 0x100000003, Ctime: 1001, Mtime: 1005, Version: 3, Aversion: 1},
		{Path: "/app/e", Czxid: 0x100000004, Mzxid: 0x100000004, Pzxid: 0x100000004, EphemeralOwner: sid},
		{Path: "/app/c", Czxid: 0x100000005, Mzxid: 0x100000005, Pzxid: 0x100000005, EphemeralOwner: ownerContainer},
		{Path: "/app/t", Czxid: 0x100000006, Mzxid: 0x100000006, Pzxid: 0x100000006, EphemeralOwner: ownerTTLMask | 60000},
	}
	if r := h.do(0, &ImportNodes{Nodes: nodes}); r.Err != zkproto.ErrOK {
		t.Fatalf("import: %+v", r)
	}
	st := h.stat("/app")
	if st.Cversion != 2*7-4 || st.NumChildren != 4 || st.Pzxid != 0x100000009 || st.Czxid != 0x100000002 || st.Ctime != 1000 {
		t.Fatalf("/app stat %+v", st)
	}
	st = h.stat("/app/a")
	if st.Version != 3 || st.Aversion != 1 || st.Mzxid != 0x100000008 || st.Mtime != 1005 || st.DataLength != 2 {
		t.Fatalf("/app/a stat %+v", st)
	}
	if st := h.stat("/app/e"); st.EphemeralOwner != sid {
		t.Fatalf("/app/e owner %#x", st.EphemeralOwner)
	}
	if st := h.stat("/app/c"); st.EphemeralOwner != 0 {
		t.Fatalf("a container shows owner %#x to clients", st.EphemeralOwner)
	}
	v := h.view()
	containers, ttls, err := v.ReapCandidates(1<<62, 0, 10)
	v.Close()
	if err != nil || len(ttls) != 1 || ttls[0] != "/app/t" {
		t.Fatalf("reaper candidates %v %v %v", containers, ttls, err)
	}
	s := h.newSession()
	if p := h.create(s, "/app/seq-", nil, int32(zkproto.ModePersistentSequential)).Path; p != "/app/seq-0000000007" {
		t.Fatalf("next sequential node %s, want the source's suffix 7", p)
	}

	// A batch with a node that exists fails whole; Merge skips it.
	r = h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/app/new"}, {Path: "/app/a"}}})
	if r.Err != zkproto.ErrNodeExists || r.Path != "/app/a" || h.exists("/app/new") {
		t.Fatalf("import over an existing node: %+v, /app/new exists %v", r, h.exists("/app/new"))
	}
	if r := h.do(0, &ImportNodes{Merge: true, Nodes: []ImportedNode{{Path: "/app/new"}, {Path: "/app/a", Data: []byte("other")}}}); r.Err != zkproto.ErrOK || !h.exists("/app/new") || h.stat("/app/a").Version != 3 {
		t.Fatalf("merge: %+v", r)
	}
	wantErr(t, "an ephemeral of an unknown session", h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/app/x", EphemeralOwner: 42}}}).Err, zkproto.ErrSessionExpired)
	wantErr(t, "a missing parent", h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/no/x"}}}).Err, zkproto.ErrNoNode)
	wantErr(t, "a special path", h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/zookeeper"}}}).Err, zkproto.ErrBadArguments)
	wantErr(t, "a short password", h.do(0, &ImportSessions{Sessions: []ImportedSession{{ID: 9, Timeout: 1, Password: []byte{1}}}}).Err, zkproto.ErrBadArguments)

	// The imported session owns its ephemeral: closing it deletes it.
	if r := h.do(sid, &CloseSession{Expired: true}); r.Err != zkproto.ErrOK || h.exists("/app/e") {
		t.Fatalf("close of the imported session: %+v, /app/e exists %v", r, h.exists("/app/e"))
	}
}

// A batch interns its ACLs once, and each stored ACL record still counts
// every node that uses it: deleting the nodes one by one drops the record
// with the last of them, not before.
func TestImportCountsSharedACLReferences(t *testing.T) {
	h := newHarness(t, Config{})
	x := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: "x:hash"}}}
	y := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "digest", ID: "y:hash"}}}
	nodes := []ImportedNode{{Path: "/i"}}
	for i, acl := range [][]zkproto.ACL{x, y, x, x, y} {
		nodes = append(nodes, ImportedNode{Path: "/i/n" + string(rune('a'+i)), ACL: acl})
	}
	if r := h.do(0, &ImportNodes{Nodes: nodes}); r.Err != zkproto.ErrOK {
		t.Fatalf("import: %+v", r)
	}
	refs := func(acl []zkproto.ACL) (uint64, bool) {
		t.Helper()
		v, closer, err := h.s.db.Get(append([]byte{spaceACLIndex}, encodeACLList(acl)...))
		if err != nil {
			return 0, false
		}
		id := binary.BigEndian.Uint64(v)
		closer.Close()
		rec, closer, err := h.s.db.Get(aclKey(id))
		if err != nil {
			t.Fatalf("acl %d: index without record: %v", id, err)
		}
		defer closer.Close()
		n, _, err := decodeACLRec(rec)
		if err != nil {
			t.Fatal(err)
		}
		return n, true
	}
	if n, _ := refs(x); n != 3 {
		t.Fatalf("x has %d references, want 3", n)
	}
	if n, _ := refs(y); n != 2 {
		t.Fatalf("y has %d references, want 2", n)
	}
	s := h.newSession()
	for _, n := range nodes[1:] {
		if r := h.do(s, &Delete{Path: n.Path, Version: -1}); r.Err != zkproto.ErrOK {
			t.Fatalf("delete %s: %+v", n.Path, r)
		}
		if n.Path == "/i/na" {
			if c, _ := refs(x); c != 2 {
				t.Fatalf("x has %d references after one of its nodes went, want 2", c)
			}
		}
	}
	if _, ok := refs(x); ok {
		t.Fatal("x is still stored after its last node went")
	}
	if _, ok := refs(y); ok {
		t.Fatal("y is still stored after its last node went")
	}
}

// An ImportNodes batch leaves one change-log record: a ChangeImported
// naming the created nodes' closest common ancestor (a snapshot point for
// feeds), not a create per node; a merge that creates nothing leaves none.
func TestImportRecordsOneSnapshotPoint(t *testing.T) {
	h := newHarness(t, Config{})
	last := func() *ChangeRecord {
		t.Helper()
		v := h.view()
		defer v.Close()
		recs, _, err := v.ChangeLog(0, 1<<20)
		if err != nil || len(recs) == 0 {
			t.Fatalf("change log: %d records, %v", len(recs), err)
		}
		return recs[len(recs)-1]
	}
	for _, c := range []struct {
		nodes []ImportedNode
		want  string
	}{
		{[]ImportedNode{{Path: "/a"}, {Path: "/a/b"}, {Path: "/a/b/c"}}, "/a"},
		{[]ImportedNode{{Path: "/a/b/d"}, {Path: "/a/b/c/e"}}, "/a/b"},
		{[]ImportedNode{{Path: "/a/x"}, {Path: "/a/b/f"}}, "/a"},
		{[]ImportedNode{{Path: "/a/b/c/g"}, {Path: "/h"}}, "/"},
		{[]ImportedNode{{Path: "/a/b/c/e/deep"}}, "/a/b/c/e/deep"},
	} {
		r := h.do(0, &ImportNodes{Nodes: c.nodes})
		if r.Err != zkproto.ErrOK {
			t.Fatalf("import %v: %+v", c.nodes, r)
		}
		rec := last()
		if rec.Zxid != r.Zxid || len(rec.Changes) != 1 || rec.Changes[0].Type != ChangeImported || rec.Changes[0].Path != c.want {
			t.Fatalf("import %v: record %+v at %d, want one ChangeImported %s at %d", c.nodes, rec.Changes, rec.Zxid, c.want, r.Zxid)
		}
	}
	r := h.do(0, &ImportNodes{Merge: true, Nodes: []ImportedNode{{Path: "/a"}, {Path: "/h"}}})
	if rec := last(); r.Err != zkproto.ErrOK || rec.Zxid == r.Zxid {
		t.Fatalf("a merge that created nothing: %+v, record %+v", r, rec)
	}
}

// A duplicate in a batch fails it with NodeExists, whatever the order of
// the names around it (children of a parent that had none are not looked
// up while their names increase); so does a node an earlier batch made,
// and a batch that comes back to a parent it left.
func TestImportDuplicatesInABatch(t *testing.T) {
	h := newHarness(t, Config{})
	for _, c := range []struct {
		paths []string
		dup   string
	}{
		{[]string{"/p", "/p/b", "/p/a", "/p/b"}, "/p/b"},
		{[]string{"/q", "/q/a", "/q/b", "/q/a"}, "/q/a"},
		{[]string{"/r", "/r/a", "/r/a"}, "/r/a"},
		{[]string{"/s", "/s/a", "/s/a/x", "/s/b", "/s/a"}, "/s/a"},
		{[]string{"/t", "/t/a", "/u", "/t/a"}, "/t/a"},
	} {
		var nodes []ImportedNode
		for _, p := range c.paths {
			nodes = append(nodes, ImportedNode{Path: p})
		}
		r := h.do(0, &ImportNodes{Nodes: nodes})
		if r.Err != zkproto.ErrNodeExists || r.Path != c.dup || h.exists(c.paths[0]) {
			t.Fatalf("import %v: %+v (want NodeExists at %s, nothing applied)", c.paths, r, c.dup)
		}
		if r := h.do(0, &ImportNodes{Merge: true, Nodes: nodes}); r.Err != zkproto.ErrNodeExists || r.Path != c.dup {
			t.Fatalf("merge of %v: %+v (a duplicate within the batch is still one)", c.paths, r)
		}
	}
	if r := h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/v"}, {Path: "/v/a"}, {Path: "/v/c"}}}); r.Err != zkproto.ErrOK {
		t.Fatalf("import: %+v", r)
	}
	if r := h.do(0, &ImportNodes{Nodes: []ImportedNode{{Path: "/v/b"}, {Path: "/v/c"}}}); r.Err != zkproto.ErrNodeExists || r.Path != "/v/c" || h.exists("/v/b") {
		t.Fatalf("import over an earlier batch's node: %+v", r)
	}
	if r := h.do(0, &ImportNodes{Merge: true, Nodes: []ImportedNode{{Path: "/v/b"}, {Path: "/v/c"}, {Path: "/v/d"}}}); r.Err != zkproto.ErrOK || !h.exists("/v/b") || !h.exists("/v/d") {
		t.Fatalf("merge over an earlier batch's node: %+v", r)
	}
	if st := h.stat("/v"); st.NumChildren != 4 {
		t.Fatalf("/v has %d children, want 4", st.NumChildren)
	}
}
