package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/internal/freeport"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/zkproto"
)

// freeTenantPort returns a port free on every one of hosts a moment ago
// (a tenant's port is opened on each node's client host), drawn below the
// kernel's ephemeral range so no other connection takes it meanwhile.
func freeTenantPort(t *testing.T, hosts ...string) int {
	t.Helper()
	port, err := freeport.Pick(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// tenantHosts gives node i of a test cluster its own loopback address, so
// that every node can open a tenant's port.
func tenantHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("127.0.0.%d", i+1)
	}
	return hosts
}

func startTenantCluster(t *testing.T, n int) ([]*Server, []string) {
	t.Helper()
	hosts := tenantHosts(n)
	servers := startClusterWith(t, n, 100*time.Millisecond, func(c *Config) {
		c.ClientAddr = hosts[c.ReplicaID-1] + ":0"
	})
	return servers, hosts
}

func connectZK(t *testing.T, addr string) (*gozk.Conn, <-chan gozk.Event) {
	t.Helper()
	zc, ev, err := gozk.Connect([]string{addr}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	deadline := time.Now().Add(20 * time.Second)
	for zc.State() != gozk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session at %s (state %v)", addr, zc.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return zc, ev
}

// waitTenantServing waits until every server serves tenant name at
// host:port and a client can open a session there.
func waitTenantServing(t *testing.T, servers []*Server, hosts []string, name string, port int) {
	t.Helper()
	for i, s := range servers {
		want := net.JoinHostPort(hosts[i], strconv.Itoa(port))
		eventually(t, 30*time.Second, fmt.Sprintf("node %d serving tenant %s at %s", i+1, name, want), func() bool {
			return s.TenantAddr(name) == want && s.Tenant(name).Serving()
		})
	}
}

// tenantLeader returns the index of the server leading a tenant's shard.
func tenantLeader(t *testing.T, servers []*Server, name string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range servers {
			if n := s.Tenant(name); n != nil && n.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no leader of tenant %s", name)
	return -1
}

func TestTenantsAreIsolatedAndServedOnEveryNode(t *testing.T) {
	servers, hosts := startTenantCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	portA := freeTenantPort(t, hosts...)
	portB := freeTenantPort(t, hosts...)
	// Created through a follower: the registry is proposed like any write.
	via := servers[(leaderOf(t, servers)+1)%3]
	a, err := via.CreateTenant(ctx, TenantRequest{Name: "alpha", Port: portA})
	if err != nil {
		t.Fatal(err)
	}
	if a.Shard < 2 || len(a.Replicas) != 3 {
		t.Fatalf("tenant alpha: %+v; want a shard of its own on all three nodes", a)
	}
	if _, err := via.CreateTenant(ctx, TenantRequest{Name: "beta", Port: portB}); err != nil {
		t.Fatal(err)
	}
	if _, err := via.CreateTenant(ctx, TenantRequest{Name: "alpha", Port: portA + 1}); !errors.Is(err, node.ErrTenantExists) {
		t.Fatalf("second create of alpha: %v; want ErrTenantExists", err)
	}
	if _, err := via.CreateTenant(ctx, TenantRequest{Name: "gamma", Port: portA}); !errors.Is(err, node.ErrTenantConflict) {
		t.Fatalf("create on alpha's port: %v; want ErrTenantConflict", err)
	}
	waitTenantServing(t, servers, hosts, "alpha", portA)
	waitTenantServing(t, servers, hosts, "beta", portB)

	// One client of each tenant, on different nodes, one of the default.
	ca, evA := connectZK(t, servers[0].TenantAddr("alpha"))
	cb, _ := connectZK(t, servers[2].TenantAddr("beta"))
	cd, _ := connectZK(t, servers[1].ClientAddr())
	acl := gozk.WorldACL(gozk.PermAll)

	// Data: the same path, each tenant its own value; the default sees neither.
	for _, c := range []struct {
		zc   *gozk.Conn
		data string
	}{{ca, "A"}, {cb, "B"}} {
		if _, err := c.zc.Create("/same", []byte(c.data), 0, acl); err != nil {
			t.Fatalf("create /same (%s): %v", c.data, err)
		}
	}
	if got, _, err := ca.Get("/same"); err != nil || string(got) != "A" {
		t.Fatalf("alpha's /same = %q, %v", got, err)
	}
	if got, _, err := cb.Get("/same"); err != nil || string(got) != "B" {
		t.Fatalf("beta's /same = %q, %v", got, err)
	}
	if ok, _, err := cd.Exists("/same"); err != nil || ok {
		t.Fatalf("the default tenant sees /same: %v %v", ok, err)
	}
	// A tenant's zxids are its own: writes in alpha do not move beta's.
	_, before, _ := cb.Get("/same")
	for i := range 20 {
		if _, err := ca.Create(fmt.Sprintf("/same-%d", i), nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	p, err := cb.Create("/after", nil, 0, acl)
	if err != nil {
		t.Fatal(p, err)
	}
	if _, after, _ := cb.Get("/after"); after.Czxid != before.Czxid+1 {
		t.Fatalf("beta's next write has zxid %d after %d: another tenant's writes consumed its zxids", after.Czxid, before.Czxid)
	}

	// Sequential counters are per tenant.
	for _, zc := range []*gozk.Conn{ca, cb} {
		p, err := zc.Create("/same/seq-", nil, gozk.FlagSequence, acl)
		if err != nil || p != "/same/seq-0000000000" {
			t.Fatalf("first sequential child %q, %v; want each tenant's counter at 0", p, err)
		}
	}

	// Watches: a change in beta does not fire alpha's watch; one in alpha does.
	_, _, wa, err := ca.GetW("/same")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Set("/same", []byte("B2"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-wa:
		t.Fatalf("alpha's watch fired on beta's change: %+v", ev)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := ca.Set("/same", []byte("A2"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-wa:
		if ev.Type != gozk.EventNodeDataChanged || ev.Path != "/same" {
			t.Fatalf("alpha's watch: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("alpha's watch did not fire on alpha's change")
	}

	// Ephemerals and sessions: dump on a tenant's port lists its own.
	if _, err := ca.Create("/eph-a", nil, gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Create("/eph-b", nil, gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	// dump lists ephemerals on the tenant's leader, as ZooKeeper's.
	dumpA := fourLetterWord(t, servers[tenantLeader(t, servers, "alpha")].TenantAddr("alpha"), "dump")
	dumpB := fourLetterWord(t, servers[tenantLeader(t, servers, "beta")].TenantAddr("beta"), "dump")
	sidA, sidB := "0x"+strconv.FormatInt(ca.SessionID(), 16), "0x"+strconv.FormatInt(cb.SessionID(), 16)
	if !strings.Contains(dumpA, "/eph-a") || strings.Contains(dumpA, "/eph-b") || !strings.Contains(dumpA, sidA) {
		t.Fatalf("alpha's dump does not list exactly its own ephemerals:\n%s", dumpA)
	}
	if !strings.Contains(dumpB, "/eph-b") || strings.Contains(dumpB, "/eph-a") || !strings.Contains(dumpB, sidB) {
		t.Fatalf("beta's dump does not list exactly its own ephemerals:\n%s", dumpB)
	}
	// A session id of one tenant means nothing in another.
	if n := servers[0].Tenant("beta").SessionCount(); n != 1 {
		t.Fatalf("beta tracks %d sessions, want its one", n)
	}
	// srvr on a tenant's port answers for that tenant.
	if out := fourLetterWord(t, servers[0].TenantAddr("alpha"), "srvr"); !strings.Contains(out, "Node count:") {
		t.Fatalf("srvr on alpha's port:\n%s", out)
	}
	_ = evA

	// Delete refuses while sessions are open, then removes the data on
	// every node when forced.
	if err := servers[0].DeleteTenant(ctx, "alpha", false); !errors.Is(err, ErrTenantBusy) {
		t.Fatalf("delete of alpha with a session open: %v; want ErrTenantBusy", err)
	}
	if err := servers[0].DeleteTenant(ctx, "alpha", true); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d dropping alpha", i+1), func() bool {
			return s.TenantAddr("alpha") == ""
		})
		dir := node.TenantDir(s.Config().DataDir, a.Shard)
		eventually(t, 30*time.Second, fmt.Sprintf("node %d removing alpha's data", i+1), func() bool {
			_, err := os.Stat(dir)
			return os.IsNotExist(err) && !s.Node().HostsShardData(a.Shard)
		})
	}
	// Beta still serves.
	if got, _, err := cb.Get("/same"); err != nil || string(got) != "B2" {
		t.Fatalf("beta after alpha's delete: %q, %v", got, err)
	}
	list, err := servers[1].Tenants()
	if err != nil || len(list) != 1 || list[0].Name != "beta" || !list[0].Hosted || list[0].Sessions != 1 {
		t.Fatalf("tenant list after the delete: %+v, %v", list, err)
	}
}

func TestTenantRegistrySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	peer := freeAddr(t)
	port := freeTenantPort(t, "127.0.0.1")
	cfg := Config{DataDir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: peer, AdminDisabled: true, FourLetterWords: []string{"*"}}
	start := func() *Server {
		s, err := New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "kept", Port: port}); err != nil {
		s.Stop()
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "kept", port)
	zc, _ := connectZK(t, s.TenantAddr("kept"))
	if _, err := zc.Create("/kept", []byte("v"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	zc.Close()
	s.Stop()

	s = start()
	defer s.Stop()
	// The tenant is back before the node says it listens.
	if s.TenantAddr("kept") == "" {
		t.Fatal("the tenant is not served right after the restart")
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "kept", port)
	zc, _ = connectZK(t, s.TenantAddr("kept"))
	if got, _, err := zc.Get("/kept"); err != nil || string(got) != "v" {
		t.Fatalf("/kept after the restart: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tenants")); err != nil {
		t.Fatal(err)
	}
}

func TestNativeAPIServesTenants(t *testing.T) {
	s, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port := freeTenantPort(t, "127.0.0.1")
	p32 := int32(port)
	// The registry through the native API.
	created, err := nc.CreateTenant(ctx, &zkbridgev1.TenantSettings{Name: "fluss", Port: &p32})
	if err != nil || created.Shard != 2 || created.Port != p32 {
		t.Fatalf("native create: %+v %v", created, err)
	}
	_, err = nc.CreateTenant(ctx, &zkbridgev1.TenantSettings{Name: "fluss"})
	wantCode(t, "create of an existing tenant", err, codes.AlreadyExists)
	limit := int64(1000)
	if up, err := nc.UpdateTenant(ctx, &zkbridgev1.TenantSettings{Name: "fluss", MaxZnodes: &limit}); err != nil || up.MaxZnodes != limit || up.Port != p32 {
		t.Fatalf("native update (port kept): %+v %v", up, err)
	}
	_, err = nc.DeleteTenant(ctx, &zkbridgev1.DeleteTenantRequest{Name: "nosuch"})
	wantCode(t, "delete of an unknown tenant", err, codes.NotFound)
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "fluss", port)
	if ls, err := nc.ListTenants(ctx, &zkbridgev1.ListTenantsRequest{}); err != nil || len(ls.Tenants) != 1 || !ls.Tenants[0].Hosted {
		t.Fatalf("native list: %+v %v", ls, err)
	}
	tz, _ := connectZK(t, s.TenantAddr("fluss"))

	// A put naming the tenant lands in the tenant, not in the default.
	if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Tenant: "fluss", Path: "/cfg", Data: []byte("t"), ExpectedVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if got, err := nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "fluss", Path: "/cfg"}); err != nil || string(got.Data) != "t" {
		t.Fatalf("native get in the tenant: %+v %v", got, err)
	}
	_, err = nc.Get(ctx, &zkbridgev1.GetRequest{Path: "/cfg"})
	wantCode(t, "the default tenant's /cfg", err, codes.NotFound)
	if data, _, err := tz.Get("/cfg"); err != nil || string(data) != "t" {
		t.Fatalf("the tenant's ZooKeeper port: %q %v", data, err)
	}
	if ok, _, _ := zc.Exists("/cfg"); ok {
		t.Fatal("the default tenant's ZooKeeper port sees the tenant's /cfg")
	}
	_, err = nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "nosuch", Path: "/cfg"})
	wantCode(t, "unknown tenant", err, codes.InvalidArgument)

	// A lease of the tenant: its ephemeral is the tenant's, and a
	// keep-alive stream naming the tenant renews it.
	reg, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Tenant: "fluss", Group: "workers", MemberId: "w1", LeaseTtlMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ka, err := nc.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if err := ka.Send(&zkbridgev1.HeartbeatRequest{Tenant: "fluss", LeaseId: reg.Lease.Id}); err != nil {
			t.Fatal(err)
		}
		if r, err := ka.Recv(); err != nil || r.LeaseId != reg.Lease.Id {
			t.Fatalf("keep-alive in the tenant: %+v %v", r, err)
		}
	}
	_ = ka.CloseSend()
	if ok, st, err := tz.Exists("/workers/ids/w1"); err != nil || !ok || st.EphemeralOwner != reg.Lease.Id {
		t.Fatalf("the tenant's registration after 2.5 s of a 1 s lease with heartbeats: %v %+v %v", ok, st, err)
	}
	if ok, _, _ := zc.Exists("/workers/ids/w1"); ok {
		t.Fatal("the default tenant sees the tenant's registration")
	}
	_, err = nc.DeleteTenant(ctx, &zkbridgev1.DeleteTenantRequest{Name: "fluss"})
	wantCode(t, "delete with a lease and a session open", err, codes.FailedPrecondition)
	if _, err := nc.DeleteTenant(ctx, &zkbridgev1.DeleteTenantRequest{Name: "fluss", Force: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the deleted tenant's data gone", func() bool {
		_, err := os.Stat(node.TenantDir(s.Config().DataDir, 2))
		return os.IsNotExist(err) && !s.Node().HostsShardData(2)
	})
	_, err = nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "fluss", Path: "/cfg"})
	wantCode(t, "a deleted tenant", err, codes.InvalidArgument)
}

