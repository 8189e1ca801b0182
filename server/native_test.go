package server

import (
	"context"
	"encoding/binary"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// startNativeServer runs a one-node server with the native API on a free
// port, a short tick (leases of 400 ms and up), and returns a client of it
// and a ZooKeeper client of the same node.
func startNativeServer(t *testing.T) (*Server, zkbridgev1.BridgeClient, *gozk.Conn) {
	t.Helper()
	s := startTestServer(t, func(c *Config) {
		c.NativeAddr = "127.0.0.1:0"
		c.TickTime = 200 * time.Millisecond
	})
	cc, err := grpc.NewClient(s.NativeAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	zc, _, err := gozk.Connect([]string{s.ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	return s, zkbridgev1.NewBridgeClient(cc), zc
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: %v, want %v", what, err, code)
	}
}

func TestNativeKV(t *testing.T) {
	s, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	put, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/cfg", Data: []byte("v1"), ExpectedVersion: -1})
	if err != nil || !put.Created || put.Stat.Version != 0 {
		t.Fatalf("put /cfg: %+v %v", put, err)
	}
	// The ZooKeeper port sees the same znode.
	data, st, err := zc.Get("/cfg")
	if err != nil || string(data) != "v1" || st.Czxid != put.Stat.Czxid {
		t.Fatalf("ZooKeeper get /cfg: %q %+v %v", data, st, err)
	}
	if _, err := zc.Set("/cfg", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := nc.Get(ctx, &zkbridgev1.GetRequest{Path: "/cfg"})
	if err != nil || string(got.Data) != "v2" || got.Stat.Version != 1 || got.Zxid < got.Stat.Mzxid {
		t.Fatalf("native get after a ZooKeeper set: %+v %v", got, err)
	}
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/cfg", Data: []byte("stale"), ExpectedVersion: 0})
	wantCode(t, "put at a stale version", err, codes.Aborted)
	if p, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/cfg", Data: []byte("v3"), ExpectedVersion: 1}); err != nil || p.Stat.Version != 2 || p.Created {
		t.Fatalf("put at the current version: %+v %v", p, err)
	}
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/cfg", CreateOnly: true, ExpectedVersion: -1})
	wantCode(t, "create_only on an existing znode", err, codes.FailedPrecondition)
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/no/parent", ExpectedVersion: -1})
	wantCode(t, "put without a parent", err, codes.NotFound)
	for _, p := range []string{"a", "/a/", "/a//b", "/zookeeper/x\x00"} {
		_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: p, ExpectedVersion: -1})
		wantCode(t, "put "+p, err, codes.InvalidArgument)
	}
	_, err = nc.Get(ctx, &zkbridgev1.GetRequest{Tenant: "nosuch", Path: "/cfg"})
	wantCode(t, "unknown tenant", err, codes.InvalidArgument)
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/big", Data: make([]byte, s.Config().MaxBuffer+1), ExpectedVersion: -1})
	wantCode(t, "put over jute.maxbuffer", err, codes.InvalidArgument)

	for _, name := range []string{"b", "a"} {
		if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/cfg/" + name, ExpectedVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := nc.List(ctx, &zkbridgev1.ListRequest{Path: "/cfg", Serializable: true})
	if err != nil || len(ls.Children) != 2 || ls.Children[0] != "a" || ls.Stat.NumChildren != 2 {
		t.Fatalf("list /cfg: %+v %v", ls, err)
	}
	_, err = nc.Delete(ctx, &zkbridgev1.DeleteRequest{Path: "/cfg", ExpectedVersion: -1})
	wantCode(t, "delete a znode with children", err, codes.FailedPrecondition)
	if _, err := nc.Delete(ctx, &zkbridgev1.DeleteRequest{Path: "/cfg/a", ExpectedVersion: -1}); err != nil {
		t.Fatal(err)
	}
	_, err = nc.Get(ctx, &zkbridgev1.GetRequest{Path: "/cfg/a"})
	wantCode(t, "get a deleted znode", err, codes.NotFound)

	h, err := healthpb.NewHealthClient(grpcConnOf(t, s)).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}
	st2, err := nc.Status(ctx, &zkbridgev1.StatusRequest{})
	if err != nil || st2.Role != "leader" || len(st2.Replicas) != 1 {
		t.Fatalf("status: %+v %v", st2, err)
	}
}

func grpcConnOf(t *testing.T, s *Server) *grpc.ClientConn {
	cc, err := grpc.NewClient(s.NativeAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// curatorIncrement is DistributedAtomicLong.add through the ZooKeeper port:
// read the value and its version, then setData at that version (create
// when missing), again on a conflict. It returns the value before.
func curatorIncrement(zc *gozk.Conn, path string, delta int64) (int64, error) {
	for {
		data, st, err := zc.Get(path)
		if errors.Is(err, gozk.ErrNoNode) {
			next := make([]byte, 8)
			binary.BigEndian.PutUint64(next, uint64(delta))
			if _, err := zc.Create(path, next, 0, gozk.WorldACL(gozk.PermAll)); err == nil {
				return 0, nil
			} else if !errors.Is(err, gozk.ErrNodeExists) {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		cur := int64(binary.BigEndian.Uint64(data))
		next := make([]byte, 8)
		binary.BigEndian.PutUint64(next, uint64(cur+delta))
		if _, err := zc.Set(path, next, st.Version); err == nil {
			return cur, nil
		} else if !errors.Is(err, gozk.ErrBadVersion) {
			return 0, err
		}
	}
}

// AllocateID racing Curator-format increments through the ZooKeeper port
// never hands out a value twice, and the counter ends at the sum.
func TestNativeAllocateIDRacesCuratorIncrements(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/table_seqid"
	var mu sync.Mutex
	var got []int64
	add := func(first, count int64) {
		mu.Lock()
		for v := first; v < first+count; v++ {
			got = append(got, v)
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				r, err := nc.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{CounterPath: path, Count: 3})
				if err != nil {
					errs <- err
					return
				}
				if r.Last != r.First+2 {
					errs <- errors.New("a block of 3 is not [first, first+2]")
					return
				}
				add(r.First, 3)
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				pre, err := curatorIncrement(zc, path, 1)
				if err != nil {
					errs <- err
					return
				}
				add(pre, 1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	const total = 4*25*3 + 4*25
	if len(got) != total {
		t.Fatalf("%d values handed out, want %d", len(got), total)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("value %d handed out at position %d: a gap or a duplicate", v, i)
		}
	}
	data, _, err := zc.Get(path)
	if err != nil || int64(binary.BigEndian.Uint64(data)) != total {
		t.Fatalf("counter %v %v, want %d", data, err, total)
	}
	_, err = nc.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{CounterPath: path, Count: 0})
	wantCode(t, "count 0", err, codes.InvalidArgument)
	if _, err := zc.Create("/notcounter", []byte("x"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, err = nc.AllocateID(ctx, &zkbridgev1.AllocateIDRequest{CounterPath: "/notcounter", Count: 1})
	wantCode(t, "a znode that is not a counter", err, codes.FailedPrecondition)
}

// A native registration is an ordinary ephemeral to a ZooKeeper client:
// its watch fires when the lease is deregistered or expires; a second live
// registration is refused with the holder's epoch unless it names it.
func TestNativeLeasesAreSessions(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	reg, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Group: "workers", MemberId: "w1", Payload: []byte("host:1"), LeaseTtlMs: 4000})
	if err != nil || reg.Path != "/workers/ids/w1" || reg.Lease.Id == 0 || reg.TtlMs != 4000 {
		t.Fatalf("register: %+v %v", reg, err)
	}
	data, st, watch, err := zc.GetW("/workers/ids/w1")
	if err != nil || string(data) != "host:1" || st.EphemeralOwner != reg.Lease.Id || st.Czxid != reg.Epoch {
		t.Fatalf("ZooKeeper view of the registration: %q %+v %v", data, st, err)
	}

	_, err = nc.Register(ctx, &zkbridgev1.RegisterRequest{Group: "workers", MemberId: "w1", LeaseTtlMs: 4000})
	wantCode(t, "a second live registration", err, codes.AlreadyExists)
	var conflict *zkbridgev1.RegisterConflict
	for _, d := range status.Convert(err).Details() {
		if c, ok := d.(*zkbridgev1.RegisterConflict); ok {
			conflict = c
		}
	}
	if conflict == nil || conflict.HolderEpoch != reg.Epoch || conflict.HolderLease != reg.Lease.Id {
		t.Fatalf("conflict detail %+v, want epoch %d lease %d", conflict, reg.Epoch, reg.Lease.Id)
	}

	// A takeover with the holder's epoch ends the old lease.
	take, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Group: "workers", MemberId: "w1", Payload: []byte("host:2"), LeaseTtlMs: 4000, ExpectedEpoch: &reg.Epoch})
	if err != nil || take.Epoch <= reg.Epoch {
		t.Fatalf("takeover: %+v %v", take, err)
	}
	if ev := <-watch; ev.Type != gozk.EventNodeDeleted {
		t.Fatalf("watch after the takeover: %+v", ev)
	}
	_, err = nc.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{LeaseId: reg.Lease.Id})
	wantCode(t, "heartbeat of the replaced lease", err, codes.NotFound)

	// Heartbeats keep a lease past its TTL; without them it expires.
	short, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Group: "workers", MemberId: "w2", LeaseTtlMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ka, err := nc.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if err := ka.Send(&zkbridgev1.HeartbeatRequest{LeaseId: short.Lease.Id}); err != nil {
			t.Fatal(err)
		}
		r, err := ka.Recv()
		if err != nil || r.TtlMs != 1000 {
			t.Fatalf("keep-alive: %+v %v", r, err)
		}
	}
	ok, _, watch2, err := zc.ExistsW("/workers/ids/w2")
	if err != nil || !ok {
		t.Fatalf("registration with heartbeats gone after 3 s of a 1 s TTL: %v %v", ok, err)
	}
	ka.CloseSend()
	start := time.Now()
	select {
	case ev := <-watch2:
		if ev.Type != gozk.EventNodeDeleted {
			t.Fatalf("watch on expiry: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lease did not expire without heartbeats")
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("the lease expired %v after its last heartbeat, before its TTL", d)
	}

	// Leases are listed as sessions, with their ephemerals.
	lsess, err := nc.ListSessions(ctx, &zkbridgev1.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, si := range lsess.Sessions {
		if si.Id == take.Lease.Id {
			found = len(si.Ephemerals) == 1 && si.Ephemerals[0] == "/workers/ids/w1" && si.TtlMs == 4000 && si.ExpiresInMs > 0
		}
	}
	if !found {
		t.Fatalf("lease 0x%x not listed with its ephemeral: %+v", take.Lease.Id, lsess.Sessions)
	}

	// Deregister deletes at once; a wrong token is refused.
	_, err = nc.Deregister(ctx, &zkbridgev1.DeregisterRequest{Lease: &zkbridgev1.Lease{Id: take.Lease.Id, Token: make([]byte, 16)}})
	wantCode(t, "deregister with a wrong token", err, codes.NotFound)
	if _, err := nc.Deregister(ctx, &zkbridgev1.DeregisterRequest{Lease: take.Lease}); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := zc.Exists("/workers/ids/w1"); err != nil || ok {
		t.Fatalf("registration after deregister: %v %v", ok, err)
	}

	for _, r := range []*zkbridgev1.RegisterRequest{
		{Group: "workers", MemberId: "a/b", LeaseTtlMs: 1000},
		{Group: "", MemberId: "x", LeaseTtlMs: 1000},
		{Group: "workers", MemberId: "x", LeaseTtlMs: -1},
		{Profile: "fluss", Group: "tabletservers", MemberId: "x", Payload: []byte(`{"version":4}`), LeaseTtlMs: 1000},
		{Profile: "fluss", Group: "tabletservers", MemberId: "3", Payload: []byte(`not json`), LeaseTtlMs: 1000},
		{Profile: "nosuch", Group: "g", MemberId: "x", LeaseTtlMs: 1000},
	} {
		_, err := nc.Register(ctx, r)
		wantCode(t, "register "+r.String(), err, codes.InvalidArgument)
	}
	fl, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "tabletservers", MemberId: "3",
		Payload: []byte(`{"version":4,"listeners":"FLUSS://127.0.0.1:9123","register_timestamp":1}`), LeaseTtlMs: 4000})
	if err != nil || fl.Path != "/fluss/tabletservers/ids/3" {
		t.Fatalf("fluss registration: %+v %v", fl, err)
	}
}

// A cutover to native refuses the ZooKeeper-mode writer (NoAuth, counted)
// and keeps the native writer; zk lifts it; read-only refuses both.
func TestNativeCutoverFencesZooKeeperWriters(t *testing.T) {
	s, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []string{"/fluss", "/fluss/tables"} {
		if _, err := zc.Create(p, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nc.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Subtree: "/fluss", Mode: zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE}); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set("/fluss/tables", []byte("stale"), -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("ZooKeeper-mode write under a native subtree: %v, want NoAuth", err)
	}
	if _, err := zc.Create("/fluss/tables/t1", nil, 0, gozk.WorldACL(gozk.PermAll)); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("ZooKeeper-mode create under a native subtree: %v, want NoAuth", err)
	}
	if _, err := nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/fluss/tables", Data: []byte("native"), ExpectedVersion: -1}); err != nil {
		t.Fatalf("native write under a native subtree: %v", err)
	}
	if data, _, err := zc.Get("/fluss/tables"); err != nil || string(data) != "native" {
		t.Fatalf("ZooKeeper-mode read under a native subtree: %q %v", data, err)
	}
	if _, err := zc.Create("/elsewhere", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatalf("ZooKeeper-mode write outside the subtree: %v", err)
	}
	var fenced float64
	s.zk.Gauges(func(name, _ string, v float64) {
		if name == "zkbridge_cutover_fenced_writes" {
			fenced = v
		}
	})
	if fenced != 2 {
		t.Fatalf("fenced writes counted %v, want 2", fenced)
	}
	ls, err := nc.ListCutoverPolicies(ctx, &zkbridgev1.ListCutoverPoliciesRequest{})
	if err != nil || len(ls.Policies) != 1 || ls.Policies[0].Subtree != "/fluss" || ls.Policies[0].Mode != zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE {
		t.Fatalf("policies %+v %v", ls, err)
	}
	if _, err := nc.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Subtree: "/fluss", Mode: zkbridgev1.CutoverMode_CUTOVER_MODE_READ_ONLY}); err != nil {
		t.Fatal(err)
	}
	_, err = nc.Put(ctx, &zkbridgev1.PutRequest{Path: "/fluss/tables", ExpectedVersion: -1})
	wantCode(t, "native write under read-only", err, codes.PermissionDenied)
	if _, err := nc.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Subtree: "/fluss", Mode: zkbridgev1.CutoverMode_CUTOVER_MODE_ZK}); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Set("/fluss/tables", []byte("zk again"), -1); err != nil {
		t.Fatalf("ZooKeeper-mode write after the policy is lifted: %v", err)
	}
	_, err = nc.SetCutoverPolicy(ctx, &zkbridgev1.SetCutoverPolicyRequest{Subtree: "fluss", Mode: zkbridgev1.CutoverMode_CUTOVER_MODE_NATIVE})
	wantCode(t, "a relative subtree", err, codes.InvalidArgument)
}

