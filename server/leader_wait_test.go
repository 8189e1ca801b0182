package server

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A write proposed on a node that knows no leader (mid-election: a
// candidate, or a follower whose leader stopped) is dropped by Raft before
// it enters any log. It must wait for a leader and go to it, not close the
// client's connection: the client then reconnected, perhaps to the node
// that had stopped, and waited for its library's timeout while the new
// leader took writes (issue 34: a leader pause is to cost no more than
// 0.5 s of writes). Here a follower cut off from both peers loses its
// leader, a create is sent to it, and the cut is healed: the create is
// answered OK, and applied once. A node that stays cut off fails the write
// after two election timeouts instead.
func TestWriteDroppedForWantOfALeaderWaitsForOne(t *testing.T) {
	// A 1 s election timeout: the node sends its clients away only after
	// five of them without a leader, far beyond this test's cut.
	servers := startClusterWith(t, 3, 2*time.Second, func(c *Config) { c.ElectionTimeout = time.Second })
	fi := (leaderOf(t, servers) + 1) % 3
	c := dial(t, servers[fi])
	heal := cutOff(t, servers, fi)
	deadline := time.Now().Add(20 * time.Second)
	xid := c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/dropped", ACL: zkproto.OpenACLUnsafe()})
	// The proposal is dropped at once (the node has no leader); heal once
	// it was.
	for servers[fi].node.Raft().ProposalsDroppedNoLeader == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the follower without a leader did not drop the proposal; the test did not exercise the fault")
		}
		time.Sleep(5 * time.Millisecond)
	}
	healed := time.Now()
	heal()

	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := c.fr.Next()
	if err != nil {
		t.Fatalf("the write dropped for want of a leader was not answered (%v): the connection was closed (ConnectionLoss) instead of the write waiting for a leader", err)
	}
	d := zkproto.NewDecoder(append([]byte(nil), frame...))
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		t.Fatal(err)
	}
	if h.Xid != xid || h.Err != zkproto.ErrOK {
		t.Fatalf("create /dropped answered xid %d err %v, want xid %d ok", h.Xid, h.Err, xid)
	}
	t.Logf("answered %v after the heal", time.Since(healed).Round(time.Millisecond))
	_ = c.nc.SetReadDeadline(time.Time{})

	// Applied once: a second create of the same path fails with NodeExists.
	xid = c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/dropped", ACL: zkproto.OpenACLUnsafe()})
	if h, _ := c.reply(); h.Xid != xid || h.Err != zkproto.ErrNodeExists {
		t.Fatalf("second create: xid %d err %v, want NodeExists", h.Xid, h.Err)
	}

	// A node that stays cut off does not hold its clients' writes: after
	// two election timeouts without a leader the write fails and the
	// connection is closed, so the client moves to a node that can serve
	// it, well before the node sends every client away (five election
	// timeouts without a leader, then the next half-tick check).
	cutOff(t, servers, fi)
	sent := time.Now()
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/cutoff", ACL: zkproto.OpenACLUnsafe()})
	_ = c.nc.SetReadDeadline(sent.Add(4 * time.Second))
	if frame, err := c.fr.Next(); err == nil {
		t.Fatalf("a write on a node cut off from the majority was answered (%d bytes); want the connection closed", len(frame))
	} else if time.Since(sent) >= 4*time.Second {
		t.Fatalf("a write on a node cut off from the majority was still held %v after it was sent (want it failed after two election timeouts): %v", time.Since(sent).Round(time.Millisecond), err)
	}
	t.Logf("the cut-off node closed the connection %v after the write", time.Since(sent).Round(time.Millisecond))
}
