package server

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/internal/freeport"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/zkproto"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// freeAddrs returns n distinct loopback addresses that were free a moment
// ago, drawn below the kernel's ephemeral range (freeport): a port probed
// by binding port 0 could be handed to another test's bind or outgoing
// connection before the node bound it ("address already in use").
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	ports, err := freeport.PickN(n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}

// startNode starts one more node (an observer, a restart) in the background
// and returns it once Start returned.
func startNode(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Uint64("node", cfg.ReplicaID).Logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start node %d: %v", cfg.ReplicaID, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fourLetterWord(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(nc)
	return string(out)
}

func getConfig(t *testing.T, c *testClient) (string, zkproto.Stat) {
	t.Helper()
	c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper/config"})
	h, d := c.reply()
	if h.Err != zkproto.ErrOK {
		t.Fatalf("getData %s: %v", "/zookeeper/config", h.Err)
	}
	var r zkproto.GetDataResponse
	r.Decode(d)
	return string(r.Data), r.Stat
}

func TestObserverConfigNodeStatusAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	obsPeer := freeAddr(t)
	servers := startClusterWith(t, 3, 500*time.Millisecond, func(c *Config) {
		c.AdminDisabled, c.AdminAddr = false, "127.0.0.1:0"
		c.Observers = map[uint64]string{4: obsPeer}
	})
	voter := servers[0].Config()
	obs := startNode(t, Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		PeerAddr: obsPeer, ReplicaID: 4, Peers: voter.Peers, Observers: voter.Observers,
		FourLetterWords: []string{"*"}, TickTime: 500 * time.Millisecond})
	if m := obs.zk.Mode(); m != "observer" {
		t.Fatalf("observer's mode %q", m)
	}
	if !strings.Contains(fourLetterWord(t, obs.ClientAddr(), "srvr"), "Mode: observer") {
		t.Fatal("srvr on the observer does not say Mode: observer")
	}

	// The observer forwards writes and serves reads.
	c, _ := dialSession(t, obs, 0, nil, 0)
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/via-observer", Data: []byte("o"), ACL: zkproto.OpenACLUnsafe()})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("write through the observer: %v", h.Err)
	}
	lead := servers[leaderOf(t, servers)]
	l, _ := dialSession(t, lead, 0, nil, 0)
	l.send(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	l.reply()
	l.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/via-observer"})
	if h, _ := l.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("the observer's write on the leader: %v", h.Err)
	}

	// /zookeeper/config lists the membership in ZooKeeper's format on every node.
	for _, s := range append(servers, obs) {
		var text string
		var stat zkproto.Stat
		eventually(t, 10*time.Second, "every replica in /zookeeper/config", func() bool {
			cc, _ := dialSession(t, s, 0, nil, 0)
			text, stat = getConfig(t, cc)
			cc.nc.Close()
			return strings.Count(text, ":participant;127.0.0.1:") == 3 && strings.Contains(text, ":observer;127.0.0.1:")
		})
		if !strings.HasPrefix(text, "server.1=") || !strings.Contains(text, "\nversion=") || stat.Version != -1 || stat.Aversion != -1 || int(stat.DataLength) != len(text) {
			t.Fatalf("config on node %d: %q %+v", s.cfg.ReplicaID, text, stat)
		}
	}

	// raft status lists every replica with its progress; the leader's
	// metrics carry each follower's lag.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st RaftStatus
	eventually(t, 10*time.Second, "status of four replicas that answered", func() bool {
		var err error
		st, err = obs.Status(ctx)
		if err != nil || len(st.Replicas) != 4 {
			return false
		}
		for _, r := range st.Replicas {
			if r.Role == "unknown" || r.Lag < 0 {
				return false
			}
		}
		return true
	})
	if r := st.Replicas[3]; r.ReplicaID != 4 || r.Voting || r.Role != "observer" {
		t.Fatalf("observer's status row %+v", r)
	}
	eventually(t, 10*time.Second, "raft_follower_lag for three replicas", func() bool { return len(lead.node.FollowerLag()) == 3 })
	values := map[string]float64{}
	lead.zk.Gauges(func(name, _ string, v float64) { values[name] = v })
	if values["raft_commit_index"] < values["raft_applied_index"] || values["raft_applied_index"] == 0 || values["raft_leader_changes_total"] < 1 {
		t.Fatalf("raft metrics %v", values)
	}
}

func TestReconfigChangesMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	super := "super:" + strings.SplitN(zk.DigestID([]byte("super:superpw")), ":", 2)[1]
	servers := startClusterWith(t, 3, 500*time.Millisecond, func(c *Config) {
		c.ReconfigEnabled, c.SuperDigest = true, super
	})
	s := servers[leaderOf(t, servers)]
	c, _ := dialSession(t, s, 0, nil, 0)
	reconfig := func(r *zkproto.ReconfigRequest) (zkproto.ErrCode, string) {
		c.send(zkproto.OpReconfig, r)
		h, d := c.reply()
		if h.Err != zkproto.ErrOK {
			return h.Err, ""
		}
		var resp zkproto.GetDataResponse
		resp.Decode(d)
		return h.Err, string(resp.Data)
	}
	// /zookeeper/config is world:anyone:r: only super may reconfigure.
	if code, _ := reconfig(&zkproto.ReconfigRequest{LeavingServers: "3", CurConfigID: -1}); code != zkproto.ErrNoAuth {
		t.Fatalf("reconfig without auth: %v, want NoAuth", code)
	}
	c.send(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:superpw")})
	c.reply()
	if code, _ := reconfig(&zkproto.ReconfigRequest{LeavingServers: "3", CurConfigID: 12345}); code != zkproto.ErrBadVersion {
		t.Fatalf("reconfig from a stale version: %v, want BadVersion", code)
	}
	if code, _ := reconfig(&zkproto.ReconfigRequest{JoiningServers: "server.9=nonsense", CurConfigID: -1}); code != zkproto.ErrBadArguments {
		t.Fatalf("reconfig with a malformed server: %v, want BadArguments", code)
	}
	victim := servers[(leaderOf(t, servers)+1)%3].cfg.ReplicaID
	code, text := reconfig(&zkproto.ReconfigRequest{LeavingServers: strings.TrimSpace(string(rune('0' + victim))), CurConfigID: -1})
	if code != zkproto.ErrOK || strings.Count(text, ":participant") != 2 || strings.Contains(text, "server."+string(rune('0'+victim))+"=") {
		t.Fatalf("leaving %d: %v %q", victim, code, text)
	}
	// Two voters left: ZooKeeper refuses a configuration of fewer than two
	// participants as BadArguments.
	other := servers[(leaderOf(t, servers)+2)%3].cfg.ReplicaID
	if other == victim {
		other = servers[(leaderOf(t, servers)+1)%3].cfg.ReplicaID
	}
	if code, _ := reconfig(&zkproto.ReconfigRequest{LeavingServers: string(rune('0' + other)), CurConfigID: -1}); code != zkproto.ErrBadArguments {
		t.Fatalf("leaving down to one voter: %v, want BadArguments", code)
	}
	// Sessions on the other voter, opened before the reconfig so that
	// their reads follow its reply at once.
	var others []*testClient
	for _, other := range servers {
		if other == s || other.cfg.ReplicaID == victim { // the victim left the cluster
			continue
		}
		oc, _ := dialSession(t, other, 0, nil, 0)
		others = append(others, oc)
	}
	code, text = reconfig(&zkproto.ReconfigRequest{JoiningServers: "server.7=127.0.0.1:1:2:observer;127.0.0.1:3", CurConfigID: -1})
	// The whole spec is kept, election port and client address included.
	if code != zkproto.ErrOK || !strings.Contains(text, "server.7=127.0.0.1:1:2:observer;127.0.0.1:3\n") {
		t.Fatalf("joining observer 7: %v %q", code, text)
	}
	// Read at once on the other nodes, /zookeeper/config is the reconfig's
	// whole: the new member with its spec, as in the reply. The nodes'
	// rendering was a cache refreshed in the background, and such a read
	// saw the member without its spec ("127.0.0.1:1:1:observer").
	for i, oc := range others {
		oc.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper/config"})
		h, d := oc.reply()
		var resp zkproto.GetDataResponse
		resp.Decode(d)
		if h.Err != zkproto.ErrOK || string(resp.Data) != text {
			t.Fatalf("other voter %d's /zookeeper/config right after the reconfig: %v %q, want the reply's %q", i, h.Err, resp.Data, text)
		}
	}
}

func TestReadOnlyModeWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	servers := startClusterWith(t, 3, 500*time.Millisecond, func(c *Config) { c.ReadOnlyMode = true })
	lead := leaderOf(t, servers)
	survivor := servers[(lead+1)%3]
	c, _ := dialSession(t, survivor, 0, nil, 0)
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/ro", Data: []byte("kept"), ACL: zkproto.OpenACLUnsafe()})
	h, _ := c.reply()
	if h.Err != zkproto.ErrOK {
		t.Fatal(h.Err)
	}
	var stopped []Config
	for i, s := range servers {
		if s != survivor {
			stopped = append(stopped, s.Config())
			s.Stop()
			servers[i] = nil
		}
	}
	eventually(t, 20*time.Second, "read-only mode", survivor.zk.ReadOnly)
	if got := fourLetterWord(t, survivor.ClientAddr(), "isro"); got != "ro" {
		t.Fatalf("isro = %q", got)
	}

	// A client that did not allow read-only is refused.
	nc, err := net.Dial("tcp", survivor.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	rw := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 1<<20)}
	rw.write(&zkproto.ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16), HasReadOnly: true})
	if !rw.closed(5 * time.Second) {
		t.Fatal("a read-write client was admitted by a read-only node")
	}

	nc, err = net.Dial("tcp", survivor.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	ro := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 1<<20)}
	ro.write(&zkproto.ConnectRequest{TimeOut: 4000, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true})
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(ro.next(), &resp); err != nil || !resp.ReadOnly || resp.SessionID == 0 {
		t.Fatalf("read-only connect: %+v %v", resp, err)
	}
	ro.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/ro"})
	if h, d := ro.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("read on a read-only node: %v", h.Err)
	} else {
		var r zkproto.GetDataResponse
		r.Decode(d)
		if string(r.Data) != "kept" {
			t.Fatalf("read %q", r.Data)
		}
	}
	for op, body := range map[zkproto.OpCode]zkproto.Record{
		zkproto.OpCreate:  &zkproto.CreateRequest{Path: "/x", ACL: zkproto.OpenACLUnsafe()},
		zkproto.OpSetData: &zkproto.SetDataRequest{Path: "/ro", Version: -1},
		zkproto.OpSync:    &zkproto.SyncRequest{Path: "/"},
	} {
		ro.send(op, body)
		if h, _ := ro.reply(); h.Err != zkproto.ErrNotReadOnly {
			t.Fatalf("%v on a read-only node: %v, want NotReadOnly", op, h.Err)
		}
	}

	// A quorum again: read-only connections close, the node serves read-write.
	startNode(t, stopped[0])
	if !ro.closed(20 * time.Second) {
		t.Fatal("the read-only connection stayed open after the quorum came back")
	}
	eventually(t, 10*time.Second, "read-write mode", func() bool { return !survivor.zk.ReadOnly() })
	if got := fourLetterWord(t, survivor.ClientAddr(), "isro"); got != "rw" {
		t.Fatalf("isro after recovery = %q", got)
	}
}
