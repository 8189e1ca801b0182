package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestQuotaStatsFollowTheSubtree(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	stats := func() string {
		t.Helper()
		v := h.view()
		defer v.Close()
		n, err := v.Get("/zookeeper/quota/q/zookeeper_stats")
		if err != nil {
			t.Fatal(err)
		}
		if n.Stat.Version != 0 {
			t.Fatalf("stats node version %d: the server rewrites it in place", n.Stat.Version)
		}
		return string(n.Data)
	}
	for _, p := range []string{"/q", "/q/a"} {
		wantErr(t, "create "+p, h.create(s, p, []byte("xy"), 0).Err, zkproto.ErrOK)
	}
	for _, p := range []string{"/zookeeper/quota/q"} {
		wantErr(t, "create "+p, h.create(s, p, nil, 0).Err, zkproto.ErrOK)
	}
	wantErr(t, "limits", h.create(s, "/zookeeper/quota/q/zookeeper_limits", []byte("count=10,bytes=-1"), 0).Err, zkproto.ErrOK)
	wantErr(t, "stats", h.create(s, "/zookeeper/quota/q/zookeeper_stats", []byte("count=0,bytes=0"), 0).Err, zkproto.ErrOK)
	if got := stats(); got != "count=2,bytes=4" {
		t.Fatalf("stats after creation recount: %q", got)
	}
	wantErr(t, "child", h.create(s, "/q/a/b", []byte("hello"), 0).Err, zkproto.ErrOK)
	wantErr(t, "set", h.do(s, &SetData{Path: "/q/a", Data: []byte("x"), Version: -1}).Err, zkproto.ErrOK)
	if got := stats(); got != "count=3,bytes=8" {
		t.Fatalf("stats after create and set: %q", got)
	}
	// A failed multi leaves the stats alone; a node outside the quota too.
	h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/q/c", ACL: zkproto.OpenACLUnsafe()},
		&Delete{Path: "/nope", Version: -1},
	}})
	wantErr(t, "outside", h.create(s, "/qq", []byte("zz"), 0).Err, zkproto.ErrOK)
	wantErr(t, "delete", h.do(s, &Delete{Path: "/q/a/b", Version: -1}).Err, zkproto.ErrOK)
	if got := stats(); got != "count=2,bytes=3" {
		t.Fatalf("stats after delete: %q", got)
	}
	// Without a limits node the stats stop following.
	wantErr(t, "delquota", h.do(s, &Delete{Path: "/zookeeper/quota/q/zookeeper_limits", Version: -1}).Err, zkproto.ErrOK)
	wantErr(t, "after delquota", h.create(s, "/q/d", []byte("abc"), 0).Err, zkproto.ErrOK)
	if got := stats(); got != "count=2,bytes=3" {
		t.Fatalf("stats without a quota: %q", got)
	}
	if got := parseStatsTrack("count=1,bytes=2,extra=3").String(); got != "count=1,bytes=2,extra=3" {
		t.Fatalf("StatsTrack text %q", got)
	}
}

// The recount at the creation of a stats node scans the subtree through
// the batch: nodes created by earlier entries of the same Update count.
func TestQuotaRecountSeesEarlierEntriesOfItsUpdate(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	create := func(p, data string) *Command {
		return h.cmd(s, &Create{OpCode: zkproto.OpCreate2, Path: p, Data: []byte(data), ACL: open})
	}
	res := h.update(
		create("/q", "xy"),
		create("/q/a", "abc"),
		create("/q/a/b", "d"),
		create("/zookeeper/quota/q", ""),
		create("/zookeeper/quota/q/zookeeper_limits", "count=10,bytes=-1"),
		create("/zookeeper/quota/q/zookeeper_stats", "count=0,bytes=0"),
	)
	for _, r := range res {
		wantErr(t, "create", r.Err, zkproto.ErrOK)
	}
	v := h.view()
	defer v.Close()
	n, err := v.Get("/zookeeper/quota/q/zookeeper_stats")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(n.Data); got != "count=3,bytes=6" {
		t.Fatalf("stats recounted in the Update that created the subtree: %q, want count=3,bytes=6", got)
	}
}