// The Fluss profile's coordinator election: the winner holds
// /fluss/coordinators/active and bumps /fluss/coordinators/epoch in the
// same transaction; a second candidate stands by until the first's lease
// ends; ZooKeeper-mode Fluss code reads both as its own.
func TestNativeFlussCoordinatorElection(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := func(id string) []byte {
		return []byte(`{"version":2,"id":"` + id + `","listeners":"FLUSS://127.0.0.1:9124"}`)
	}
	for _, id := range []string{"c1", "c2"} {
		if _, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "coordinators", MemberId: id, Payload: addr(id), LeaseTtlMs: 4000}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "coordinator-leader", MemberId: "c1", Payload: addr("c1"), LeaseTtlMs: 4000})
	if err != nil || first.Path != "/fluss/coordinators/active" || first.CoordinatorEpoch != 0 {
		t.Fatalf("the first leader: %+v %v", first, err)
	}
	_, err = nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "coordinator-leader", MemberId: "c2", Payload: addr("c2"), LeaseTtlMs: 4000})
	wantCode(t, "a second leader while the first lives", err, codes.AlreadyExists)
	data, st, err := zc.Get("/fluss/coordinators/epoch")
	if err != nil || string(data) != "0" || st.Version != 1 {
		t.Fatalf("epoch znode %q %+v %v, want \"0\" at version 1", data, st, err)
	}
	if data, st, err := zc.Get("/fluss/coordinators/active"); err != nil || string(data) != string(addr("c1")) || st.EphemeralOwner != first.Lease.Id || st.Czxid != first.Epoch {
		t.Fatalf("active znode %q %+v %v", data, st, err)
	}
	if kids, _, err := zc.Children("/fluss/coordinators/ids"); err != nil || len(kids) != 2 {
		t.Fatalf("coordinator registrations %v %v", kids, err)
	}
	if _, err := nc.Deregister(ctx, &zkbridgev1.DeregisterRequest{Lease: first.Lease}); err != nil {
		t.Fatal(err)
	}
	second, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "coordinator-leader", MemberId: "c2", Payload: addr("c2"), LeaseTtlMs: 4000})
	if err != nil || second.CoordinatorEpoch != 1 {
		t.Fatalf("the next leader: %+v %v", second, err)
	}
	if data, _, err := zc.Get("/fluss/coordinators/epoch"); err != nil || string(data) != "1" {
		t.Fatalf("epoch after the second election %q %v", data, err)
	}
	_, err = nc.Register(ctx, &zkbridgev1.RegisterRequest{Profile: "fluss", Group: "coordinators", MemberId: "c3", Payload: []byte("not json"), LeaseTtlMs: 4000})
	wantCode(t, "a coordinator without CoordinatorAddress JSON", err, codes.InvalidArgument)
}

