package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/zkproto"
)

// startCluster runs n nodes in this process (they must start together:
// each waits for a quorum).
func startCluster(t *testing.T, n int, tick time.Duration) []*Server {
	t.Helper()
	return startClusterWith(t, n, tick, nil)
}

// startClusterWith is startCluster with each node's configuration passed
// through mutate (if not nil) before it starts.
// clusterLogOutput, when set, is where startClusterWith's node i logs
// (a test that reads the logs sets it and restores it).
var clusterLogOutput func(node int) io.Writer

func startClusterWith(t *testing.T, n int, tick time.Duration, mutate func(*Config)) []*Server {
	t.Helper()
	peers := map[uint64]string{}
	for i, addr := range freeAddrs(t, n) {
		peers[uint64(i+1)] = addr
	}
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		cfg := Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: peers[uint64(i)], ReplicaID: uint64(i),
			Peers: peers, AdminDisabled: true, FourLetterWords: []string{"*"}, TickTime: tick}
		if mutate != nil {
			mutate(&cfg)
		}
		var out io.Writer = os.Stderr
		if clusterLogOutput != nil {
			out = clusterLogOutput(i)
		}
		s, err := New(cfg, zerolog.New(out).Level(zerolog.WarnLevel).With().Int("node", i).Logger())
		if err != nil {
			t.Fatal(err)
		}
		servers[i-1] = s
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			errs[i] = servers[i].Start(ctx)
		}(i - 1)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		t.Cleanup(servers[i].Stop)
	}
	return servers
}

func leaderOf(t *testing.T, servers []*Server) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range servers {
			if s != nil && s.node.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader")
	return -1
}

func dialSession(t testing.TB, s *Server, sid int64, passwd []byte, lastZxid int64) (*testClient, *zkproto.ConnectResponse) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	t.Cleanup(func() { nc.Close() })
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	c.write(&zkproto.ConnectRequest{TimeOut: 4000, SessionID: sid, Passwd: passwd, LastZxidSeen: lastZxid, HasReadOnly: true})
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(c.next(), &resp); err != nil {
		t.Fatal(err)
	}
	c.sid = resp.SessionID
	return c, &resp
}

func TestClusterReplicatesFailsOverAndMovesSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	servers := startCluster(t, 3, 500*time.Millisecond)
	lead := leaderOf(t, servers)
	follower := servers[(lead+1)%3]
	other := servers[(lead+2)%3]
	if m := follower.zk.Mode(); m != "follower" {
		t.Fatalf("follower reports mode %q", m)
	}

	// A write through a follower is forwarded; after sync another node reads it.
	a, resp := dialSession(t, follower, 0, nil, 0)
	a.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/eph", Data: []byte("x"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)})
	h, _ := a.reply()
	if h.Err != zkproto.ErrOK {
		t.Fatalf("create on a follower: %v", h.Err)
	}
	b, _ := dialSession(t, other, 0, nil, h.Zxid)
	b.send(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	b.reply()
	b.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/eph", Watch: true})
	if h, _ := b.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("read on another node after sync: %v", h.Err)
	}

	// The session moves to the other node with its id and password.
	a.nc.Close()
	moved, mresp := dialSession(t, other, resp.SessionID, resp.Passwd, h.Zxid)
	if mresp.SessionID != resp.SessionID || mresp.TimeOut == 0 {
		t.Fatalf("reconnect on another node: %+v", mresp)
	}
	// Pings on the new node keep the session alive across several timeouts.
	for i := 0; i < 10; i++ {
		for _, c := range []*testClient{moved, b} { // b keeps its own session alive
			c.send(zkproto.OpPing, nil)
			c.reply()
		}
		time.Sleep(time.Second)
	}
	moved.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/eph"})
	if h, _ := moved.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("ephemeral of a live, moved session vanished: %v", h.Err)
	}

	// The leader dies: the others elect a new one and writes resume.
	servers[lead].Stop()
	servers[lead] = nil
	newLead := leaderOf(t, servers)
	if newLead == lead {
		t.Fatal("stopped node still leads")
	}
	w, _ := dialSession(t, follower, 0, nil, 0)
	w.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/after", ACL: zkproto.OpenACLUnsafe()})
	if h, _ := w.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("write after failover: %v", h.Err)
	}

	// The moved session's client goes away: the (new) leader expires it and
	// the watcher on the surviving node sees its ephemeral go.
	moved.nc.Close()
	deadline := time.Now().Add(20 * time.Second)
	var lastPing time.Time
	for {
		if time.Now().After(deadline) {
			t.Fatal("no NodeDeleted for the expired session's ephemeral")
		}
		if time.Since(lastPing) > time.Second { // b's own session must outlive the other one
			b.send(zkproto.OpPing, nil)
			lastPing = time.Now()
		}
		_ = b.nc.SetReadDeadline(time.Now().Add(time.Second))
		frame, err := b.fr.Next()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			continue
		}
		if err != nil {
			t.Fatalf("watcher connection lost: %v", err)
		}
		d := zkproto.NewDecoder(frame)
		var rh zkproto.ReplyHeader
		rh.Decode(d)
		if rh.Xid != zkproto.XidNotification {
			continue
		}
		var ev zkproto.WatcherEvent
		ev.Decode(d)
		if ev.Type == zkproto.EventNodeDeleted && ev.Path == "/eph" {
			break
		}
	}
}

