package sm

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

func digestID(user, pass string) zkproto.Id {
	sum := sha1.Sum([]byte(user + ":" + pass))
	return zkproto.Id{Scheme: "digest", ID: user + ":" + base64.StdEncoding.EncodeToString(sum[:])}
}

func TestSpecialNodes(t *testing.T) {
	h := newHarness(t, Config{})
	v := h.view()
	root, _ := v.Exists("/")
	if root.Cversion != -1 || root.NumChildren != 1 || root.Czxid != 0 {
		t.Fatalf("root stat %+v", root)
	}
	zk, _ := v.Exists("/zookeeper")
	if zk.Cversion != -2 || zk.NumChildren != 2 {
		t.Fatalf("/zookeeper stat %+v", zk)
	}
	cfg, err := v.Get("/zookeeper/config")
	if err != nil || cfg.Stat.Aversion != -1 || !reflect.DeepEqual(cfg.ACL, worldR) || cfg.Data == nil || len(cfg.Data) != 0 {
		t.Fatalf("/zookeeper/config %+v %v", cfg, err)
	}
	if n, _ := v.AllChildrenNumber("/"); n != 3 {
		t.Fatalf("getAllChildrenNumber / = %d, want 3", n)
	}
	names, _, _ := v.Children("/zookeeper")
	if !reflect.DeepEqual(names, []string{"config", "quota"}) {
		t.Fatalf("children /zookeeper %v", names)
	}
	v.Close()
	s := h.newSession()
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		wantErr(t, "delete "+p, h.do(s, &Delete{Path: p, Version: -1}).Err, zkproto.ErrBadArguments)
	}
	wantErr(t, "create /zookeeper/foo", h.create(s, "/zookeeper/foo", nil, 0).Err, zkproto.ErrOK)
	wantErr(t, "setData config", h.do(s, &SetData{Path: "/zookeeper/config", Data: []byte("x"), Version: -1}).Err, zkproto.ErrNoAuth)
	wantErr(t, "create /", h.create(s, "/", nil, 0).Err, zkproto.ErrNodeExists)
}

func TestCreateStatAndEvents(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	r := h.create(s, "/a", []byte("hello"), 0)
	wantErr(t, "create", r.Err, zkproto.ErrOK)
	if r.Zxid != int64(h.index) || r.Path != "/a" {
		t.Fatalf("result %+v, index %d", r, h.index)
	}
	st := *r.Stat
	want := zkproto.Stat{Czxid: r.Zxid, Mzxid: r.Zxid, Pzxid: r.Zxid, Ctime: h.now, Mtime: h.now, DataLength: 5}
	if st != want {
		t.Fatalf("stat %+v want %+v", st, want)
	}
	if !reflect.DeepEqual(r.Events, []Event{{zkproto.EventNodeCreated, "/a", r.Zxid, openACL}, {zkproto.EventNodeChildrenChanged, "/", r.Zxid, openACL}}) {
		t.Fatalf("events %+v", r.Events)
	}
	root := h.stat("/")
	if root.Pzxid != r.Zxid || root.NumChildren != 2 || root.Cversion != 0 {
		t.Fatalf("root after create %+v", root)
	}
	// Failed writes consume zxids.
	r1 := h.create(s, "/a", nil, 0)
	r2 := h.create(s, "/nope/x", nil, 0)
	wantErr(t, "dup", r1.Err, zkproto.ErrNodeExists)
	wantErr(t, "no parent", r2.Err, zkproto.ErrNoNode)
	if r2.Zxid != r1.Zxid+1 || r1.Zxid != r.Zxid+1 {
		t.Fatalf("zxids %d %d %d", r.Zxid, r1.Zxid, r2.Zxid)
	}
	if len(r1.Events) != 0 {
		t.Fatalf("failed create produced events %+v", r1.Events)
	}
	if v := h.view(); true {
		got, _ := v.Get("/a")
		if !bytes.Equal(got.Data, []byte("hello")) || !reflect.DeepEqual(got.ACL, open) {
			t.Fatalf("get /a %+v", got)
		}
		if z, _ := v.LastZxid(); z != r2.Zxid {
			t.Fatalf("last zxid %d want %d", z, r2.Zxid)
		}
		v.Close()
	}
}

