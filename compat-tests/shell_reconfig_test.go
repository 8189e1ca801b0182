package compattests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/shell/zkclient"
)

// configVersion matches the config version zkCli prints ("version=1000000a2",
// and "1000000a2 127.0.0.1:…" of config -c): a zxid, different on every run.
var configVersion = regexp.MustCompile(`(version=|^  )[0-9a-f]{9,}\b`)

// TestShellZkCliReconfig runs every form of reconfig (-add, -remove,
// -members, -file, -v, -s, refused without auth) through zkCli.sh and
// through zkbridge shell against one 3-node ZooKeeper ensemble with
// reconfig enabled, and compares the outputs.
func TestShellZkCliReconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node ZooKeeper ensemble")
	}
	requireTool(t, zkCliPath)
	ens, err := StartZooKeeperEnsemble(3, "ZK_RECONFIG_ENABLED=true")
	if err != nil {
		t.Fatalf("start ZooKeeper ensemble (run scripts/install-zookeeper.sh): %v", err)
	}
	defer ens.Stop()
	// The client talks to the leader and the reconfigs move a follower:
	// removing the leader would end every connection with an election.
	ordered, err := LeaderLast(ens.Addrs, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	addr, follower := ordered[len(ordered)-1], ordered[0]
	zk, err := zkclient.New(zkclient.Options{Servers: []string{addr}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := zk.Config(false)
	zk.Close()
	if err != nil {
		t.Fatal(err)
	}
	var members, others []string
	moved, movedID := "", ""
	for _, l := range strings.Split(string(cfg), "\n") {
		if !strings.HasPrefix(l, "server.") {
			continue
		}
		members = append(members, l)
		if strings.HasSuffix(l, ";"+follower) {
			moved = strings.TrimPrefix(l, "server.")
			movedID, _, _ = strings.Cut(moved, "=")
		} else {
			others = append(others, l)
		}
	}
	if len(members) != 3 || moved == "" {
		t.Fatalf("config of the ensemble (follower %s): %q", follower, cfg)
	}
	file := filepath.Join(t.TempDir(), "dynamic.cfg")
	if err := os.WriteFile(file, []byte(strings.Join(members, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := []string{
		"reconfig -remove " + movedID,
		"addauth digest " + SuperCredentials,
		"reconfig -remove " + movedID,
		"config",
		"reconfig -s -add " + moved,
		"config -c",
		"reconfig -v 1 -remove " + movedID,
		"reconfig -members " + strings.Join(others, ","),
		"reconfig -file " + file,
		"config -s",
	}
	normalise := func(out string, start time.Time) []string {
		var lines []string
		for _, l := range shellNormalise(out, addr, cmds, start) {
			lines = append(lines, configVersion.ReplaceAllString(l, "${1}VERSION"))
		}
		return lines
	}
	start := time.Now()
	raw, err := zkCliRun(addr, cmds)
	if err != nil {
		t.Fatalf("zkCli.sh: %v\n%s", err, raw)
	}
	want := normalise(raw, start)
	start = time.Now()
	out, _ := shellRun(addr, cmds)
	got := normalise(out, start)
	if testing.Verbose() {
		t.Logf("normalised zkCli.sh output:\n%s", strings.Join(want, "\n"))
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("zkbridge shell differs from zkCli.sh:\n%s", d)
	}
}
