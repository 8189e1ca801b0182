package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"

	"github.com/zkbridge/zkbridge/server/node/peernet"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A write a follower forwarded to the leader just before the leader was
// cut off (paused, partitioned) is lost with it. Once a new leader is
// elected the write must go to it and be answered: it used to wait for
// the leader change and then settle as outcome unknown, so the door
// closed the connection (ConnectionLoss) and the client reconnected and
// tried again, half a second and more after writes were possible again
// (issue 34: a leader pause is to cost no more than 0.5 s of writes). The
// (connection, sequence) rule makes the second copy safe.
//
// A node leaderless for longer than an election among reachable peers
// takes (two election timeouts) stops proposing again and closes the
// connection by design (raftNode.cutOff): the client's next node is then
// the safe place for the write. On a loaded host an election can fail
// (a split vote) and take that long; such a run tests nothing and is
// tried again in a new cluster, up to three times. A fast election with
// the connection closed still fails the test.
func TestWriteCaughtInALeaderChangeGoesToTheNewLeader(t *testing.T) {
	for attempt := 1; attempt <= 3; attempt++ {
		slowElection := false
		t.Run(fmt.Sprintf("attempt%d", attempt), func(t *testing.T) {
			writeCaughtInALeaderChange(t, &slowElection)
		})
		if !slowElection {
			return
		}
	}
	t.Fatal("three attempts met an election slower than the cut-off window; the scenario was never exercised")
}

// writeCaughtInALeaderChange runs the scenario once in a new cluster. It
// sets *slowElection and skips when the connection was closed because the
// election took longer than the cut-off window.
func writeCaughtInALeaderChange(t *testing.T, slowElection *bool) {
	servers := startCluster(t, 3, 2*time.Second)
	li := leaderOf(t, servers)
	fi, oi := (li+1)%3, (li+2)%3
	lid, fid, oid := servers[li].cfg.ReplicaID, servers[fi].cfg.ReplicaID, servers[oi].cfg.ReplicaID
	leaderFaults := peernet.FaultsFor(servers[li].cfg.PeerAddr)
	followerFaults := peernet.FaultsFor(servers[fi].cfg.PeerAddr)
	otherFaults := peernet.FaultsFor(servers[oi].cfg.PeerAddr)
	t.Cleanup(func() {
		leaderFaults.DropWhen(nil)
		leaderFaults.Heal()
		followerFaults.Heal()
		otherFaults.Heal()
	})

	c := dial(t, servers[fi])
	// The leader loses the follower's forwarded proposal, then the leader
	// is cut off from both followers, which elect a new one.
	leaderFaults.DropWhen(func(m raftpb.Message) bool { return m.Type == raftpb.Propose && m.From == fid })
	start := time.Now()
	xid := c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/caught", ACL: zkproto.OpenACLUnsafe()})
	leaderFaults.Cut(fid, oid)
	followerFaults.Cut(lid)
	otherFaults.Cut(lid)
	cut := time.Now()
	// When the followers first have a new leader, polled while the client
	// waits for its answer.
	elected := make(chan time.Duration, 1)
	stop, stopped := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); <-stopped }) // before the cluster stops
	go func() {
		defer close(stopped)
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			select {
			case <-stop:
				return
			default:
			}
			if servers[fi].node.IsLeader() || servers[oi].node.IsLeader() {
				elected <- time.Since(cut)
				return
			}
		}
		elected <- -1
	}()

	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := c.fr.Next()
	took := time.Since(start)
	if err != nil {
		// The followers notice the loss within two election timeouts of
		// the cut and are cut off two more after that.
		window := 4 * servers[fi].cfg.ElectionTimeout
		if after := <-elected; after < 0 || after > window {
			*slowElection = true // Skipf ends this goroutine
			t.Skipf("the new leader came %v after the cut, past the %v cut-off window; the connection was closed by design (%v)", after.Round(time.Millisecond), window, err)
		}
		t.Fatalf("the write caught in the leader change was not answered (%v after %v): the connection was closed (ConnectionLoss) instead of the write going to the new leader", err, took.Round(time.Millisecond))
	}
	d := zkproto.NewDecoder(append([]byte(nil), frame...))
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		t.Fatal(err)
	}
	if h.Xid != xid || h.Err != zkproto.ErrOK {
		t.Fatalf("create /caught answered xid %d err %v after %v, want xid %d ok", h.Xid, h.Err, took, xid)
	}
	if leaderFaults.Dropped() == 0 {
		t.Fatal("no proposal was dropped; the test did not exercise the fault")
	}
	if now := leaderOf(t, []*Server{servers[fi], servers[oi]}); now < 0 {
		t.Fatal("no new leader")
	}
	t.Logf("answered %v after the write was sent", took.Round(time.Millisecond))

	// Applied once: a second create of the same path fails with NodeExists.
	xid = c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/caught", ACL: zkproto.OpenACLUnsafe()})
	if h, _ := c.reply(); h.Xid != xid || h.Err != zkproto.ErrNodeExists {
		t.Fatalf("second create: xid %d err %v, want NodeExists", h.Xid, h.Err)
	}
}
