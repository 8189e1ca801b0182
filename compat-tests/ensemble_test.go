package compattests

import (
	"strings"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// TestZooKeeperEnsembleOracle checks the 3-node oracle the cluster
// scenarios compare with: one leader, a write on one node visible on another
// after sync, and a session that moves between nodes.
func TestZooKeeperEnsembleOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node ZooKeeper ensemble")
	}
	ens, err := StartZooKeeperEnsemble(3)
	if err != nil {
		t.Fatalf("start ensemble (run scripts/install-zookeeper.sh): %v", err)
	}
	defer ens.Stop()
	modes := map[string]int{}
	for _, addr := range ens.Addrs {
		out, _, err := fourLetter(addr, []byte("srvr"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(line, "Mode: "); ok {
				modes[m]++
			}
		}
	}
	if modes["leader"] != 1 || modes["follower"] != 2 {
		t.Fatalf("ensemble modes %v, want 1 leader and 2 followers", modes)
	}

	tr := NewTranscript()
	a, _, err := Connect(ens.Addrs[0], "a", tr, DialOptions{Timeout: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if r, err := a.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/ens", Data: []byte("x"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("create on node 1: %+v %v", r, err)
	}
	b, _, err := Connect(ens.Addrs[2], "b", tr, DialOptions{Timeout: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Call(zkproto.OpSync, &zkproto.SyncRequest{Path: "/ens"}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Call(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/ens"}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("read on node 3 after sync: %+v %v", r, err)
	}
	// The session moves to node 2 with its id and password; its ephemeral stays.
	moved, _, err := Connect(ens.Addrs[1], "a2", tr, DialOptions{Timeout: 10000, SessionID: a.SessionID, Passwd: a.Passwd, LastZxidSeen: a.LastZxid})
	if err != nil || moved.SessionID != a.SessionID {
		t.Fatalf("session move: %v (session %#x, want %#x)", err, moved.SessionID, a.SessionID)
	}
	defer moved.Close()
	// In an ensemble the old node learns of the move lazily: reads on the
	// old connection are still served, its next write fails the owner
	// check (SessionMoved) and the connection is closed instead of answered.
	if r, err := a.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/ens"}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("read on the old connection: %+v %v", r, err)
	}
	if r, err := a.Call(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/ens", Data: []byte("y"), Version: -1}); err == nil {
		t.Fatalf("write on the old connection of a moved session answered %+v; ZooKeeper closes it", r.Header)
	}
	if r, err := moved.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/ens"}); err != nil || r.Header.Err != zkproto.ErrOK {
		t.Fatalf("ephemeral after the move: %+v %v", r, err)
	}
}
