package compattests

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

// TestCompatReconfig runs the reconfig scenarios against a 3-node ZooKeeper
// ensemble with reconfigEnabled=true and the suite's super digest (the
// oracle) and a 3-node zkbridge cluster with reconfig enabled. A reconfig
// changes a cluster for good (and a wrong one can break it), so each
// scenario has clusters of its own (Settings.Dedicated), and the other runs
// skip them (their servers do not have reconfig enabled).
//
// ZKBRIDGE_COMPAT_ORACLE_ONLY=1 runs the ZooKeeper half alone: each
// scenario's transcript is logged and must pass its Check.
func TestCompatReconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3-node ZooKeeper ensembles and 3-node zkbridge clusters")
	}
	oracleOnly := os.Getenv("ZKBRIDGE_COMPAT_ORACLE_ONLY") != ""
	for _, sc := range Scenarios() {
		if sc.Needs&NeedReconfig == 0 {
			continue
		}
		t.Run(sc.ID(), func(t *testing.T) {
			zk := startReconfigTarget(t, "zookeeper")
			if oracleOnly {
				out := runOn(sc, zk, zk.Settings.Super, zk.Settings.Reaper, false)
				for _, f := range out.failed {
					t.Error(f)
				}
				t.Logf("ZooKeeper:\n%s", strings.Join(out.lines, "\n"))
				if err := sc.Check(out.lines); err != nil {
					t.Errorf("ZooKeeper's transcript fails the check: %v", err)
				}
				return
			}
			zb := startReconfigTarget(t, "zkbridge")
			judge(t, sc, CompareOne(sc, zk, zb, Mode{}), zk.Name, zb.Name)
		})
	}
}

// startReconfigTarget starts a 3-node ZooKeeper ensemble or zkbridge
// cluster with reconfig enabled, stopped when the test ends, and returns
// its client addresses followers first (see LeaderLast), with wakers.
func startReconfigTarget(t *testing.T, kind string) *Target {
	t.Helper()
	var addrs []string
	if kind == "zookeeper" {
		ens, err := StartZooKeeperEnsemble(3, "ZK_RECONFIG_ENABLED=true")
		if err != nil {
			t.Fatalf("start ZooKeeper ensemble (run scripts/install-zookeeper.sh): %v", err)
		}
		t.Cleanup(ens.Stop)
		addrs = ens.Addrs
	} else {
		zb, err := StartZkbridgeCluster(t.TempDir(), 3, func(c *server.Config) { c.ReconfigEnabled = true })
		if err != nil {
			t.Fatalf("start zkbridge cluster: %v", err)
		}
		t.Cleanup(zb.Stop)
		addrs = zb.Addrs
	}
	ordered, err := LeaderLast(addrs, 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	t.Cleanup(stopWakers(t, ordered))
	target := suiteTarget(kind, ordered...)
	target.Settings.Reconfig = true
	target.Settings.Dedicated = true
	return target
}
