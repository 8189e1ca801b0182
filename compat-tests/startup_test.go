package compattests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultClusterStartsOneNodeAtATime stops a whole 3-node cluster and
// starts its nodes one after another, the first a minute before the
// others (a power-cycled rack, a StatefulSet with ordered start). A
// ZooKeeper server keeps looking for its quorum for as long as it runs; so
// must a zkbridge node: it stays up, answers ruok and says it is not
// serving, logs at a sane rate, and joins as soon as a quorum exists, with
// nothing lost.
func TestFaultClusterStartsOneNodeAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a minute with one node of three")
	}
	c := StartProcCluster(t, 3, ClusterOptions{})
	conn := gzConnect(t, c.Addrs(), 10*time.Second, nil)
	writeMany(t, conn, "/staged", 300)
	conn.Close()
	before := compareDumps(t, c, "/staged")
	for i := range c.Nodes {
		c.Kill(i)
	}

	logged := c.LogLines(0)
	c.Start(0)
	alone := time.Now()
	const wait = 60 * time.Second
	for time.Since(alone) < wait {
		time.Sleep(5 * time.Second)
		if !c.Alive(0) {
			t.Fatalf("node 1 exited %v after it started without a quorum", time.Since(alone).Round(time.Second))
		}
		if out, _, err := fourLetter(c.Nodes[0].Client, []byte("ruok")); err != nil || out != "imok" {
			t.Fatalf("ruok on a node waiting for its quorum: %q %v", out, err)
		}
		if out, _, err := fourLetter(c.Nodes[0].Client, []byte("srvr")); err != nil || out != "This ZooKeeper instance is not currently serving requests\n" {
			t.Fatalf("srvr on a node waiting for its quorum: %q %v", out, err)
		}
	}
	waits := c.LogEvents(0, "no Raft leader yet: waiting for a quorum of the peers to start (clients are refused until then)")
	if len(waits) == 0 || len(waits) > 6 {
		t.Errorf("node 1 logged %d waiting lines in %v; want a few (5 s, 10 s, 20 s, 40 s, …)", len(waits), wait)
	}
	lines := c.LogLines(0) - logged
	if lines > 400 {
		t.Errorf("node 1 logged %d lines while waiting %v for its quorum", lines, wait)
	}

	c.Start(1)
	c.WaitLeader(30 * time.Second)
	c.Start(2)
	for i := range c.Nodes {
		if !c.WaitReady(i, 60*time.Second) {
			t.Fatalf("node %d not ready within 60 s", i+1)
		}
	}
	c.WaitCaughtUp(60 * time.Second)
	if after := compareDumps(t, c, "/staged"); after != before {
		t.Fatalf("the tree has %d nodes after the staged start, %d before", after, before)
	}
	conn = gzConnect(t, c.Addrs(), 10*time.Second, nil)
	defer conn.Close()
	if _, err := conn.Create("/staged/after", nil, 0, openACL); err != nil {
		t.Fatalf("write after the staged start: %v", err)
	}
	t.Logf("%d znodes kept; node 1 waited %v alone and logged %d lines, %d of them about waiting", before, wait, lines, len(waits))
}

// LogLines is the number of lines node i has logged (its log file keeps
// every run's).
func (c *ProcCluster) LogLines(i int) int {
	nd := c.Nodes[i]
	b, err := os.ReadFile(filepath.Join(nd.dir, "..", fmt.Sprintf("node%d.log", nd.ID)))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
