package compattests

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Fault tests: zkbridge nodes run as separate processes (cluster.go), are
// killed with SIGKILL, restarted, and cut off from each other by a proxy.
// Every wait is a poll with a deadline.

var openACL = zk.WorldACL(zk.PermAll)

// gzConnect connects go-zookeeper to addrs and waits (bounded) for a session.
func gzConnect(t testing.TB, addrs []string, timeout time.Duration, cb func(zk.Event)) *zk.Conn {
	t.Helper()
	got := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(addrs, timeout, zk.WithLogger(gzQuiet{}), zk.WithEventCallback(func(ev zk.Event) {
		if ev.State == zk.StateHasSession {
			once.Do(func() { close(got) })
		}
		if cb != nil {
			cb(ev)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatalf("no session with %v within 20 s", addrs)
	}
	return conn
}

// ackWriter creates root/000000, root/000001, ... one at a time and keeps
// the time of every acknowledgement. A write whose outcome is unknown
// (connection loss) is retried on the same path, where NodeExists means
// the first attempt applied.
type ackWriter struct {
	conn *zk.Conn
	root string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	acks  []time.Time // acks[i] is when root/%06d i was acknowledged
	fails map[string]int
}

func startAckWriter(conn *zk.Conn, root string) *ackWriter {
	w := &ackWriter{conn: conn, root: root, stop: make(chan struct{}), done: make(chan struct{}), fails: map[string]int{}}
	go w.run()
	return w
}

func (w *ackWriter) run() {
	defer close(w.done)
	for i := 0; ; i++ {
		path := fmt.Sprintf("%s/%06d", w.root, i)
		for retried := false; ; retried = true {
			select {
			case <-w.stop:
				return
			default:
			}
			_, err := w.conn.Create(path, []byte(path), 0, openACL)
			if err == nil || (retried && errors.Is(err, zk.ErrNodeExists)) {
				w.mu.Lock()
				w.acks = append(w.acks, time.Now())
				w.mu.Unlock()
				break
			}
			w.mu.Lock()
			w.fails[err.Error()]++
			w.mu.Unlock()
			time.Sleep(2 * time.Millisecond) // no spin while disconnected
		}
	}
}

func (w *ackWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acks)
}

// waitAcks waits until n writes are acknowledged.
func (w *ackWriter) waitAcks(t testing.TB, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for w.count() < n {
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("only %d of %d writes acknowledged within %v (failures: %v)", len(w.acks), n, d, w.fails)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *ackWriter) halt() {
	close(w.stop)
	<-w.done
}

// longestGap is the longest time between consecutive acknowledgements
// from the last one before from to the first one after to: a kill's gap,
// whether the dying leader still acknowledged a write after the signal or
// the process took a while to go.
func (w *ackWriter) longestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	first := sort.Search(len(w.acks), func(i int) bool { return w.acks[i].After(from) }) - 1
	last := sort.Search(len(w.acks), func(i int) bool { return w.acks[i].After(to) })
	if first < 0 || last == len(w.acks) {
		return -1
	}
	var longest time.Duration
	for i := first; i < last; i++ {
		longest = max(longest, w.acks[i+1].Sub(w.acks[i]))
	}
	return longest
}

// failoverRun runs a writer connected to every address, kills the leader
// (kill returns once the process is gone) and returns the failover gap
// and the writer, halted, for checks. The gap is the longest pause between
// acknowledged writes from the kill's start to the first write after the
// process was gone.
func failoverRun(t testing.TB, addrs []string, root string, kill func()) (time.Duration, *ackWriter) {
	t.Helper()
	conn := gzConnect(t, addrs, 10*time.Second, nil)
	if _, err := conn.Create(root, nil, 0, openACL); err != nil {
		t.Fatalf("create %s: %v", root, err)
	}
	w := startAckWriter(conn, root)
	w.waitAcks(t, 100, 20*time.Second)
	killStart := time.Now()
	kill()
	killedAt := time.Now()
	before := w.count()
	w.waitAcks(t, before+100, 60*time.Second)
	w.halt()
	gap := w.longestGap(killStart, killedAt)
	w.mu.Lock()
	t.Logf("failover gap %v (%d writes acknowledged; failures seen by the writer: %v)", gap, len(w.acks), w.fails)
	w.mu.Unlock()
	return gap, w
}

// TestFaultLeaderKilledUnderWrites kills -9 the leader while a client
// writes: writes resume on the survivors, every acknowledged write is
// there afterwards, and a session on a surviving follower lives on.
func TestFaultLeaderKilledUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := StartProcCluster(t, 3, ClusterOptions{})
	lead := c.WaitLeader(30 * time.Second)
	follower := (lead + 1) % 3

	var stMu sync.Mutex
	var states []zk.State
	survivor := gzConnect(t, []string{c.Nodes[follower].Client}, 10*time.Second, func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			stMu.Lock()
			states = append(states, ev.State)
			stMu.Unlock()
		}
	})
	sid := survivor.SessionID()
	if _, err := survivor.Create("/survivor", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}

	gap, w := failoverRun(t, c.Addrs(), "/w", func() { c.Kill(lead) })
	newLead := c.WaitLeader(30 * time.Second)
	if newLead == lead {
		t.Fatal("the killed node still leads")
	}

	// Every acknowledged write is there, read back after sync on a survivor.
	check := gzConnect(t, []string{c.Nodes[newLead].Client}, 10*time.Second, nil)
	if _, err := check.Sync("/w"); err != nil {
		t.Fatal(err)
	}
	kids, _, err := check.Children("/w")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range kids {
		have[k] = true
	}
	for i := range w.count() {
		if name := fmt.Sprintf("%06d", i); !have[name] {
			t.Errorf("acknowledged write /w/%s is missing after the failover", name)
		}
	}
	// At most the one write in flight when the writer stopped is extra.
	if extra := len(kids) - w.count(); extra < 0 || extra > 1 {
		t.Errorf("%d nodes under /w for %d acknowledged writes", len(kids), w.count())
	}

	// The follower's session survived: same id, never expired, ephemeral kept.
	if ok, _, err := check.Exists("/survivor"); err != nil || !ok {
		t.Errorf("the surviving follower's ephemeral after the failover: exists=%v err=%v", ok, err)
	}
	if ok, _, err := survivor.Exists("/survivor"); err != nil || !ok {
		t.Errorf("the surviving session's own read after the failover: exists=%v err=%v", ok, err)
	}
	stMu.Lock()
	defer stMu.Unlock()
	for _, s := range states {
		if s == zk.StateExpired {
			t.Errorf("the session on the surviving follower expired (states %v)", states)
		}
	}
	if survivor.SessionID() != sid {
		t.Errorf("the surviving follower's session changed from %#x to %#x", sid, survivor.SessionID())
	}
	t.Logf("leader %d killed; new leader %d; failover gap %v; follower session states %v", lead+1, newLead+1, gap, states)
}