func TestTenantLimits(t *testing.T) {
	s := startTestServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, "127.0.0.1")
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "small", Port: port}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "small", port)
	base := s.Tenant("small").TreeStats().Nodes
	update := func(r TenantRequest) {
		t.Helper()
		r.Name, r.Port = "small", port
		if _, err := s.UpdateTenant(ctx, r); err != nil {
			t.Fatal(err)
		}
		// Applied by the reconcile the update pokes.
		eventually(t, 10*time.Second, "the new limits in force", func() bool {
			return s.tenants.get("small").spec.MaxZnodes == r.MaxZnodes && s.tenants.get("small").spec.MaxSessions == r.MaxSessions &&
				s.tenants.get("small").spec.MaxOpsPerSec == r.MaxOpsPerSec && s.tenants.get("small").spec.MaxBytes == r.MaxBytes
		})
	}
	update(TenantRequest{MaxZnodes: base + 2, MaxBytes: 100, MaxSessions: 1})
	door := func() *zk.Server { return s.tenants.get("small").door }
	zc, _ := connectZK(t, s.TenantAddr("small"))
	acl := gozk.WorldACL(gozk.PermAll)
	for _, p := range []string{"/a", "/b"} {
		if _, err := zc.Create(p, nil, 0, acl); err != nil {
			t.Fatalf("create %s within the limit: %v", p, err)
		}
	}
	// go-zookeeper has no name for QuotaExceeded (-125).
	quota := func(err error) bool { return err != nil && strings.Contains(err.Error(), "-125") }
	if _, err := zc.Create("/c", nil, 0, acl); !quota(err) {
		t.Fatalf("create past max znodes: %v; want QuotaExceeded", err)
	}
	if _, err := zc.Set("/a", make([]byte, 101), -1); !quota(err) {
		t.Fatalf("set past max bytes: %v; want QuotaExceeded", err)
	}
	if _, err := zc.Set("/a", make([]byte, 10), -1); err != nil {
		t.Fatalf("set within max bytes: %v", err)
	}
	if n := door().LimitCounts().QuotaExceeded; n != 2 {
		t.Fatalf("quota refusals counted %d, want 2", n)
	}
	// A second session is refused: the connection closes.
	nc, err := net.DialTimeout("tcp", s.TenantAddr("small"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	defer nc.Close()
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if !c.closed(10 * time.Second) {
		t.Fatal("a session past max sessions was not refused")
	}
	if n := door().LimitCounts().SessionsRefused; n != 1 {
		t.Fatalf("refused sessions counted %d, want 1", n)
	}
	// The rate limit holds requests back rather than failing them.
	update(TenantRequest{MaxOpsPerSec: 20})
	start := time.Now()
	for i := 0; i < 60; i++ {
		if _, _, err := zc.Get("/a"); err != nil {
			t.Fatal(err)
		}
	}
	// 60 requests at 20/s with a burst of 20: at least 2 s.
	if d := time.Since(start); d < 1900*time.Millisecond {
		t.Fatalf("60 requests at 20/s took %v", d)
	}
	if door().LimitCounts().Throttled == 0 {
		t.Fatal("no throttled request counted")
	}
	// Lifted limits: the create goes through.
	update(TenantRequest{})
	if _, err := zc.Create("/c", nil, 0, acl); err != nil {
		t.Fatalf("create without limits: %v", err)
	}
}

func TestTenantLeadersSpread(t *testing.T) {
	servers, hosts := startTenantCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := []string{"t1", "t2", "t3", "t4", "t5"}
	for _, name := range names {
		port := freeTenantPort(t, hosts...)
		if _, err := servers[0].CreateTenant(ctx, TenantRequest{Name: name, Port: port}); err != nil {
			t.Fatal(err)
		}
		waitTenantServing(t, servers, hosts, name, port)
	}
	// Six shards (the default's and five) on three nodes: two leaders each.
	var counts map[uint64]int
	eventually(t, 60*time.Second, "leaders spread two per node", func() bool {
		counts = map[uint64]int{}
		counts[servers[0].Node().Raft().LeaderID]++
		for _, name := range names {
			counts[servers[0].Tenant(name).Raft().LeaderID]++
		}
		return counts[1] == 2 && counts[2] == 2 && counts[3] == 2
	})
}

func TestNonHostingNodeForwardsATenantsClients(t *testing.T) {
	servers, hosts := startTenantCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, hosts...)
	info, err := servers[0].CreateTenant(ctx, TenantRequest{Name: "far", Port: port, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Replicas) != 1 {
		t.Fatalf("placed on %v, want one node", info.Replicas)
	}
	home := int(info.Replicas[0]) - 1
	away := (home + 1) % 3
	eventually(t, 30*time.Second, "the tenant served on its node and forwarded by the others", func() bool {
		for i, s := range servers {
			if s.TenantAddr("far") != net.JoinHostPort(hosts[i], strconv.Itoa(port)) {
				return false
			}
		}
		return servers[home].Tenant("far").Serving() && servers[away].Tenant("far") == nil
	})
	// A client of the non-hosting node: its session, watches and
	// ephemerals live on the hosting node, exactly as if it were its own.
	far, _ := connectZK(t, servers[away].TenantAddr("far"))
	near, _ := connectZK(t, servers[home].TenantAddr("far"))
	acl := gozk.WorldACL(gozk.PermAll)
	if _, err := far.Create("/x", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := far.GetW("/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := near.Set("/x", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w:
		if ev.Type != gozk.EventNodeDataChanged {
			t.Fatalf("watch through the forwarder: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch set through the forwarder did not fire")
	}
	if _, err := far.Create("/eph", nil, gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if ok, st, err := near.Exists("/eph"); err != nil || !ok || st.EphemeralOwner != far.SessionID() {
		t.Fatalf("the forwarded client's ephemeral: %v %+v %v", ok, st, err)
	}
	// Nothing of it in the default tenant of the forwarding node.
	if ok, _, err := gozkExists(t, servers[away].ClientAddr(), "/x"); err != nil || ok {
		t.Fatalf("the default tenant of the forwarding node has /x: %v %v", ok, err)
	}
	far.Close()
	eventually(t, 10*time.Second, "the forwarded session's ephemeral gone with its close", func() bool {
		ok, _, err := near.Exists("/eph")
		return err == nil && !ok
	})
	list, err := servers[away].Tenants()
	if err != nil || len(list) != 1 || list[0].Hosted {
		t.Fatalf("tenant list on the non-hosting node: %+v %v", list, err)
	}
}

func gozkExists(t *testing.T, addr, path string) (bool, *gozk.Stat, error) {
	zc, _ := connectZK(t, addr)
	defer zc.Close()
	return zc.Exists(path)
}

func TestTenantSecurePort(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("want")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, secure := freeTenantPort(t, "127.0.0.1"), freeTenantPort(t, "127.0.0.1")
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "tls", Port: plain, SecurePort: secure}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "tls", plain)
	// A TLS client on the tenant's secure port writes in the tenant; a
	// plain client of the tenant's port reads it; the default has nothing.
	c := dialTLS(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(secure)), f.clientConfig())
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/over-tls", Data: []byte("s"), ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create over the tenant's TLS port: %v", h.Err)
	}
	zc, _ := connectZK(t, s.TenantAddr("tls"))
	if data, _, err := zc.Get("/over-tls"); err != nil || string(data) != "s" {
		t.Fatalf("the tenant's plain port: %q %v", data, err)
	}
	if ok, _, err := gozkExists(t, s.ClientAddr(), "/over-tls"); err != nil || ok {
		t.Fatalf("the default tenant sees the tenant's znode: %v %v", ok, err)
	}
}