// A Heartbeat answered by a follower is acknowledged only once the leader
// knows of the renewal. It used to be a local touch, reported to the leader
// by the follower's next batched activity report; when that report was lost
// (a resumed follower's forwarded proposal dropped), the leader expired the
// lease on its registration deadline although every Heartbeat of its client
// had been acknowledged (fault suite, leases workload, pause-follower).
// Here every batched report of the follower fails.
func TestNativeHeartbeatOnFollowerRenewsOnLeader(t *testing.T) {
	servers := startClusterWith(t, 3, 200*time.Millisecond, func(c *Config) { c.NativeAddr = "127.0.0.1:0" })
	leader := leaderOf(t, servers)
	f := servers[(leader+1)%3]
	f.node.DropActivityReports(func() bool { return true })
	cc, err := grpc.NewClient(f.NativeAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	nc := zkbridgev1.NewBridgeClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	reg, err := nc.Register(ctx, &zkbridgev1.RegisterRequest{Group: "workers", MemberId: "w1", LeaseTtlMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if _, err := nc.Heartbeat(ctx, &zkbridgev1.HeartbeatRequest{LeaseId: reg.Lease.Id}); err != nil {
			t.Fatalf("heartbeat on the follower after %v of a 1 s TTL: %v", time.Since(end.Add(-4*time.Second)), err)
		}
	}
	if _, err := servers[leader].node.SessionInfo(reg.Lease.Id); err != nil {
		t.Fatalf("lease on the leader after 4 s of acknowledged heartbeats: %v", err)
	}
	if leaderOf(t, servers) != leader {
		t.Log("the leader changed during the test; it proves less")
	}
}