func TestCreateErrors(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/p")
	eph := h.create(s, "/eph", nil, int32(zkproto.ModeEphemeral))
	wantErr(t, "eph", eph.Err, zkproto.ErrOK)
	cases := []struct {
		name string
		op   *Create
		want zkproto.ErrCode
	}{
		{"bad flags", &Create{OpCode: zkproto.OpCreate, Path: "/x", ACL: open, Flags: 7}, zkproto.ErrBadArguments},
		{"no slash", &Create{OpCode: zkproto.OpCreate, Path: "x", ACL: open}, zkproto.ErrBadArguments},
		{"nul", &Create{OpCode: zkproto.OpCreate, Path: "/p/a\x00b", ACL: open}, zkproto.ErrBadArguments},
		{"trailing slash non-seq", &Create{OpCode: zkproto.OpCreate, Path: "/p/", ACL: open}, zkproto.ErrBadArguments},
		{"trailing slash missing parent", &Create{OpCode: zkproto.OpCreate, Path: "/nope/x/", ACL: open}, zkproto.ErrNoNode},
		{"dot segment", &Create{OpCode: zkproto.OpCreate, Path: "/p/..", ACL: open}, zkproto.ErrBadArguments},
		{"empty acl", &Create{OpCode: zkproto.OpCreate, Path: "/p/x", ACL: nil}, zkproto.ErrInvalidACL},
		{"invalid acl before no parent", &Create{OpCode: zkproto.OpCreate, Path: "/nope/x", ACL: nil}, zkproto.ErrInvalidACL},
		{"exists before ephemeral parent", &Create{OpCode: zkproto.OpCreate, Path: "/eph", ACL: open}, zkproto.ErrNodeExists},
		{"child of ephemeral", &Create{OpCode: zkproto.OpCreate, Path: "/eph/c", ACL: open}, zkproto.ErrNoChildrenForEphemerals},
		{"op21 ttl 0", &Create{OpCode: zkproto.OpCreateTTL, Path: "/t", ACL: open, Flags: 5, TTL: 0}, zkproto.ErrBadArguments},
		{"op21 ttl too big", &Create{OpCode: zkproto.OpCreateTTL, Path: "/t", ACL: open, Flags: 5, TTL: zkproto.MaxTTL + 1}, zkproto.ErrBadArguments},
		{"op21 flag 0", &Create{OpCode: zkproto.OpCreateTTL, Path: "/t", ACL: open, Flags: 0, TTL: 100}, zkproto.ErrBadArguments},
		{"op1 flag 5", &Create{OpCode: zkproto.OpCreate, Path: "/t", ACL: open, Flags: 5}, zkproto.ErrBadArguments},
		{"unknown opcode", &Create{OpCode: zkproto.OpSetData, Path: "/t", ACL: open}, zkproto.ErrUnimplemented},
	}
	for _, c := range cases {
		wantErr(t, c.name, h.do(s, c.op).Err, c.want)
	}
	// NoAuth on the parent comes after NoNode and before NodeExists.
	alice := digestID("alice", "pw")
	sa := h.newSession(alice)
	r := h.do(sa, &Create{OpCode: zkproto.OpCreate, Path: "/priv", ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: alice}}})
	wantErr(t, "create priv", r.Err, zkproto.ErrOK)
	h.do(sa, &Create{OpCode: zkproto.OpCreate, Path: "/priv/c", ACL: open})
	wantErr(t, "noauth", h.create(s, "/priv/c", nil, 0).Err, zkproto.ErrNoAuth)

	hd := newHarness(t, Config{DisableTTL: true})
	s2 := hd.newSession()
	wantErr(t, "ttl disabled", hd.do(s2, &Create{OpCode: zkproto.OpCreateTTL, Path: "/t", ACL: open, Flags: 5, TTL: 10}).Err, zkproto.ErrUnimplemented)
}

func TestSequentialAndCversion(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/seq")
	h.mustCreate(s, "/seq/a")
	wantErr(t, "delete", h.do(s, &Delete{Path: "/seq/a", Version: -1}).Err, zkproto.ErrOK)
	r1 := h.create(s, "/seq/", nil, int32(zkproto.ModePersistentSequential))
	r2 := h.create(s, "/seq/x-", nil, int32(zkproto.ModeEphemeralSequential))
	if r1.Path != "/seq/0000000001" || r2.Path != "/seq/x-0000000002" {
		t.Fatalf("paths %q %q", r1.Path, r2.Path)
	}
	st := h.stat("/seq")
	if st.Cversion != 4 || st.NumChildren != 2 || st.Pzxid != r2.Zxid {
		t.Fatalf("/seq stat %+v", st)
	}
	if r2.Stat.EphemeralOwner != s {
		t.Fatalf("ephemeralOwner %d want %d", r2.Stat.EphemeralOwner, s)
	}
	// Sequential create of "/" goes under the root.
	r := h.create(s, "/", nil, int32(zkproto.ModePersistentSequential))
	if r.Err != zkproto.ErrOK || !strings.HasPrefix(r.Path, "/00000000") {
		t.Fatalf("create -s / → %+v", r)
	}
}

