package faults

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestFaultsShort is the suite's short run, part of `go test ./...`: one
// round of every nemesis against a fresh 3-node zkbridge cluster each,
// every workload checked. FAULTS_DURATION (e.g. 30m, `make chaos`) turns it
// into the long run: rounds repeat until the duration is spent;
// FAULTS_ZOOKEEPER=1 runs the same nemeses against a real ZooKeeper 3.8
// ensemble for comparison; FAULTS_ARTIFACTS keeps failing histories'
// visualisations (default: the test's temp dir, printed on failure).
func TestFaultsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault suite")
	}
	artifacts := os.Getenv("FAULTS_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(t.TempDir(), "histories")
	}
	bin, err := Binary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var deadline time.Time
	rounds := 1
	if d, err := time.ParseDuration(os.Getenv("FAULTS_DURATION")); err == nil && d > 0 {
		deadline = time.Now().Add(d)
		rounds = 3
	}
	if r, err := strconv.Atoi(os.Getenv("FAULTS_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	var election time.Duration
	if e, err := time.ParseDuration(os.Getenv("FAULTS_ELECTION_TIMEOUT")); err == nil {
		election = e
	}
	cfg := Config{Clients: 3, Warmup: 2 * time.Second, Cooldown: 3 * time.Second, Rounds: rounds, Artifacts: artifacts, Log: os.Stdout}
	nemeses := Nemeses(3 * time.Second)
	var rows []Row
	for pass := 0; ; pass++ {
		for _, n := range nemeses {
			c, err := StartZkbridge(bin, t.TempDir(), 3, election)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Run(c, n, cfg)
			c.Close()
			if err != nil {
				t.Fatalf("zkbridge %s: %v", n.Name, err)
			}
			elections, drops := c.Elections(), c.Drops()
			for i := range got {
				got[i].Elections, got[i].Drops = elections, drops
			}
			rows = append(rows, got...)
			t.Logf("zkbridge %s: %d leader changes, %d dropped incoming messages over the run", n.Name, elections, drops)
			if os.Getenv("FAULTS_ZOOKEEPER") == "1" && !n.NeedsIsolate && !n.NeedsDisk {
				zc, err := StartZooKeeper(3)
				if err != nil {
					t.Fatal(err)
				}
				zn := n
				if n.NeedsRestart {
					zn.Inject = killOnly(n.Inject)
				}
				zcfg := cfg
				zcfg.Rounds = 1 // a killed ZooKeeper node stays down
				got, err := Run(zc, zn, zcfg)
				if err != nil {
					t.Fatalf("zookeeper %s: %v", n.Name, err)
				}
				rows = append(rows, got...)
			}
		}
		if deadline.IsZero() || time.Now().After(deadline) {
			break
		}
	}
	PrintTable(os.Stdout, rows)
	PrintSummary(os.Stdout, Summarize(rows))
	for _, r := range rows {
		for _, v := range r.Violations {
			t.Errorf("%s %s under %s: %s", r.System, r.Workload, r.Nemesis, v)
		}
	}
}

// killOnly leaves a killed ZooKeeper node down: the ensemble's start
// script owns its command lines, so the suite cannot restart one.
func killOnly(inject func(Cluster) (func() error, error)) func(Cluster) (func() error, error) {
	return func(c Cluster) (func() error, error) {
		if _, err := inject(c); err != nil {
			return nil, err
		}
		return func() error { return nil }, nil
	}
}
