package compattests

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// TestCompatCluster runs every scenario against a 3-node ZooKeeper
// ensemble (the oracle) and a 3-node zkbridge cluster. A scenario's k-th
// connection goes to node k mod 3, so sessions, watches and reads cross
// nodes; S catches a node up (a sync outside the transcript) before a
// client reads what another node's client did, which a single server
// gives for free.
func TestCompatCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node ZooKeeper ensemble and a 3-node zkbridge cluster")
	}
	ens, err := StartZooKeeperEnsemble(3)
	if err != nil {
		t.Fatalf("start ZooKeeper ensemble (run scripts/install-zookeeper.sh): %v", err)
	}
	defer ens.Stop()
	zb, err := StartZkbridgeCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatalf("start zkbridge cluster: %v", err)
	}
	defer zb.Stop()
	zkAddrs, err := leaderLast(ens.Addrs, 30*time.Second)
	if err != nil {
		t.Fatalf("ZooKeeper ensemble: %v", err)
	}
	zbAddrs, err := leaderLast(zb.Addrs, 30*time.Second)
	if err != nil {
		t.Fatalf("zkbridge cluster: %v", err)
	}
	defer startWakers(t, zkAddrs)()
	defer startWakers(t, zbAddrs)()
	// Roles must stay aligned (the first connection and the 4lw go to a
	// follower on both sides): an election on this loaded machine moves
	// zkbridge's leader back before the next scenario.
	leader := uint64(slices.Index(zb.Addrs, zbAddrs[len(zbAddrs)-1]) + 1)
	keepLeader := func(t *testing.T) {
		moved, err := zb.KeepLeader(leader)
		if err != nil {
			t.Fatalf("zkbridge leadership moved and could not be moved back to node %d: %v", leader, err)
		}
		if moved {
			t.Logf("zkbridge leadership had moved; node %d leads again", leader)
		}
	}
	compareAll(t, "3-node cluster", zkAddrs, zbAddrs, keepLeader)
}

// wakeEvery is how often a waker pings its node.
const wakeEvery = 100 * time.Millisecond

// startWakers works around ZOOKEEPER-4537 (fixed in 3.8.1, the suite's
// ZooKeeper is 3.8.0): an ensemble node's CommitProcessor can miss the
// wake-up for a commit and leave a request, or a session's creation,
// unanswered until another request reaches that node, which in a scenario
// stepping one request at a time means until the client gives up. One
// session per node pinging every wakeEvery (pings pass through the
// CommitProcessor) bounds such a stall. zkbridge gets the same sessions,
// so both sides list the same connections (stat, cons). It returns stop.
func startWakers(t *testing.T, addrs []string) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, addr := range addrs {
		c, _, err := Connect(addr, "waker", NewTranscript(), DialOptions{})
		if err != nil {
			t.Fatalf("waker for node %d: %v", i+1, err)
		}
		// One request, so cons shows it like any client's connection.
		if _, err := c.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"}); err != nil {
			t.Fatalf("waker for node %d: %v", i+1, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wake(t, c, i, done)
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// wake pings until done, then closes its session. It does not wait for
// the replies: a stalled ping must not hold back the next one.
func wake(t *testing.T, c *Client, node int, done chan struct{}) {
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_ = c.nc.SetReadDeadline(time.Time{})
		for {
			if _, err := c.fr.Next(); err != nil {
				return
			}
		}
	}()
	defer func() {
		_, _ = c.Send(zkproto.OpCloseSession, nil)
		time.Sleep(wakeEvery) // the close is answered before the reader sees EOF
		c.Close()
		<-drained
	}()
	tick := time.NewTicker(wakeEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-drained:
			t.Errorf("waker of node %d: the server closed its connection", node+1)
			return
		case <-tick.C:
			// xid -2, as client libraries ping: it is no operation of the
			// session (cons shows none for it).
			if err := c.SendXid(zkproto.XidPing, zkproto.OpPing, nil); err != nil {
				t.Errorf("waker of node %d: %v", node+1, err)
				return
			}
		}
	}
}

// leaderLast orders a cluster's client addresses followers first, the
// leader last. A scenario's first connection and its four-letter words
// then go to a follower on both sides (srvr, stat and mntr differ by
// role), and the k-th client has the same role on both.
func leaderLast(addrs []string, d time.Duration) ([]string, error) {
	deadline := time.Now().Add(d)
	var modes []string
	for time.Now().Before(deadline) {
		modes = modes[:0]
		leader := -1
		for i, addr := range addrs {
			m := nodeMode(addr)
			modes = append(modes, m)
			if m == "leader" {
				leader = i
			}
		}
		if leader >= 0 {
			var out []string
			for i, addr := range addrs {
				if i != leader {
					out = append(out, addr)
				}
			}
			return append(out, addrs[leader]), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("no leader within %v (modes %v)", d, modes)
}