// rawConnect connects a raw client to addr.
func rawConnect(t testing.TB, addr, name string, timeout int32) *Client {
	t.Helper()
	cl, _, err := Connect(addr, name, NewTranscript(), DialOptions{Timeout: timeout})
	if err != nil {
		t.Fatalf("connect %s to %s: %v", name, addr, err)
	}
	if cl.SessionID == 0 {
		t.Fatalf("%s: %s refused the session", name, addr)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestFaultClientVanishes drops a client's TCP connection without
// closeSession (as a killed client process does): after the session
// timeout its ephemeral is gone on every node, and a watcher connected to
// another node gets NodeDeleted.
func TestFaultClientVanishes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := StartProcCluster(t, 3, ClusterOptions{})
	lead := c.WaitLeader(30 * time.Second)
	owner, watcherNode := (lead+1)%3, (lead+2)%3

	const timeout = 4000 // ms: the minimum with tickTime 2 s
	a := rawConnect(t, c.Nodes[owner].Client, "a", timeout)
	if r, err := a.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/eph", Data: []byte("x"),
		ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("create the ephemeral: %+v %v", r, err)
	}
	w := rawConnect(t, c.Nodes[watcherNode].Client, "w", 30000)
	if _, err := w.Call(zkproto.OpSync, &zkproto.SyncRequest{Path: "/eph"}); err != nil {
		t.Fatal(err)
	}
	if r, err := w.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/eph", Watch: true}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("watch the ephemeral from another node: %+v %v", r, err)
	}

	a.Close() // no closeSession, no reconnect
	gone := time.Now()
	if n := w.WaitEvents(1, 20*time.Second); n != 1 {
		t.Fatal("no watch event within 20 s of the client vanishing")
	}
	elapsed := time.Since(gone)
	ev := w.rec.Lines()
	if len(ev) == 0 || !strings.Contains(ev[len(ev)-1], "NodeDeleted") || !strings.Contains(ev[len(ev)-1], "/eph") {
		t.Fatalf("watch event %v, want NodeDeleted /eph", ev)
	}
	// Half the timeout is a loose lower bound: the session was touched when
	// the ephemeral was created, just before the connection dropped.
	if elapsed < timeout*time.Millisecond/2 {
		t.Errorf("the ephemeral vanished %v after the client, before its %d ms session timeout", elapsed, timeout)
	}
	for i, nd := range c.Nodes {
		cl := rawConnect(t, nd.Client, fmt.Sprintf("check%d", i+1), 30000)
		if _, err := cl.Call(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); err != nil {
			t.Fatal(err)
		}
		if r, err := cl.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/eph"}); err != nil || r.Header.Err != zkproto.ErrNoNode {
			t.Errorf("node %d after expiry: exists /eph = %+v %v, want NoNode", i+1, r, err)
		}
		cl.Close()
	}
	t.Logf("ephemeral of the vanished client deleted after %v (session timeout %d ms)", elapsed, timeout)
}