// A client that creates a session on one node and at once reconnects to
// another (its LastZxidSeen still 0: no reply carried a zxid yet) must find
// its session there, as a ZooKeeper follower that asks the leader would.
func TestSessionResumesOnAReplicaThatHasNotAppliedItYet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	servers := startCluster(t, 3, 100*time.Millisecond)
	lead := leaderOf(t, servers)
	for i := 0; i < 30; i++ {
		a, resp := dialSession(t, servers[lead], 0, nil, 0)
		other := servers[(lead+1+i%2)%3]
		b, bresp := dialSession(t, other, resp.SessionID, resp.Passwd, 0)
		if bresp.SessionID != resp.SessionID || bresp.TimeOut == 0 {
			t.Fatalf("round %d: session %#x created on the leader, refused by a follower: %+v", i, resp.SessionID, bresp)
		}
		a.nc.Close()
		b.nc.Close()
	}
}

func TestMembershipChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	servers := startCluster(t, 3, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lead := leaderOf(t, servers)
	st, err := servers[lead].Status(ctx)
	if err != nil || st.Role != "leader" || len(st.Voters) != 3 {
		t.Fatalf("status %+v %v", st, err)
	}
	target := uint64((lead+1)%3 + 1)
	if err := servers[lead].TransferLeader(ctx, target); err != nil {
		t.Fatal(err)
	}
	lead = leaderOf(t, servers)
	if servers[lead].cfg.ReplicaID != target {
		t.Fatalf("leader is %d after transfer to %d", servers[lead].cfg.ReplicaID, target)
	}
	// Remove a follower: 2 voters remain, still a majority of 3.
	victim := (lead + 1) % 3
	if err := servers[lead].node.RemoveVoter(ctx, servers[victim].cfg.ReplicaID, false); err != nil {
		t.Fatal(err)
	}
	servers[victim].Stop()
	servers[victim] = nil
	// Removing another would leave one voter of two: refused without force.
	other := (lead + 2) % 3
	if err := servers[lead].node.RemoveVoter(ctx, servers[other].cfg.ReplicaID, false); !errors.Is(err, node.ErrBelowQuorum) {
		t.Fatalf("removal below a safe majority: %v", err)
	}
	// A new replica joins: started first (it waits to be contacted), then added.
	addr := freeAddr(t)
	cfg := Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: addr, ReplicaID: 7, Join: true,
		AdminDisabled: true, TickTime: time.Second, Peers: map[uint64]string{7: addr}}
	joined, err := New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- joined.Start(ctx) }()
	if err := servers[lead].node.AddVoter(ctx, 7, addr); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	defer joined.Stop()
	// The joined replica answers its own linearizable membership read.
	st, err = joined.Status(ctx)
	if err != nil || len(st.Voters) != 3 || st.Voters[7] != addr {
		t.Fatalf("after the join: %+v %v", st, err)
	}
	// The new replica serves: a session and a write through it.
	c, _ := dialSession(t, joined, 0, nil, 0)
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/joined", ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("write through the joined replica: %v", h.Err)
	}
	// Its clients' pings reach the leader: a session kept alive on the
	// joined replica (started without --peers) outlives several timeouts.
	for i := 0; i < 12; i++ { // 12 s; the session timeout is 4 s
		c.send(zkproto.OpPing, nil)
		c.reply()
		time.Sleep(time.Second)
	}
	c.send(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	c.reply()
	c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/joined"})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("the ephemeral of a live session on the joined replica: %v (its pings never reached the leader?)", h.Err)
	}
}

func TestNodeWithoutLeaderDropsItsClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	servers := startCluster(t, 3, 500*time.Millisecond)
	c, _ := dialSession(t, servers[0], 0, nil, 0)
	servers[1].Stop()
	servers[2].Stop()
	// Within a few ticks the cut-off node closes the connection.
	if !c.closed(15 * time.Second) {
		t.Fatal("a node without a leader kept its client connection")
	}
	nc, err := net.DialTimeout("tcp", servers[0].ClientAddr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fresh := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 1<<20)}
	fresh.write(&zkproto.ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16), HasReadOnly: true})
	if !fresh.closed(5 * time.Second) {
		t.Fatal("a node without a leader accepted a new session")
	}
}

// A ZooKeeper session pinged on a follower must not expire on the leader
// because the follower's activity report carrying that ping was lost: a
// failed report's sessions are carried by the next one. (They used to be
// dropped with it, so a client that pings every third of its timeout lost
// a third of it per lost report.)
func TestClusterLostActivityReportIsCarriedByTheNext(t *testing.T) {
	servers := startCluster(t, 3, 200*time.Millisecond)
	leader := leaderOf(t, servers)
	f := servers[(leader+1)%3]
	c, resp := dialSession(t, f, 0, nil, 0)
	if resp.TimeOut != 4000 {
		t.Fatalf("negotiated timeout %d, want 4000", resp.TimeOut)
	}
	time.Sleep(2500 * time.Millisecond)
	// The one ping of this client is reported in a batch that fails; the
	// reports resume 700 ms later. The leader's deadline from the session's
	// creation passes 1.5 s after the ping.
	var until atomic.Int64
	until.Store(time.Now().Add(700 * time.Millisecond).UnixNano())
	f.node.DropActivityReports(func() bool { return time.Now().UnixNano() < until.Load() })
	c.send(zkproto.OpPing, nil)
	if h, _ := c.reply(); h.Err != 0 {
		t.Fatalf("ping: %+v", h)
	}
	time.Sleep(2500 * time.Millisecond) // 5 s after creation, 2.5 s after the ping
	if _, err := servers[leader].node.SessionInfo(resp.SessionID); err != nil {
		t.Fatalf("session pinged 2.5 s ago (timeout 4 s) on the leader: %v", err)
	}
	if leaderOf(t, servers) != leader {
		t.Log("the leader changed during the test; it proves less")
	}
}
