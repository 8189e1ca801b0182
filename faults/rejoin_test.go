package faults

import (
	"os"
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
// on the rejoin. Some runs still dropped messages after the resume (802 in
// one make test run of 4): the leader sent the follower, busy catching up,
// more than its receive queue holds, which peernet's flow control now
// bounds. Like the restart test below it depends on the host, so it runs
// in the long run (make chaos, FAULTS_DURATION).
func TestResumedFollowerDoesNotDisruptTheLeader(t *testing.T) {
	if os.Getenv("FAULTS_DURATION") == "" {
		t.Skip("multi-process and host-sensitive: part of the long run (FAULTS_DURATION)")
	}
	if testing.Short() {
		t.Skip("multi-process fault test")
	}
	bin, err := Binary()
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
	if t.Failed() {
		t.Logf("timeline:\n%s", c.Timeline(timelineEvents...))
	}
}

// A follower killed under write load and restarted 3 s later lacks
// thousands of entries. The leader read them from its Raft log on its step
// worker, once per saved record, and again after every heartbeat response
// until the follower caught up: its step worker stalled for seconds and the
// restarted node (which heard no leader for up to 1.5 s, the transport's
// circuit breaker) voted the other follower in (issue 34, defect 2). Now
// recent entries come from memory (node's entry cache) and a restarted
// peer is redialed within 100 ms (peernet), so the leader stays.
//
// Whether an election follows also depends on the host (before the fix it
// failed about one run in two), so this runs in the long run (make chaos,
// FAULTS_DURATION); the deterministic regression tests are peernet's
// TestPeerDownIsRedialedNotFailed and node's TestEntryCacheFollowsTheLog.
func TestRestartedFollowerDoesNotDisruptTheLeader(t *testing.T) {
	if testing.Short() || os.Getenv("FAULTS_DURATION") == "" {
		t.Skip("multi-process and host-sensitive: part of the long run (FAULTS_DURATION)")
	}
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	// The server's default election timeout: the defect showed there.
	c, err := StartZkbridge(bin, t.TempDir(), 3, 0)
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
	setup, err := dialClient(100, c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range Workloads() {
		if err := w.Setup(setup.conn); err != nil {
			t.Fatal(err)
		}
		if err := runClients(w, c.Addrs(), 10*k, 3, &h, stop, &wg); err != nil {
			t.Fatal(err)
		}
	}
	setup.close()
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second)
	follower := (leader + 1) % 3
	if err := c.Kill(follower); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	restarted := time.Now()
	if err := c.Restart(follower); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	if n := c.Elections(); n > 0 {
		if at, ok := c.HostStall(); ok {
			// Every node stopped at once: the machine, not the rejoin.
			t.Skipf("every node stalled at %s (a loaded host); this run cannot judge the rejoin", at)
		}
		t.Errorf("%d leader changes after a follower restarted, although the leader stayed healthy", n)
	}
	if gap := h.WriteGap(restarted, time.Now()); gap > time.Second {
		t.Errorf("writes stalled %v after the follower restarted", gap)
	}
	if t.Failed() {
		t.Logf("timeline:\n%s", c.Timeline(timelineEvents...))
	}
}

// timelineEvents are the log lines a failing rejoin test shows.
var timelineEvents = []string{"raft leader elected", "became", "LocalTick", "zkbridge listening", "did not run", "lost quorum", "cast"}
