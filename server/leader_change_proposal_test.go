package server

import (
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
func TestWriteCaughtInALeaderChangeGoesToTheNewLeader(t *testing.T) {
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

	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := c.fr.Next()
	took := time.Since(start)
	if err != nil {
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