func TestNullVsEmptyData(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.create(s, "/null", nil, 0)
	h.create(s, "/empty", []byte{}, 0)
	v := h.view()
	n, _ := v.Get("/null")
	e, _ := v.Get("/empty")
	if n.Data != nil || e.Data == nil || n.Stat.DataLength != 0 || e.Stat.DataLength != 0 {
		t.Fatalf("null %#v empty %#v", n.Data, e.Data)
	}
	v.Close()
	h.do(s, &SetData{Path: "/empty", Data: nil, Version: -1})
	h.do(s, &SetData{Path: "/null", Data: []byte{}, Version: -1})
	v = h.view()
	n, _ = v.Get("/null")
	e, _ = v.Get("/empty")
	if n.Data == nil || e.Data != nil {
		t.Fatalf("after set: null %#v empty %#v", n.Data, e.Data)
	}
}

func TestContainerAndTTLKinds(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	c := h.do(s, &Create{OpCode: zkproto.OpCreateContainer, Path: "/c", ACL: open, Flags: 0})
	wantErr(t, "container", c.Err, zkproto.ErrOK)
	tt := h.do(s, &Create{OpCode: zkproto.OpCreateTTL, Path: "/t", ACL: open, Flags: 5, TTL: 1000})
	wantErr(t, "ttl", tt.Err, zkproto.ErrOK)
	f4 := h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/f4", ACL: open, Flags: 4})
	wantErr(t, "op1 flag4", f4.Err, zkproto.ErrOK)
	for _, r := range []*Result{c, tt, f4} {
		if r.Stat.EphemeralOwner != 0 {
			t.Fatalf("%s ephemeralOwner %d", r.Path, r.Stat.EphemeralOwner)
		}
	}
	// Children under containers and TTL nodes are fine.
	h.mustCreate(s, "/c/x")
	h.mustCreate(s, "/t/x")
	h.mustCreate(s, "/f4/x")
	now := h.now + 10_000
	v := h.view()
	cs, ts, err := v.ReapCandidates(now, 0, 100)
	v.Close()
	if err != nil || len(cs) != 0 || len(ts) != 0 {
		t.Fatalf("candidates with children: %v %v %v", cs, ts, err)
	}
	reap := func(op Op, at int64) *Result {
		return h.update(&Command{Header: Header{Time: at}, Op: op})[0]
	}
	wantErr(t, "reap nonempty", reap(&ReapContainer{Path: "/c"}, now).Err, zkproto.ErrNotEmpty)
	wantErr(t, "reap non-container", reap(&ReapContainer{Path: "/f4"}, now).Err, zkproto.ErrBadVersion)
	wantErr(t, "reap missing", reap(&ReapContainer{Path: "/zz"}, now).Err, zkproto.ErrNoNode)
	for _, p := range []string{"/c/x", "/t/x", "/f4/x"} {
		wantErr(t, "delete "+p, h.do(s, &Delete{Path: p, Version: -1}).Err, zkproto.ErrOK)
	}
	v = h.view()
	cs, ts, _ = v.ReapCandidates(now, 0, 100)
	v.Close()
	if !reflect.DeepEqual(cs, []string{"/c"}) || !reflect.DeepEqual(ts, []string{"/t"}) {
		t.Fatalf("candidates %v %v", cs, ts)
	}
	// TTL counts from mtime: not yet expired at mtime+ttl.
	mt := h.stat("/t").Mtime
	wantErr(t, "ttl early", reap(&ReapTTL{Path: "/t"}, mt+1000).Err, zkproto.ErrBadVersion)
	r := reap(&ReapTTL{Path: "/t"}, mt+1001)
	wantErr(t, "ttl reap", r.Err, zkproto.ErrOK)
	if len(r.Events) != 2 || r.Events[0].Type != zkproto.EventNodeDeleted {
		t.Fatalf("reap events %+v", r.Events)
	}
	wantErr(t, "container reap", reap(&ReapContainer{Path: "/c"}, now).Err, zkproto.ErrOK)
	if h.exists("/c") || h.exists("/t") || !h.exists("/f4") {
		t.Fatal("wrong nodes reaped")
	}
	// A never-used container goes only with NeverUsedMs.
	h.do(s, &Create{OpCode: zkproto.OpCreateContainer, Path: "/c2", ACL: open, Flags: 4})
	mt = h.stat("/c2").Mtime
	wantErr(t, "never used", reap(&ReapContainer{Path: "/c2"}, mt+1e9).Err, zkproto.ErrBadVersion)
	wantErr(t, "never used, interval", reap(&ReapContainer{Path: "/c2", NeverUsedMs: 500}, mt+501).Err, zkproto.ErrOK)
}

