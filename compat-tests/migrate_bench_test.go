package compattests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/migrate"
)

// TestMigrateImportBench measures `zkbridge migrate import` of a
// ZKBRIDGE_MIGRATE_BENCH-znode export (e.g. 1000000) into a 3-node
// cluster of separate processes: znodes/s, and the peak RSS of the tool
// and of each node. `make migrate-bench` runs it; skipped otherwise.
func TestMigrateImportBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZKBRIDGE_MIGRATE_BENCH"))
	if n <= 0 {
		t.Skip("set ZKBRIDGE_MIGRATE_BENCH=<znodes> (make migrate-bench)")
	}
	file := filepath.Join(t.TempDir(), "bench.jsonl")
	start := time.Now()
	if err := writeSyntheticExport(file, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote a %d-znode export in %s", n, time.Since(start))
	c := StartProcCluster(t, 3, ClusterOptions{})
	cpuBefore := int64(0)
	for _, nd := range c.Nodes {
		cpuBefore += cpuTicks(nd.cmd.Process.Pid)
	}
	// Profiles (when asked for) cover an import at 30,000 znodes/s or
	// more; the test waits for them to end.
	waitProfiles := profileNodes(t, c, n/30000+2)
	cmd := exec.Command(zkbridgeBinary(t), "migrate", "import", "--native", c.Nodes[0].Native, "--json", file)
	out, err := cmd.Output()
	cpuNodes := -cpuBefore
	for _, nd := range c.Nodes {
		cpuNodes += cpuTicks(nd.cmd.Process.Pid)
	}
	waitProfiles()
	if err != nil {
		t.Fatalf("migrate import: %v\n%s", err, out)
	}
	var sum struct {
		Nodes   int64   `json:"nodes"`
		Seconds float64 `json:"seconds"`
		Rate    float64 `json:"znodes_per_second"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	toolRSS := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	var nodes []string
	for _, nd := range c.Nodes {
		nodes = append(nodes, fmt.Sprintf("node%d %d MiB", nd.ID, peakRSS(nd.cmd.Process.Pid)>>10))
	}
	// CPU seconds spent by the tool and the three nodes: on a shared,
	// loaded machine the wall clock says more about the neighbours.
	toolCPU := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	nodeCPU := float64(cpuNodes) / 100 // clock ticks (USER_HZ)
	t.Logf("import: %d znodes in %.2fs = %.0f znodes/s; CPU: tool %.2fs, nodes %.2fs (%.0f znodes per CPU-second); peak RSS: tool %d MiB, %s",
		sum.Nodes, sum.Seconds, sum.Rate, toolCPU, nodeCPU, float64(sum.Nodes)/(toolCPU+nodeCPU), toolRSS>>10, strings.Join(nodes, ", "))
}

// profileNodes, with ZKBRIDGE_MIGRATE_PROFILE=DIR, records a CPU profile
// of every node (its admin port's /debug/pprof/profile) for the next
// seconds, into DIR/nodeN.pprof; the returned function waits for them.
// Without it, it does nothing.
func profileNodes(t *testing.T, c *ProcCluster, seconds int) (wait func()) {
	dir := os.Getenv("ZKBRIDGE_MIGRATE_PROFILE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, nd := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", nd.Admin, seconds))
			if err != nil {
				t.Logf("profile of node%d: %v", nd.ID, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Logf("profile of node%d: %s %v", nd.ID, resp.Status, err)
				return
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.pprof", nd.ID)), b, 0o640); err != nil {
				t.Log(err)
			}
		}()
	}
	return wg.Wait
}

// writeSyntheticExport writes an export of n znodes: /bench/gNNNN groups of
// 1000 children with 32-byte values and ZooKeeper-like stats.
func writeSyntheticExport(file string, n int) error {
	w, err := migrate.Create(file, migrate.Header{Source: "synthetic", Path: "/", LastZxid: 1<<32 + int64(n) + 10})
	if err != nil {
		return err
	}
	zxid := int64(1 << 32)
	node := func(p string, kids int32) error {
		zxid++
		return w.Node(&migrate.Node{Path: p, Data: []byte("0123456789abcdef0123456789abcdef"), Czxid: zxid, Mzxid: zxid, Pzxid: zxid,
			Ctime: 1700000000000, Mtime: 1700000000000, Cversion: kids, NumChildren: kids, Creates: kids,
			ACL: []migrate.ACL{{Perms: 31, Scheme: "world", ID: "anyone"}}})
	}
	groups := (n + 999) / 1000
	if err := node("/bench", int32(groups)); err != nil {
		return err
	}
	for g := 0; g < groups; g++ {
		gp := fmt.Sprintf("/bench/g%04d", g)
		kids := min(1000, n-g*1000)
		if err := node(gp, int32(kids)); err != nil {
			return err
		}
		for i := 0; i < kids; i++ {
			if err := node(fmt.Sprintf("%s/n%04d", gp, i), 0); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// peakRSS is a process's VmHWM in KiB (0 if unknown).
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// cpuTicks is a process's user+system CPU time in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

// TestMigrateConvertBench loads ZKBRIDGE_MIGRATE_CONVERT_BENCH znodes (e.g.
// 1000000) into a standalone ZooKeeper 3.8, stops it, measures how long
// ZooKeeper takes to load its own data directory again, then `zkbridge migrate
// convert` of that directory into a 3-process cluster. `make
// migrate-bench` runs it; skipped otherwise.
func TestMigrateConvertBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZKBRIDGE_MIGRATE_CONVERT_BENCH"))
	if n <= 0 {
		t.Skip("set ZKBRIDGE_MIGRATE_CONVERT_BENCH=<znodes> (make migrate-bench)")
	}
	scripts := filepath.Join(RepoRoot(), "scripts")
	start := exec.Command("bash", filepath.Join(scripts, "start-zookeeper.sh"))
	start.Env = append(os.Environ(), "ZK_HEAP=2g")
	t0 := time.Now()
	out, err := start.Output()
	empty := time.Since(t0) // an empty ZooKeeper's start: the JVM's share
	if err != nil {
		t.Fatalf("start-zookeeper.sh: %v", err)
	}
	f := strings.Fields(string(out))
	port, pid, dir := f[0], f[1], f[2]
	defer func() { _ = exec.Command("bash", filepath.Join(scripts, "stop-zookeeper.sh"), pid, dir).Run() }()
	addr := "127.0.0.1:" + port
	c, err := migrate.Dial([]string{addr}, nil, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := loadBulk(c, n); err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Logf("loaded %d znodes into ZooKeeper in %s", n, time.Since(t0))
	_ = exec.Command("kill", "-9", pid).Run()
	// ZooKeeper loads its own data directory again.
	log := filepath.Join(dir, "reload.log")
	relaunch := exec.Command("bash", "-c", `source "$1/zookeeper-lib.sh"; zk_require; zk_launch org.apache.zookeeper.server.ZooKeeperServerMain "$2/zoo.cfg" "$3" 2g; echo $!`, "-", scripts, dir, log)
	t0 = time.Now()
	out, err = relaunch.Output()
	if err != nil {
		t.Fatalf("relaunch ZooKeeper: %v", err)
	}
	pid = strings.TrimSpace(string(out))
	for nodeMode(addr) == "" {
		if time.Since(t0) > 10*time.Minute {
			t.Fatal("ZooKeeper did not serve again within 10 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	serving := time.Since(t0)
	t.Logf("ZooKeeper reloaded its data directory: serving after %s (an empty one serves after %s)", serving, empty)
	_ = exec.Command("kill", "-9", pid).Run()
	time.Sleep(time.Second)

	cl := StartProcCluster(t, 3, ClusterOptions{})
	var cpuBefore int64
	for _, nd := range cl.Nodes {
		cpuBefore += cpuTicks(nd.cmd.Process.Pid)
	}
	vdir := filepath.Join(dir, "data", "version-2")
	cmd := exec.Command(zkbridgeBinary(t), "migrate", "convert", "--snap-dir", vdir, "--native", cl.Nodes[0].Native, "--json")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("migrate convert: %v\n%s", err, out)
	}
	var cpuNodes int64 = -cpuBefore
	var nodes []string
	for _, nd := range cl.Nodes {
		cpuNodes += cpuTicks(nd.cmd.Process.Pid)
		nodes = append(nodes, fmt.Sprintf("node%d %d MiB", nd.ID, peakRSS(nd.cmd.Process.Pid)>>10))
	}
	var sum struct {
		Convert migrate.ConvertResult `json:"convert"`
		Seconds float64               `json:"seconds"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	toolCPU := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	t.Logf("convert: %d znodes from %s in %.2fs = %.0f znodes/s; CPU: tool %.2fs, nodes %.2fs; peak RSS: tool %d MiB, %s",
		sum.Convert.Nodes, filepath.Base(sum.Convert.Snapshot), sum.Seconds, float64(sum.Convert.Nodes)/sum.Seconds, toolCPU, float64(cpuNodes)/100,
		cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss>>10, strings.Join(nodes, ", "))
}

// loadBulk creates n znodes in groups of 1000 (/bulk/gNNNN/nNNNN, 32-byte
// values), four multis in flight.
func loadBulk(c *zk.Conn, n int) error {
	open := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/bulk", nil, 0, open); err != nil {
		return err
	}
	groups := (n + 999) / 1000
	errs := make(chan error, groups)
	sem := make(chan struct{}, 4)
	for g := 0; g < groups; g++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			gp := fmt.Sprintf("/bulk/g%04d", g)
			if _, err := c.Create(gp, nil, 0, open); err != nil {
				errs <- err
				return
			}
			for i := 0; i < 1000 && g*1000+i < n; i += 250 {
				var ops []any
				for j := i; j < i+250 && j < 1000 && g*1000+j < n; j++ {
					ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%04d", gp, j), Data: []byte("0123456789abcdef0123456789abcdef"), Acl: open})
				}
				if _, err := c.Multi(ops...); err != nil {
					errs <- fmt.Errorf("multi under %s: %w", gp, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < groups; g++ {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}
