package server

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/node/peernet"
)

// A node cut off from the majority sends its clients away once it has had
// no leader for leaderLostAfter (five election timeouts, at least 1 s), so
// they fail over to a node that can serve them. That used to be checked
// only every half tick: with the default 2 s tick a cut-off leader's
// clients went 2.1 s after it lost its quorum, all nine writers of the
// fault suite's isolate-leader round with them (issue 34: a partition is
// to cost no more than 1 s of writes). With a 4 s tick the half-tick check
// alone closes the connection 2-4 s after the leader is lost; it must go
// about 1 s after.
func TestCutOffNodeSendsClientsAwayOnTime(t *testing.T) {
	servers := startClusterWith(t, 3, 4*time.Second, func(c *Config) { c.ElectionTimeout = 200 * time.Millisecond })
	fi := (leaderOf(t, servers) + 1) % 3
	c := dial(t, servers[fi])
	cutOff(t, servers, fi)
	lost := time.Now()
	_ = c.nc.SetReadDeadline(lost.Add(10 * time.Second))
	_, err := c.fr.Next()
	took := time.Since(lost)
	if err == nil {
		t.Fatal("the cut-off node answered something; want its client connection closed")
	}
	if took >= 1800*time.Millisecond {
		t.Fatalf("the cut-off node closed its client's connection %v after it lost its leader (%v); want about leaderLostAfter, 1 s", took.Round(time.Millisecond), err)
	}
	t.Logf("connection closed %v after the leader was lost", took.Round(time.Millisecond))
}

// A leader cut off from the majority loses its quorum (CheckQuorum) and
// the others elect a new leader without it: it sends its clients away
// after two election timeouts (deposedLeaderLostAfter), not five, as a
// ZooKeeper leader that loses its quorum closes its clients at once.
func TestCutOffLeaderSendsClientsAwaySoon(t *testing.T) {
	servers := startClusterWith(t, 3, 2*time.Second, func(c *Config) { c.ElectionTimeout = 200 * time.Millisecond })
	li := leaderOf(t, servers)
	c := dial(t, servers[li])
	cutOff(t, servers, li)
	lost := time.Now()
	_ = c.nc.SetReadDeadline(lost.Add(10 * time.Second))
	_, err := c.fr.Next()
	took := time.Since(lost)
	if err == nil {
		t.Fatal("the cut-off leader answered something; want its client connection closed")
	}
	if took >= 800*time.Millisecond {
		t.Fatalf("the cut-off leader closed its client's connection %v after it lost its quorum (%v); want two election timeouts, 0.4 s", took.Round(time.Millisecond), err)
	}
	t.Logf("connection closed %v after the leader lost its quorum", took.Round(time.Millisecond))
}

// cutOff isolates servers[i] from its two peers (every message between
// them discarded on arrival) until the returned heal is called, or the
// test ends, and waits until it knows no leader.
func cutOff(t *testing.T, servers []*Server, i int) (heal func()) {
	t.Helper()
	var faults []*peernet.Faults
	for j, s := range servers {
		f := peernet.FaultsFor(s.cfg.PeerAddr)
		faults = append(faults, f)
		if j == i {
			var others []uint64
			for k, o := range servers {
				if k != i {
					others = append(others, o.cfg.ReplicaID)
				}
			}
			f.Cut(others...)
		} else {
			f.Cut(servers[i].cfg.ReplicaID)
		}
	}
	heal = func() {
		for _, f := range faults {
			f.Heal()
		}
	}
	t.Cleanup(heal)
	deadline := time.Now().Add(20 * time.Second)
	for servers[i].node.Raft().HasLeader {
		if time.Now().After(deadline) {
			t.Fatal("the cut-off node still knows a leader after 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return heal
}