func TestDelete(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/a")
	h.mustCreate(s, "/a/b")
	wantErr(t, "not empty", h.do(s, &Delete{Path: "/a", Version: -1}).Err, zkproto.ErrNotEmpty)
	wantErr(t, "bad version", h.do(s, &Delete{Path: "/a/b", Version: 3}).Err, zkproto.ErrBadVersion)
	wantErr(t, "no node", h.do(s, &Delete{Path: "/a/zz", Version: -1}).Err, zkproto.ErrNoNode)
	wantErr(t, "no parent", h.do(s, &Delete{Path: "/x/y", Version: -1}).Err, zkproto.ErrNoNode)
	wantErr(t, "no slash", h.do(s, &Delete{Path: "a", Version: -1}).Err, zkproto.ErrBadArguments)
	wantErr(t, "trailing", h.do(s, &Delete{Path: "/a/", Version: -1}).Err, zkproto.ErrNoNode)
	r := h.do(s, &Delete{Path: "/a/b", Version: 0})
	wantErr(t, "delete", r.Err, zkproto.ErrOK)
	st := h.stat("/a")
	if st.Pzxid != r.Zxid || st.Cversion != 2 || st.NumChildren != 0 {
		t.Fatalf("parent after delete %+v", st)
	}
	if !reflect.DeepEqual(r.Events, []Event{{zkproto.EventNodeDeleted, "/a/b", r.Zxid, openACL}, {zkproto.EventNodeChildrenChanged, "/a", r.Zxid, openACL}}) {
		t.Fatalf("events %+v", r.Events)
	}
	// DELETE permission is checked on the parent, before the node's existence.
	alice := digestID("alice", "pw")
	h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/locked", ACL: []zkproto.ACL{{Perms: zkproto.PermAll &^ zkproto.PermDelete, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: zkproto.PermAll, ID: alice}}})
	h.mustCreate(s, "/locked/c")
	wantErr(t, "noauth before nonode", h.do(s, &Delete{Path: "/locked/missing", Version: -1}).Err, zkproto.ErrNoAuth)
	wantErr(t, "noauth", h.do(s, &Delete{Path: "/locked/c", Version: -1}).Err, zkproto.ErrNoAuth)
	sa := h.newSession(alice)
	wantErr(t, "alice deletes", h.do(sa, &Delete{Path: "/locked/c", Version: -1}).Err, zkproto.ErrOK)
}

func TestSetData(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	c := h.create(s, "/a", []byte("1"), 0)
	r := h.do(s, &SetData{Path: "/a", Data: []byte("22"), Version: 0})
	wantErr(t, "set", r.Err, zkproto.ErrOK)
	if r.Stat.Version != 1 || r.Stat.Mzxid != r.Zxid || r.Stat.Czxid != c.Zxid || r.Stat.DataLength != 2 || r.Stat.Mtime != h.now {
		t.Fatalf("stat %+v", r.Stat)
	}
	if !reflect.DeepEqual(r.Events, []Event{{zkproto.EventNodeDataChanged, "/a", r.Zxid, openACL}}) {
		t.Fatalf("events %+v", r.Events)
	}
	wantErr(t, "bad version", h.do(s, &SetData{Path: "/a", Version: 0}).Err, zkproto.ErrBadVersion)
	wantErr(t, "no node", h.do(s, &SetData{Path: "/b", Version: -1}).Err, zkproto.ErrNoNode)
	wantErr(t, "bad path", h.do(s, &SetData{Path: "/a/", Version: -1}).Err, zkproto.ErrBadArguments)
	h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/ro", ACL: worldR})
	wantErr(t, "no auth", h.do(s, &SetData{Path: "/ro", Version: -1}).Err, zkproto.ErrNoAuth)
}

