package compattests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	cmd := exec.Command(zkbridgeBinary(t), "migrate", "import", "--native", c.Nodes[0].Native, "--json", file)
	out, err := cmd.Output()
	cpuNodes := -cpuBefore
	for _, nd := range c.Nodes {
		cpuNodes += cpuTicks(nd.cmd.Process.Pid)
	}
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
