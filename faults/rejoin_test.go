package faults

import (
	"sync"
	"testing"
	"time"
)

// A follower paused for 3 s under write load used to come back to
// thousands of stale queued messages, overflow its own and the leader's
// receive queues ("dropped an incoming message" by the thousand) and let
// another node win an election against a healthy leader (issue 34, defect
// 2). Now it discards that backlog on resume (peernet's stall watch), so
// nothing is dropped and the leader stays. The election timeout is 1 s
// here so that host load alone cannot cause an election the test blames
// on the rejoin.
func TestResumedFollowerDoesNotDisruptTheLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	bin, err := Binary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := StartZkbridge(bin, dir, 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leader, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var h History
	stop := make(chan struct{})
	var wg sync.WaitGroup
	w := set{}
	setup, err := dialClient(100, c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Setup(setup.conn); err != nil {
		t.Fatal(err)
	}
	setup.close()
	if err := runClients(w, c.Addrs(), 0, 6, &h, stop, &wg); err != nil {
		t.Fatal(err)
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second)
	follower := (leader + 1) % 3
	if err := c.Pause(follower); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := c.Resume(follower); err != nil {
		t.Fatal(err)
	}
	// The resumed node notices its stall at its first tick.
	deadline := time.Now().Add(10 * time.Second)
	for c.LogCount(follower, "closed its incoming peer connections") == 0 {
		if time.Now().After(deadline) {
			t.Errorf("node %d did not notice its 3 s pause", follower+1)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	if n := c.Drops(); n > 0 {
		t.Errorf("%d incoming messages dropped after the follower resumed", n)
	}
	if n := c.Elections(); n > 0 {
		t.Errorf("%d leader changes although the leader stayed healthy", n)
	}
	now, err := c.Leader(5 * time.Second)
	if err != nil || now != leader {
		t.Errorf("leader is node %d (%v), was node %d", now+1, err, leader+1)
	}
}
