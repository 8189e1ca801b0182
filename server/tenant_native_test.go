package server

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// Native requests for a tenant sent to a node that does not host it are
// proxied to one that does (unary calls and a keep-alive stream), and the
// tenant's limits hold for native writes as for ZooKeeper ones: znodes,
// sessions (leases) and the request rate, each answered
// RESOURCE_EXHAUSTED and counted with the tenant's other refusals.
func TestNativeTenantThroughANonHostingNodeWithLimits(t *testing.T) {
	hosts := tenantHosts(3)
	nativePort := freeTenantPort(t, hosts...)
	servers := startClusterWith(t, 3, 100*time.Millisecond, func(c *Config) {
		host := hosts[c.ReplicaID-1]
		c.ClientAddr = host + ":0"
		c.NativeAddr = net.JoinHostPort(host, strconv.Itoa(nativePort))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, hosts...)
	req := TenantRequest{Name: "far", Port: port, Replicas: 1}
	info, err := servers[0].CreateTenant(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	home := servers[int(info.Replicas[0])-1]
	away := servers[int(info.Replicas[0])%3]
	eventually(t, 30*time.Second, "the tenant served on its node", func() bool {
		return home.Tenant("far") != nil && home.Tenant("far").Serving() && away.TenantAddr("far") != ""
	})
	cc, err := grpc.NewClient(away.NativeAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	nc := zkbridgev1.NewBridgeClient(cc)

	// Proxied: a put and a get through the node without the tenant.
	if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Tenant: "far", Path: "/a", Data: []byte("x"), ExpectedVersion: -1}); err != nil {
		t.Fatalf("put through a non-hosting node: %v", err)
	}
	if got, err := nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "far", Path: "/a"}); err != nil || string(got.Data) != "x" {
		t.Fatalf("get through a non-hosting node: %+v %v", got, err)
	}
	if got := dataAt(t, home.TenantAddr("far"), "/a"); got != "x" {
		t.Fatalf("the tenant's /a on its node: %q", got)
	}
	if got := dataAt(t, away.ClientAddr(), "/a"); got != "" {
		t.Fatalf("the forwarding node's default tenant has /a: %q", got)
	}
	// A lease and its keep-alive stream, proxied.
	reg, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Tenant: "far", Group: "workers", MemberId: "w1", LeaseTtlMs: 5000})
	if err != nil {
		t.Fatalf("register through a non-hosting node: %v", err)
	}
	ka, err := nc.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ka.Send(&zkbridgev1.HeartbeatRequest{Tenant: "far", LeaseId: reg.Lease.Id}); err != nil {
			t.Fatal(err)
		}
		if r, err := ka.Recv(); err != nil || r.LeaseId != reg.Lease.Id {
			t.Fatalf("keep-alive through a non-hosting node: %+v %v", r, err)
		}
	}
	_ = ka.CloseSend()
	// The change feed, a server stream, proxied: /a's creation comes, and
	// the caller's deadline ends the stream (through both hops).
	start := time.Now()
	fctx, fcancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer fcancel()
	feed, err := nc.FetchMetadata(fctx, &zkbridgev1.FetchMetadataRequest{Tenant: "far", Prefixes: []string{"/a"}, MaxWaitMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	first, err := feed.Recv()
	if err != nil || len(first.Records) == 0 {
		t.Fatalf("the change feed through a non-hosting node: %+v %v", first, err)
	}
	for err == nil {
		_, err = feed.Recv()
	}
	if status.Code(err) != codes.DeadlineExceeded || time.Since(start) > 10*time.Second {
		t.Fatalf("the proxied feed ended with %v after %v; want DeadlineExceeded at its 800 ms deadline", err, time.Since(start))
	}

	// Limits: room for two more znodes, one session (the lease has it).
	door := func() *tenant { return home.tenants.get("far") }
	req.Replicas = 0
	req.MaxZnodes, req.MaxSessions = home.Tenant("far").TreeStats().Nodes+2, 1
	setLimits := func() {
		t.Helper()
		if _, err := servers[0].UpdateTenant(ctx, req); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the limits in force", func() bool {
			l := door().door.LimitsOf()
			return l.MaxZnodes == req.MaxZnodes && l.MaxSessions == req.MaxSessions && l.MaxOpsPerSec == req.MaxOpsPerSec
		})
	}
	setLimits()
	for _, p := range []string{"/b", "/c"} {
		if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Tenant: "far", Path: p, ExpectedVersion: -1}); err != nil {
			t.Fatalf("put %s within the limit: %v", p, err)
		}
	}
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Tenant: "far", Path: "/d", ExpectedVersion: -1})
	wantCode(t, "put past max-znodes", err, codes.ResourceExhausted)
	_, err = nc.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{Tenant: "far", CounterPath: "/ids", Count: 1})
	wantCode(t, "allocate-id creating its counter past max-znodes", err, codes.ResourceExhausted)
	if n := door().door.LimitCounts().QuotaExceeded; n != 2 {
		t.Fatalf("quota refusals counted %d, want 2", n)
	}
	_, err = nc.Register(ctx, &zkbridgev1.RegisterRequest{Tenant: "far", Group: "workers", MemberId: "w2", LeaseTtlMs: 5000})
	wantCode(t, "a second lease past max-sessions", err, codes.ResourceExhausted)
	if n := door().door.LimitCounts().SessionsRefused; n != 1 {
		t.Fatalf("refused sessions counted %d, want 1", n)
	}

	// The rate: 5/s with a second's burst; heartbeats are never held.
	req.MaxOpsPerSec = 5
	setLimits()
	results := make(chan error, 20)
	for range 20 { // at once: the burst (5) passes, most of the rest not
		go func() {
			_, err := nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "far", Path: "/a"})
			results <- err
		}()
	}
	refused := 0
	for range 20 {
		if err := <-results; status.Code(err) == codes.ResourceExhausted {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nc.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{Tenant: "far", LeaseId: reg.Lease.Id}); err != nil {
		t.Fatalf("a heartbeat under the rate limit: %v", err)
	}
	if refused < 5 || door().door.LimitCounts().Throttled < int64(refused) {
		t.Fatalf("%d of 20 gets at once refused past 5/s (throttled counted %d)", refused, door().door.LimitCounts().Throttled)
	}
}