func TestSetACL(t *testing.T) {
	h := newHarness(t, Config{})
	alice := digestID("alice", "pw")
	sa := h.newSession(alice)
	s := h.newSession()
	c := h.create(s, "/a", []byte("x"), 0)
	r := h.do(s, &SetACL{Path: "/a", ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}, Version: 0})
	wantErr(t, "setacl", r.Err, zkproto.ErrOK)
	if r.Stat.Aversion != 1 || r.Stat.Mzxid != c.Zxid || r.Stat.Version != 0 || len(r.Events) != 0 {
		t.Fatalf("setACL result %+v", r)
	}
	wantErr(t, "bad aversion", h.do(s, &SetACL{Path: "/a", ACL: open, Version: 0}).Err, zkproto.ErrBadVersion)
	invalid := map[string][]zkproto.ACL{
		"empty":          nil,
		"world:foo":      {{Perms: 31, ID: zkproto.Id{Scheme: "world", ID: "foo"}}},
		"auth anonymous": {{Perms: 31, ID: zkproto.Id{Scheme: "auth", ID: ""}}},
		"digest no hash": {{Perms: 31, ID: zkproto.Id{Scheme: "digest", ID: "alice"}}},
		"digest trail":   {{Perms: 31, ID: zkproto.Id{Scheme: "digest", ID: "alice:"}}},
		"ip bad":         {{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "1.2.3.4/40"}}},
		"unknown":        {{Perms: 31, ID: zkproto.Id{Scheme: "sasl2", ID: "x"}}},
		"super":          {{Perms: 31, ID: zkproto.Id{Scheme: "super", ID: ""}}},
	}
	for name, acl := range invalid {
		wantErr(t, name, h.do(s, &SetACL{Path: "/a", ACL: acl, Version: -1}).Err, zkproto.ErrInvalidACL)
	}
	wantErr(t, "invalid acl before no node", h.do(s, &SetACL{Path: "/nope", Version: -1}).Err, zkproto.ErrInvalidACL)
	wantErr(t, "no node", h.do(s, &SetACL{Path: "/nope", ACL: open, Version: -1}).Err, zkproto.ErrNoNode)
	// auth expands to the caller's authenticated ids (not ip), dedup first.
	r = h.do(sa, &SetACL{Path: "/a", ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "auth"}}, {Perms: 31, ID: zkproto.Id{Scheme: "auth"}}}, Version: -1})
	wantErr(t, "auth", r.Err, zkproto.ErrOK)
	v := h.view()
	n, _ := v.Get("/a")
	v.Close()
	if !reflect.DeepEqual(n.ACL, []zkproto.ACL{{Perms: 31, ID: alice}}) {
		t.Fatalf("auth expansion %+v", n.ACL)
	}
	wantErr(t, "no admin", h.do(s, &SetACL{Path: "/a", ACL: open, Version: -1}).Err, zkproto.ErrNoAuth)
	wantErr(t, "no read", h.do(s, &Multi{Ops: []Op{&Check{Path: "/a", Version: -1}}}).Ops[0].Err, zkproto.ErrNoAuth)
	wantErr(t, "alice admin", h.do(sa, &SetACL{Path: "/a", ACL: open, Version: 2}).Err, zkproto.ErrOK)
}

func TestACLSchemes(t *testing.T) {
	superID := digestID("super", "secret")
	h := newHarness(t, Config{SuperDigest: superID.ID})
	s := h.newSession() // ip 127.0.0.1
	h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/ip", ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "127.0.0.0/8"}}}})
	h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/ip2", ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "10.0.0.1"}}}})
	wantErr(t, "ip match", h.do(s, &SetData{Path: "/ip", Version: -1}).Err, zkproto.ErrOK)
	wantErr(t, "ip mismatch", h.do(s, &SetData{Path: "/ip2", Version: -1}).Err, zkproto.ErrNoAuth)
	ss := h.newSession(superID)
	wantErr(t, "super digest", h.do(ss, &SetData{Path: "/ip2", Version: -1}).Err, zkproto.ErrOK)
	sx := h.newSession(zkproto.Id{Scheme: "super", ID: ""})
	wantErr(t, "super id", h.do(sx, &SetData{Path: "/ip2", Version: -1}).Err, zkproto.ErrOK)
	if CheckACL(nil, zkproto.PermAdmin, nil, "") != true {
		t.Fatal("empty ACL must allow")
	}
	if CheckACL([]zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}, zkproto.PermWrite, nil, "") {
		t.Fatal("read-only ACL allowed write")
	}
	// ZooKeeper 3.8's ip provider is IPv4 only: an IPv6 entry never matches
	if CheckACL([]zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "::1"}}}, 1, []zkproto.Id{{Scheme: "ip", ID: "::1"}}, "") {
		t.Fatal("ipv6 entry matched")
	}
	for expr, want := range map[string]bool{"127.0.0.1": true, "127.000.0.1/8": true, "+127.0.0.1": true,
		"127.0.0.1/": false, "127.0.0.1/33": false, "1.2.3": false, "256.1.1.1": false, "::1": false, "1.2.3.4.": false} {
		if validACLID("ip", expr) != want {
			t.Errorf("ip %q valid=%v, want %v", expr, !want, want)
		}
	}
}

