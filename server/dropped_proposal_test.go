package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"

	"github.com/zkbridge/zkbridge/server/node/peernet"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A follower forwards its clients' writes to the leader as Propose
// messages, once; a leader whose receive queue is full (a follower that
// resumed after a pause floods it) drops them without telling anyone. The
// write must still be answered soon: proposed again (primary order makes
// the retry safe) or failed with ConnectionLoss, never left waiting for the
// proposal's 10 s timeout (issue 34, defect 1).
func TestWriteForwardedFromFollowerSurvivesDroppedProposal(t *testing.T) {
	servers := startCluster(t, 3, 2*time.Second)
	li := leaderOf(t, servers)
	fi := (li + 1) % 3
	leaderFaults := peernet.FaultsFor(servers[li].cfg.PeerAddr)
	t.Cleanup(leaderFaults.Heal)

	c := dial(t, servers[fi])
	for round := 0; round < 3; round++ {
		// Drop the next forwarded proposal(s) of this follower: one in
		// round 0, the next two in round 1 (the retry is dropped too),
		// every one for 300 ms in round 2.
		fid := servers[fi].cfg.ReplicaID
		budget := round + 1
		until := time.Now().Add(300 * time.Millisecond)
		leaderFaults.DropWhen(func(m raftpb.Message) bool {
			if m.Type != raftpb.Propose || m.From != fid {
				return false
			}
			if round == 2 {
				return time.Now().Before(until)
			}
			if budget > 0 {
				budget--
				return true
			}
			return false
		})
		before := leaderFaults.Dropped()
		path := fmt.Sprintf("/dropped-%d", round)
		start := time.Now()
		xid := c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACLUnsafe()})
		h, _ := c.reply()
		took := time.Since(start)
		if h.Xid != xid || h.Err != zkproto.ErrOK {
			t.Fatalf("round %d: create %s answered xid %d err %v, want xid %d ok", round, path, h.Xid, h.Err, xid)
		}
		if leaderFaults.Dropped() == before {
			t.Fatalf("round %d: no proposal was dropped; the test did not exercise the fault", round)
		}
		// The retry comes after proposalRetryAfter (and its doublings);
		// far below the 10 s the write waited before.
		if took > 4*time.Second {
			t.Fatalf("round %d: the write was answered after %v", round, took)
		}
		t.Logf("round %d: answered after %v with %d proposal(s) dropped", round, took.Round(time.Millisecond), leaderFaults.Dropped()-before)
		leaderFaults.DropWhen(nil)
	}
	// Applied once each, on every node; the connection is still usable.
	xid := c.send(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/"})
	h, d := c.reply()
	if h.Xid != xid || h.Err != zkproto.ErrOK {
		t.Fatalf("getChildren: %+v", h)
	}
	var kids zkproto.GetChildrenResponse
	if err := kids.Decode(d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range kids.Children {
		if len(k) > 8 && k[:8] == "dropped-" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("children %v: want dropped-0..2 once each", kids.Children)
	}
}