// writeMany creates n nodes under root (spread over 10 parents) from
// several goroutines, changes every 10th and deletes every 7th.
func writeMany(t testing.TB, conn *zk.Conn, root string, n int) {
	t.Helper()
	for _, p := range []string{root} {
		if _, err := conn.Create(p, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for d := range 10 {
		if _, err := conn.Create(fmt.Sprintf("%s/d%d", root, d), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += workers {
				p := fmt.Sprintf("%s/d%d/n%05d", root, i%10, i)
				if _, err := conn.Create(p, []byte(p), 0, openACL); err != nil {
					errs <- fmt.Errorf("create %s: %w", p, err)
					return
				}
				if i%10 == 0 {
					if _, err := conn.Set(p, []byte("changed"), 0); err != nil {
						errs <- fmt.Errorf("set %s: %w", p, err)
						return
					}
				}
				if i%7 == 0 {
					if err := conn.Delete(p, -1); err != nil {
						errs <- fmt.Errorf("delete %s: %w", p, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// dumpTree lists every node under root with its data and full stat, as
// one node serves them after a sync.
func dumpTree(t testing.TB, addr, root string) []string {
	t.Helper()
	conn := gzConnect(t, []string{addr}, 10*time.Second, nil)
	defer conn.Close()
	if _, err := conn.Sync(root); err != nil {
		t.Fatalf("sync on %s: %v", addr, err)
	}
	var out []string
	var walk func(p string)
	walk = func(p string) {
		data, s, err := conn.Get(p)
		if err != nil {
			t.Fatalf("get %s on %s: %v", p, addr, err)
		}
		out = append(out, fmt.Sprintf("%s %q czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d v=%d cv=%d av=%d owner=%#x len=%d kids=%d",
			p, data, s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner, s.DataLength, s.NumChildren))
		kids, _, err := conn.Children(p)
		if err != nil {
			t.Fatalf("children %s on %s: %v", p, addr, err)
		}
		sort.Strings(kids)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return out
}

// compareDumps checks every node serves the same tree under root.
func compareDumps(t testing.TB, c *ProcCluster, root string) int {
	t.Helper()
	dumps := make([][]string, len(c.Nodes))
	var wg sync.WaitGroup
	for i, nd := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); dumps[i] = dumpTree(t, nd.Client, root) }()
	}
	wg.Wait()
	for i := 1; i < len(dumps); i++ {
		if d := diff(dumps[0], dumps[i]); d != "" {
			t.Errorf("node %d's tree differs from node 1's:\n%s", i+1, d)
		}
	}
	return len(dumps[0])
}

// TestFaultFollowerRestartCatchesUp kills a follower between two batches
// of writes and restarts it: it replays its own log, catches up with what
// it missed, and then serves the same tree as the others.
func TestFaultFollowerRestartCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := StartProcCluster(t, 3, ClusterOptions{})
	lead := c.WaitLeader(30 * time.Second)
	follower := (lead + 1) % 3
	conn := gzConnect(t, []string{c.Nodes[lead].Client, c.Nodes[(lead+2)%3].Client}, 10*time.Second, nil)

	writeMany(t, conn, "/r1", 1000)
	c.Kill(follower)
	writeMany(t, conn, "/r2", 1000)
	start := time.Now()
	c.Start(follower)
	zxid := c.WaitCaughtUp(60 * time.Second)
	caughtUp := time.Since(start)
	n := compareDumps(t, c, "/r1") + compareDumps(t, c, "/r2")
	t.Logf("follower %d restarted and caught up to zxid %#x in %v; %d nodes identical on all three", follower+1, zxid, caughtUp, n)
}

// maxLogIndex is the largest "index" of node i's log events named msg
// (0 if none yet).
func maxLogIndex(c *ProcCluster, i int, msg string) uint64 {
	var top uint64
	for _, ev := range c.LogEvents(i, msg) {
		if f, ok := ev["index"].(float64); ok && uint64(f) > top {
			top = uint64(f)
		}
	}
	return top
}

// waitLogIndex waits until node i logged msg with an index above after,
// and returns the largest such index.
func waitLogIndex(t testing.TB, c *ProcCluster, i int, msg string, after uint64, d time.Duration) uint64 {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if top := maxLogIndex(c, i, msg); top > after {
			return top
		}
	}
	t.Fatalf("node %d logged no %q past index %d within %v", c.Nodes[i].ID, msg, after, d)
	return 0
}

// waitEqualHashes waits until every live node reports the same applied
// index, then requires their content hashes to be equal at it.
func waitEqualHashes(t testing.TB, c *ProcCluster, d time.Duration) (uint64, string) {
	t.Helper()
	var last []string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last = last[:0]
		indexes, hashes := map[uint64]bool{}, map[string]bool{}
		for i, nd := range c.Nodes {
			index, hash, err := c.ContentHash(i)
			if err != nil {
				t.Fatalf("node %d content hash: %v", nd.ID, err)
			}
			last = append(last, fmt.Sprintf("node %d: index %d hash %.12s", nd.ID, index, hash))
			indexes[index], hashes[hash] = true, true
		}
		if len(indexes) > 1 {
			continue // one node is still applying: compare at one index only
		}
		if len(hashes) > 1 {
			t.Fatalf("replicas at one applied index differ: %s", strings.Join(last, "; "))
		}
		for h := range hashes {
			for index := range indexes {
				return index, h
			}
		}
	}
	t.Fatalf("replicas did not reach one applied index within %v: %s", d, strings.Join(last, "; "))
	return 0, ""
}

// checkJoinerReads runs sync through the joined replica's client port and
// raft status (a membership read) on its admin port a few times; each must
// answer well within the 10 s (sync) or 15 s (status) a lost read index
// message would hold it.
func checkJoinerReads(t testing.TB, c *ProcCluster, i int, conn *zk.Conn, round string) time.Duration {
	t.Helper()
	const bound = 5 * time.Second
	var slowest time.Duration
	for n := range 5 {
		began := time.Now()
		_, err := conn.Sync("/")
		took := time.Since(began)
		if err != nil || took > bound {
			t.Errorf("%s: sync %d on the joined replica: %v after %v", round, n+1, err, took)
		}
		slowest = max(slowest, took)
		began = time.Now()
		st, err := c.StatusWithin(i, 2*bound)
		took = time.Since(began)
		if err != nil || took > bound || st.LeaderID == 0 {
			t.Errorf("%s: raft status %d on the joined replica: %+v %v after %v", round, n+1, st, err, took)
		}
		slowest = max(slowest, took)
	}
	return slowest
}

// TestFaultWipedReplicaRejoinsBySnapshot writes enough that the leader
// compacts its log, wipes a follower's disk, removes it from the membership
// and adds it back under a new replica id at the same address. Its log
// cannot be replayed from index 1 any more, so it catches up by snapshot;
// then all three hold identical state. Its own linearizable reads (sync,
// raft status) answer promptly, also while dragonboat's transport still
// drops messages to it after a failed dial (its links cut for a moment).
func TestFaultWipedReplicaRejoinsBySnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	const snapEvery = 50 // the log keeps 5× this behind each snapshot
	c := StartProcCluster(t, 3, ClusterOptions{SnapshotEntries: snapEvery, Proxied: true})
	lead := c.WaitLeader(30 * time.Second)
	victim, other := (lead+1)%3, (lead+2)%3
	conn := gzConnect(t, []string{c.Nodes[lead].Client, c.Nodes[other].Client}, 10*time.Second, nil)

	writeMany(t, conn, "/s1", 800)
	// Compacted: the leader's log starts past index 1.
	compacted := waitLogIndex(t, c, lead, "raft log compacted", 0, 30*time.Second)

	oldID := c.Nodes[victim].ID // the proxy knows the node by this id
	c.Wipe(victim, 4)
	if err := c.AdminPost(lead, "/raft/remove-voter", url.Values{"id": {fmt.Sprint(oldID)}}); err != nil {
		t.Fatal(err)
	}
	writeMany(t, conn, "/s2", 300)
	// Compaction keeps going: the log stays bounded while writes continue.
	compacted = waitLogIndex(t, c, lead, "raft log compacted", compacted, 30*time.Second)

	// Added first: the leader dials it before it listens.
	if err := c.AdminPost(lead, "/raft/add-voter", url.Values{"id": {"4"}, "addr": {c.Nodes[victim].Peer}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Start(victim)
	joined := gzConnect(t, []string{c.Nodes[victim].Client}, 30*time.Second, nil)
	serving := time.Since(start)
	slowest := checkJoinerReads(t, c, victim, joined, "just joined")

	// A failed dial trips the sender's circuit breaker, which then drops
	// messages for up to ~1.5 s, and a read index is never re-sent.
	c.Proxy.Isolate(oldID)
	time.Sleep(300 * time.Millisecond)
	c.Proxy.Heal()
	if !c.WaitReady(victim, 10*time.Second) {
		t.Fatal("the joined replica has no leader 10 s after its links came back")
	}
	slowest = max(slowest, checkJoinerReads(t, c, victim, joined, "links back"))

	zxid := c.WaitCaughtUp(60 * time.Second)
	caughtUp := time.Since(start)
	// By snapshot: the joiner, empty when it started, received one and
	// recovered its state from it, at an index past what the leader's log
	// still holds from.
	if len(c.LogEvents(victim, "snapshot received")) == 0 {
		t.Error("the joiner logged no snapshot received")
	}
	got := waitLogIndex(t, c, victim, "snapshot recovered", 0, 10*time.Second)
	if got <= compacted {
		t.Errorf("the joiner's snapshot is at index %d, not past the leader's compaction to %d", got, compacted)
	}
	joined.Close()
	conn.Close()
	n := compareDumps(t, c, "/s1") + compareDumps(t, c, "/s2")
	index, hash := waitEqualHashes(t, c, 30*time.Second)
	t.Logf("leader's log compacted to %d; replica 4 serving after %v, caught up to zxid %#x by a snapshot at index %d in %v; "+
		"slowest read on it %v; %d nodes identical; content hash %.16s at applied index %d on all three",
		compacted, serving, zxid, got, caughtUp, slowest, n, hash, index)
}

// TestFaultPartitionedLeader cuts the leader off from the other two: it
// commits nothing and its client loses the connection, the majority elects
// a leader and keeps serving, and after healing the old leader catches up.
func TestFaultPartitionedLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := StartProcCluster(t, 3, ClusterOptions{Proxied: true})
	lead := c.WaitLeader(30 * time.Second)
	iso := c.Nodes[lead]
	var majority []string
	for i, nd := range c.Nodes {
		if i != lead {
			majority = append(majority, nd.Client)
		}
	}
	writer := gzConnect(t, majority, 10*time.Second, nil)
	writeMany(t, writer, "/p1", 200)
	c.WaitCaughtUp(30 * time.Second)

	m := rawConnect(t, iso.Client, "minority", 10000)
	c.Proxy.Isolate(iso.ID)
	cut := time.Now()

	// The cut-off node cannot commit: its client's write never succeeds,
	// the connection is lost instead.
	r, err := m.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/minority", ACL: zkproto.OpenACLUnsafe()})
	if err == nil {
		t.Fatalf("a write on the cut-off node was answered: %+v", r.Header)
	}
	lost := time.Since(cut)
	isoZxid := c.LastZxid(lead)

	// The majority elects a leader and serves writes.
	newLead := c.WaitLeader(30 * time.Second)
	if newLead == lead {
		t.Fatal("the cut-off node still leads")
	}
	writeMany(t, writer, "/p2", 200)
	if z := c.LastZxid(lead); z != isoZxid {
		t.Errorf("the cut-off node's zxid moved from %#x to %#x: it applied writes without a majority", isoZxid, z)
	}
	// New sessions are refused there: a client must go to the majority.
	if cl, _, err := Connect(iso.Client, "late", NewTranscript(), DialOptions{Timeout: 10000}); err == nil && cl.SessionID != 0 {
		cl.Close()
		t.Error("the cut-off node accepted a new session")
	}

	c.Proxy.Heal()
	healed := time.Now()
	c.WaitCaughtUp(60 * time.Second)
	rejoined := time.Since(healed)
	n := compareDumps(t, c, "/p1") + compareDumps(t, c, "/p2")
	check := gzConnect(t, []string{iso.Client}, 10*time.Second, nil)
	if _, err := check.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := check.Exists("/minority"); err != nil || ok {
		t.Errorf("the write attempted on the cut-off node: exists=%v err=%v, want absent", ok, err)
	}
	t.Logf("cut-off client lost its connection after %v (err %v); old leader rejoined in %v; %d nodes identical", lost, err, rejoined, n)
}

// BenchmarkFailoverGap measures the failover gap (last write acknowledged
// before the leader is killed with SIGKILL → first one after) five times on
// a 3-node zkbridge and five times on a 3-node ZooKeeper 3.8, the same
// go-zookeeper writer against both, and prints the medians side by side.
// Run it with scripts/failover-gap.sh.
func BenchmarkFailoverGap(b *testing.B) {
	if testing.Short() {
		b.Skip("starts ten 3-node clusters")
	}
	const runs = 5
	var zb, zo []time.Duration
	for i := range runs {
		b.Run(fmt.Sprintf("zkbridge-%d", i+1), func(b *testing.B) {
			// The server's default election timeout, as an operator runs it
			// (the suite's longer one is for its scenarios, not for speed).
			c := StartProcCluster(b, 3, ClusterOptions{ElectionTimeout: server.DefaultElectionTimeout})
			c.WaitLeader(30 * time.Second)
			// The leader as the kill comes: one elected at start may have
			// given way while the writer warmed up.
			gap, _ := failoverRun(b, c.Addrs(), "/gap", func() { c.Kill(c.WaitLeader(30 * time.Second)) })
			zb = append(zb, gap)
		})
		b.Run(fmt.Sprintf("zookeeper-%d", i+1), func(b *testing.B) {
			ens, err := StartZooKeeperEnsemble(3)
			if err != nil {
				b.Fatal(err)
			}
			defer ens.Stop()
			gap, _ := failoverRun(b, ens.Addrs, "/gap", func() {
				lead := -1
				for j, addr := range ens.Addrs {
					if out, _, err := fourLetter(addr, []byte("srvr")); err == nil && strings.Contains(out, "Mode: leader") {
						lead = j
					}
				}
				if lead < 0 {
					b.Fatal("no ZooKeeper leader")
				}
				_ = ens.Kill(lead)
				// gone once its client port refuses connections
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					nc, err := net.DialTimeout("tcp", ens.Addrs[lead], time.Second)
					if err != nil {
						break
					}
					nc.Close()
					if time.Now().After(deadline) {
						b.Fatal("the killed ZooKeeper leader still accepts connections")
					}
				}
			})
			zo = append(zo, gap)
		})
	}
	median := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		if len(s) == 0 {
			return -1
		}
		return s[len(s)/2]
	}
	fmt.Printf("\nfailover gap after kill -9 of the leader (3 nodes, %d runs each)\n", runs)
	fmt.Printf("%-10s %-12s %s\n", "server", "median", "runs")
	fmt.Printf("%-10s %-12v %v\n", "zkbridge", median(zb).Round(time.Millisecond), roundAll(zb))
	fmt.Printf("%-10s %-12v %v\n", "zookeeper", median(zo).Round(time.Millisecond), roundAll(zo))
	b.ReportMetric(float64(median(zb).Milliseconds()), "zkbridge-median-ms")
	b.ReportMetric(float64(median(zo).Milliseconds()), "zookeeper-median-ms")
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