func TestCheckOutsideMulti(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/a")
	wantErr(t, "check alone", h.do(s, &Check{Path: "/a", Version: -1}).Err, zkproto.ErrUnimplemented)
}

func TestMulti(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/m")
	r := h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/m/n-", ACL: open, Flags: 2},
		&Create{OpCode: zkproto.OpCreate2, Path: "/m/n-", ACL: open, Flags: 2},
		&SetData{Path: "/m", Data: []byte("v"), Version: 0},
		&Check{Path: "/m", Version: 1},
		&Create{OpCode: zkproto.OpCreateTTL, Path: "/m/t", ACL: open, Flags: 5, TTL: 5},
		&Delete{Path: "/m/n-0000000000", Version: -1},
	}})
	wantErr(t, "multi", r.Err, zkproto.ErrOK)
	types := []zkproto.OpCode{zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpSetData, zkproto.OpCheck, zkproto.OpCreate2, zkproto.OpDelete}
	for i, o := range r.Ops {
		if o.Type != types[i] || o.Err != zkproto.ErrOK {
			t.Fatalf("op %d: %+v", i, o)
		}
	}
	if r.Ops[0].Path != "/m/n-0000000000" || r.Ops[1].Path != "/m/n-0000000001" || r.Ops[2].Stat.Version != 1 {
		t.Fatalf("multi results %+v", r.Ops)
	}
	if len(r.Events) != 9 {
		t.Fatalf("events %+v", r.Events)
	}
	before, _ := h.s.ContentHash()
	r = h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/m/x", ACL: open},
		&Check{Path: "/m", Version: 7},
		&Delete{Path: "/m/t", Version: -1},
	}})
	wantErr(t, "failed multi header", r.Err, zkproto.ErrOK)
	want := []OpResult{{Type: zkproto.OpError, Err: zkproto.ErrOK}, {Type: zkproto.OpError, Err: zkproto.ErrBadVersion}, {Type: zkproto.OpError, Err: zkproto.ErrRuntimeInconsistency}}
	if !reflect.DeepEqual(r.Ops, want) || len(r.Events) != 0 {
		t.Fatalf("failed multi %+v events %+v", r.Ops, r.Events)
	}
	if h.exists("/m/x") {
		t.Fatal("failed multi was applied")
	}
	// Only the session's sequence number and the applied index moved.
	after, _ := h.s.ContentHash()
	if before == after {
		t.Fatal("content hash did not change at all (applied index should)")
	}
	// The next write of the session is accepted (seq advanced on failure).
	wantErr(t, "after failed multi", h.create(s, "/m/y", nil, 0).Err, zkproto.ErrOK)
	// Create and delete in one multi; sequential counter continues.
	r = h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/m/tmp", ACL: open},
		&Delete{Path: "/m/tmp", Version: 0},
		&Create{OpCode: zkproto.OpCreate, Path: "/m/n-", ACL: open, Flags: 2},
	}})
	if r.Ops[2].Path != "/m/n-0000000005" {
		t.Fatalf("seq after multi %+v", r.Ops)
	}
	// Empty multi.
	r = h.do(s, &Multi{})
	if r.Err != zkproto.ErrOK || len(r.Ops) != 0 {
		t.Fatalf("empty multi %+v", r)
	}
}

