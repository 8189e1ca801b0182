package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// The four-letter words on a tenant's port of a node that does not host
// the tenant answer for the tenant (the hosting node's tenant door
// answers them through the forwarded connection): its znodes, sessions,
// ephemerals and watches, none of the default tenant's.
func TestTenantFourLetterWordsThroughAForwardingNode(t *testing.T) {
	servers, hosts := startTenantCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, hosts...)
	info, err := servers[0].CreateTenant(ctx, TenantRequest{Name: "far", Port: port, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	home := servers[int(info.Replicas[0])-1]
	away := servers[int(info.Replicas[0])%3]
	eventually(t, 30*time.Second, "the tenant served on its node and forwarded by another", func() bool {
		return home.Tenant("far") != nil && home.Tenant("far").Serving() && away.TenantAddr("far") != ""
	})
	// The default tenant gets znodes of its own, so that its answers differ.
	dz, _ := connectZK(t, away.ClientAddr())
	acl := gozk.WorldACL(gozk.PermAll)
	for i := range 5 {
		if _, err := dz.Create(fmt.Sprintf("/default-%d", i), nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	zc, _ := connectZK(t, away.TenantAddr("far"))
	if _, err := zc.Create("/far-eph", nil, gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := zc.GetW("/far-eph"); err != nil {
		t.Fatal(err)
	}
	addr := away.TenantAddr("far")
	// The counts match those of the tenant's port on its own node and
	// not the default tenant's (which has five znodes more).
	for _, w := range []struct{ word, line string }{{"srvr", "Node count:"}, {"mntr", "zk_znode_count"}, {"mntr", "zk_ephemerals_count"}} {
		got := lineOf(fourLetterWord(t, addr, w.word), w.line)
		direct := lineOf(fourLetterWord(t, home.TenantAddr("far"), w.word), w.line)
		def := lineOf(fourLetterWord(t, away.ClientAddr(), w.word), w.line)
		if got == "" || got != direct || got == def {
			t.Fatalf("%s %q through the forwarding node: %q; on the tenant's node %q, the default tenant's %q", w.word, w.line, got, direct, def)
		}
	}
	sid := fmt.Sprintf("0x%x", zc.SessionID())
	if out := fourLetterWord(t, addr, "dump"); !strings.Contains(out, sid) || !strings.Contains(out, "/far-eph") || strings.Contains(out, fmt.Sprintf("0x%x", dz.SessionID())) {
		t.Fatalf("dump through the forwarding node (want the tenant's session %s and /far-eph only):\n%s", sid, out)
	}
	if out := fourLetterWord(t, addr, "cons"); !strings.Contains(out, "sid="+sid) || strings.Contains(out, fmt.Sprintf("sid=0x%x", dz.SessionID())) {
		t.Fatalf("cons through the forwarding node (want the tenant's session %s only):\n%s", sid, out)
	}
	if out := fourLetterWord(t, addr, "wchc"); !strings.Contains(out, sid) || !strings.Contains(out, "/far-eph") {
		t.Fatalf("wchc through the forwarding node (want %s watching /far-eph):\n%s", sid, out)
	}
}

// lineOf is the first line of out that starts with prefix ("" if none).
func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