func TestSessions(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	other := h.newSession()
	h.mustCreate(s, "/app")
	e1 := h.create(s, "/app/e1", nil, int32(zkproto.ModeEphemeral))
	e2 := h.create(s, "/e2", nil, int32(zkproto.ModeEphemeralSequential))
	h.create(other, "/app/o", nil, int32(zkproto.ModeEphemeral))
	v := h.view()
	eph, _ := v.Ephemerals(s)
	info, err := v.Session(s)
	v.Close()
	if !reflect.DeepEqual(eph, []string{e1.Path, e2.Path}) {
		t.Fatalf("ephemerals %v", eph)
	}
	if err != nil || info.Timeout != 30000 || info.Conn != h.conn[s] || info.LastSeq != h.seq[s] {
		t.Fatalf("session %+v %v", info, err)
	}
	r := h.do(s, &CloseSession{})
	wantErr(t, "close", r.Err, zkproto.ErrOK)
	if len(r.Events) != 4 {
		t.Fatalf("close events %+v", r.Events)
	}
	if h.exists("/app/e1") || h.exists(e2.Path) || !h.exists("/app/o") {
		t.Fatal("ephemerals not removed")
	}
	app := h.stat("/app")
	if app.Pzxid != r.Zxid || app.NumChildren != 1 {
		t.Fatalf("/app after close %+v", app)
	}
	wantErr(t, "write after close", h.create(s, "/late", nil, int32(zkproto.ModeEphemeral)).Err, zkproto.ErrSessionExpired)
	wantErr(t, "unknown session", h.create(424242, "/x", nil, 0).Err, zkproto.ErrSessionExpired)
	// Expiry by the leader: no conn/seq.
	r = h.update(&Command{Header: Header{Session: other, Time: h.now}, Op: &CloseSession{Expired: true}})[0]
	wantErr(t, "expire", r.Err, zkproto.ErrOK)
	if h.exists("/app/o") {
		t.Fatal("expired session's ephemeral remains")
	}
	r = h.update(&Command{Header: Header{Session: other, Time: h.now}, Op: &CloseSession{Expired: true}})[0]
	wantErr(t, "expire twice", r.Err, zkproto.ErrSessionExpired)
}

func TestPrimaryOrder(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	conn := h.conn[s]
	mk := func(seq uint64, conn uint64, p string) *Command {
		return &Command{Header: Header{Session: s, Conn: conn, Seq: seq, Time: 1}, Op: &Create{OpCode: zkproto.OpCreate, Path: p, ACL: open}}
	}
	// A (seq 1) lost; B (seq 2) must not apply.
	r := h.update(mk(2, conn, "/b"))[0]
	if !r.OutOfOrder || r.Err != zkproto.ErrSessionMoved || h.exists("/b") {
		t.Fatalf("B overtook A: %+v", r)
	}
	rs := h.update(mk(1, conn, "/a"), mk(2, conn, "/b"), mk(2, conn, "/dup"))
	if rs[0].Err != 0 || rs[1].Err != 0 || !rs[2].OutOfOrder {
		t.Fatalf("in order: %+v %+v %+v", rs[0], rs[1], rs[2])
	}
	// Wrong connection → SessionMoved.
	r = h.update(mk(3, conn+1, "/c"))[0]
	if r.Err != zkproto.ErrSessionMoved || r.OutOfOrder {
		t.Fatalf("wrong conn: %+v", r)
	}
	// Reconnect elsewhere with the right password; seq restarts at 1.
	bad := h.update(&Command{Header: Header{Session: s, Conn: conn + 7}, Op: &SetSessionOwner{Owner: 2, Password: []byte("nope")}})[0]
	wantErr(t, "bad password", bad.Err, zkproto.ErrSessionExpired)
	ok := h.update(&Command{Header: Header{Session: s, Conn: conn + 7}, Op: &SetSessionOwner{Owner: 2, Password: []byte("0123456789abcdef")}})[0]
	wantErr(t, "move", ok.Err, zkproto.ErrOK)
	r = h.update(mk(3, conn, "/old"))[0]
	wantErr(t, "old conn after move", r.Err, zkproto.ErrSessionMoved)
	r = h.update(mk(1, conn+7, "/new"))[0]
	wantErr(t, "new conn", r.Err, zkproto.ErrOK)
	v := h.view()
	info, _ := v.Session(s)
	v.Close()
	if info.Owner != 2 || info.Conn != conn+7 || info.LastSeq != 1 {
		t.Fatalf("session after move %+v", info)
	}
}

func TestZxidBase(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	base := int64(5) << 32
	r := h.update(&Command{Op: &SetZxidBase{Base: base}})[0]
	if r.Err != 0 || r.Zxid != base+int64(h.index) {
		t.Fatalf("set base %+v", r)
	}
	c := h.create(s, "/a", nil, 0)
	if c.Zxid != base+int64(h.index) || c.Stat.Czxid != c.Zxid {
		t.Fatalf("zxid after base %+v", c)
	}
	wantErr(t, "lower", h.update(&Command{Op: &SetZxidBase{Base: 1}})[0].Err, zkproto.ErrBadArguments)
	if h.s.LastZxid() != base+int64(h.index) {
		t.Fatalf("LastZxid %d", h.s.LastZxid())
	}
	// Survives reopen.
	h.s.Close()
	s2 := New(Config{Dir: h.dir})
	idx, err := s2.Open(nil)
	if err != nil || idx != h.index || s2.LastZxid() != base+int64(h.index) || s2.zxidBase != base {
		t.Fatalf("reopen idx %d err %v last %d", idx, err, s2.LastZxid())
	}
	s2.Close()
}

func TestUnknownCommandVersionFails(t *testing.T) {
	h := newHarness(t, Config{})
	cmd := (&Command{Op: &SetZxidBase{}}).Encode()
	cmd[0] = 9
	_, err := h.s.Update([]sm.Entry{{Index: h.index + 1, Cmd: cmd}})
	if err == nil || !errors.Is(err, ErrUnknownCommandVersion) {
		t.Fatalf("err %v", err)
	}
	if h.s.AppliedIndex() != h.index {
		t.Fatal("applied index moved")
	}
	// Garbage of the right version is a deterministic MarshallingError.
	out, err := h.s.Update([]sm.Entry{{Index: h.index + 1, Cmd: []byte{CommandVersion, 0xff}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := DecodeResult(out[0].Result.Data)
	wantErr(t, "garbage", r.Err, zkproto.ErrMarshallingError)
}

func TestCommandRoundTrip(t *testing.T) {
	cmds := []*Command{
		{Header: Header{Session: 7, Conn: 3, Seq: 9, Time: 123, Auth: []zkproto.Id{{Scheme: "ip", ID: "1.2.3.4"}}}, Op: &Create{OpCode: 21, Path: "/a", Data: []byte{}, ACL: open, Flags: 5, TTL: 77}},
		{Op: &Create{OpCode: 1, Path: "/a", ACL: open}},
		{Op: &CreateSession{Timeout: 4000, Password: []byte("pw"), Owner: 3}},
		{Op: &CloseSession{Expired: true}},
		{Op: &SetSessionOwner{Owner: 2, Password: []byte("x")}},
		{Op: &Delete{Path: "/a", Version: -1}},
		{Op: &SetData{Path: "/a", Data: nil, Version: 3}},
		{Op: &SetACL{Path: "/a", ACL: worldR, Version: 1}},
		{Op: &Check{Path: "/a", Version: -1}},
		{Op: &Multi{Ops: []Op{&Check{Path: "/", Version: 1}, &Delete{Path: "/x", Version: 2}}}},
		{Op: &ReapContainer{Path: "/c", NeverUsedMs: 5}},
		{Op: &ReapTTL{Path: "/t"}},
		{Op: &SetZxidBase{Base: 1 << 33}},
	}
	for _, c := range cmds {
		b := c.Encode()
		got, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("%T: %v", c.Op, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip %T:\n got %#v\nwant %#v", c.Op, got, c)
		}
		for i := 1; i < len(b); i++ {
			if _, err := DecodeCommand(b[:i]); err == nil {
				t.Fatalf("%T: truncated at %d decoded", c.Op, i)
			}
		}
	}
}

func TestChangeLogRetention(t *testing.T) {
	h := newHarness(t, Config{ChangeLogMaxRecords: 5})
	s := h.newSession()
	var zx []int64
	for i := 0; i < 10; i++ {
		zx = append(zx, h.create(s, "/n"+string(rune('a'+i)), []byte("d"), 0).Zxid)
	}
	v := h.view()
	recs, trimmed, err := v.ChangeLog(0, 100)
	v.Close()
	if err != nil || len(recs) != 5 || recs[0].Zxid != zx[5] || trimmed != zx[4] {
		t.Fatalf("log %d recs, trimmed %d, err %v", len(recs), trimmed, err)
	}
	c := recs[4].Changes[0]
	if c.Type != ChangeCreated || c.Path != "/nj" || string(c.Data) != "d" || c.Stat.Czxid != zx[9] {
		t.Fatalf("change %+v", c)
	}
}

func TestRestartReplaysFromApplied(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	s := h.newSession()
	h.mustCreate(s, "/a")
	if err := h.s.Sync(); err != nil {
		t.Fatal(err)
	}
	idx := h.index
	h.s.Close()
	s2 := New(Config{Dir: dir})
	got, err := s2.Open(nil)
	if err != nil || got != idx {
		t.Fatalf("open: %d %v", got, err)
	}
	v, _ := s2.View()
	if _, err := v.Exists("/a"); err != nil {
		t.Fatal(err)
	}
	v.Close()
	s2.Close()
	if _, err := s2.View(); !errors.Is(err, ErrClosed) {
		t.Fatalf("view after close: %v", err)
	}
}
