package compattests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// The tenant benchmarks (make tenants-bench, not make test): memory per
// idle tenant and start-up time with many tenants, aggregate writes of 1,
// 2, 4 and 8 tenants with their leaders spread vs one tenant and vs a
// 3-node ZooKeeper, and a noisy neighbour's effect on another tenant's
// p99. Figures are logged (go test -v); docs/tenants.md keeps them with
// the machine's load.

func tenantBench(t *testing.T) {
	if os.Getenv("ZKBRIDGE_TENANT_BENCH") == "" {
		t.Skip("a benchmark: make tenants-bench (ZKBRIDGE_TENANT_BENCH=1)")
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return string(b[:len(b)-1])
}

// waitTenants waits until node i lists want tenants, all hosted with a
// leader, and returns how long it took.
func (c *ProcCluster) waitTenants(t *testing.T, i, want int, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		rows, err := c.tenants(i)
		ready := 0
		for _, r := range rows {
			if r.Hosted && r.Leader != 0 {
				ready++
			}
		}
		if err == nil && ready == want {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("node %d: %d of %d tenants serving after %v (%v)", i+1, ready, want, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTenantScaleBench(t *testing.T) {
	tenantBench(t)
	n := 100
	if v, err := strconv.Atoi(os.Getenv("ZKBRIDGE_TENANTS")); err == nil && v > 0 {
		n = v
	}
	c := StartProcCluster(t, 3, ClusterOptions{DistinctHosts: true})
	time.Sleep(5 * time.Second)
	rss := func() []int {
		out := make([]int, len(c.Nodes))
		for i, nd := range c.Nodes {
			out[i] = procRSSKiB(t, nd.cmd.Process.Pid)
		}
		return out
	}
	before := rss()
	created := time.Now()
	for i := 0; i < n; i++ {
		// No port: an idle tenant (its door listens on an ephemeral port).
		// An outcome unknown on this loaded machine is asked again; "exists"
		// then means the first attempt went through.
		name := fmt.Sprintf("t%03d", i)
		for attempt := 1; ; attempt++ {
			err := c.AdminPost(i%3, "/tenants/create", url.Values{"name": {name}})
			if err == nil || strings.Contains(err.Error(), "exists") {
				break
			}
			if attempt == 5 {
				t.Fatal(err)
			}
			t.Logf("create %s: %v; again", name, err)
		}
	}
	for i := range c.Nodes {
		c.waitTenants(t, i, n, 10*time.Minute)
	}
	t.Logf("%d tenants created and served on 3 nodes in %v (load %s)", n, time.Since(created).Round(time.Millisecond), loadAvg())
	time.Sleep(10 * time.Second) // idle
	after := rss()
	for i := range c.Nodes {
		t.Logf("node %d: RSS %d MiB with the default tenant only, %d MiB with %d idle tenants: %.2f MiB per tenant (load %s)",
			i+1, before[i]/1024, after[i]/1024, n, float64(after[i]-before[i])/1024/float64(n), loadAvg())
	}
	// Start-up: every node killed and started again; until all serve all.
	for i := range c.Nodes {
		c.Kill(i)
	}
	start := time.Now()
	for i := range c.Nodes {
		c.Start(i)
	}
	for i := range c.Nodes {
		c.waitTenants(t, i, n, 3*time.Minute)
	}
	t.Logf("restart of 3 nodes with %d tenants: every tenant served on every node %v after the start (load %s)",
		n, time.Since(start).Round(time.Millisecond), loadAvg())
	restarted := rss()
	for i := range c.Nodes {
		t.Logf("node %d after the restart: RSS %d MiB", i+1, restarted[i]/1024)
	}
}

// writeLoad runs writers setting one znode each through conns for d and
// returns the writes done. The window starts once every writer has its
// session and znode, so many writers' set-up does not eat into it.
func writeLoad(t *testing.T, addrs []string, writers int, d time.Duration) int64 {
	t.Helper()
	var done atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	var end time.Time
	for w := 0; w < writers; w++ {
		zc, _, err := gozk.Connect([]string{addrs[w%len(addrs)]}, 10*time.Second, gozk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer zc.Close()
		path := fmt.Sprintf("/bench-%d", w)
		if _, err := zc.Create(path, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && err != gozk.ErrNodeExists {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, 64)
			<-start
			for time.Now().Before(end) {
				if _, err := zc.Set(path, data, -1); err == nil {
					done.Add(1)
				}
			}
		}()
	}
	end = time.Now().Add(d)
	close(start)
	wg.Wait()
	return done.Load()
}

// TestTenantWriteBench: aggregate writes of 1, 2, 4 and 8 tenants (leaders
// spread over 3 nodes) vs the default tenant alone and vs a 3-node
// ZooKeeper, like for like: every row keeps the same number of requests
// outstanding in all (ZKBRIDGE_TENANT_WRITERS, a comma list of totals,
// default 64 and 256: one synchronous writer per connection, the writers
// of a row split evenly over its tenants, ZooKeeper given the same total),
// so no row wins by having more requests in flight, and each system is
// also seen at a load that saturates it. Every row reports the servers'
// CPU per write (all node processes, user+system) and the client's, so a
// result bound by the 2 shared cores can be told from one bound by the
// disk.
func TestTenantWriteBench(t *testing.T) {
	tenantBench(t)
	totals := []int{64, 256}
	if v := os.Getenv("ZKBRIDGE_TENANT_WRITERS"); v != "" {
		totals = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 8 {
				t.Fatalf("ZKBRIDGE_TENANT_WRITERS=%q: give totals of at least 8 writers, e.g. 64,256", v)
			}
			totals = append(totals, n)
		}
	}
	dur := 10 * time.Second
	c := StartProcCluster(t, 3, ClusterOptions{DistinctHosts: true})
	names := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"}
	ports, err := freePorts(len(names))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if err := c.AdminPost(0, "/tenants/create", url.Values{"name": {name}, "port": {strconv.Itoa(ports[i])}}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitTenants(t, 0, len(names), 2*time.Minute)
	time.Sleep(5 * time.Second) // leaders spread
	rows, _ := c.tenants(0)
	leaders := map[uint64]int{}
	for _, r := range rows {
		leaders[r.Leader]++
	}
	t.Logf("tenant leaders per node: %v (writers connect to every node in turn, as a client list of all nodes does)", leaders)
	addrsOf := func(name string) []string {
		var out []string
		for _, nd := range c.Nodes {
			host, _, _ := net.SplitHostPort(nd.Client)
			out = append(out, net.JoinHostPort(host, strconv.Itoa(ports[slices.Index(names, name)])))
		}
		return out
	}
	var nodePIDs []int
	for _, nd := range c.Nodes {
		nodePIDs = append(nodePIDs, nd.cmd.Process.Pid)
	}
	type row struct {
		perSec           float64
		serverUs, client float64 // CPU µs per write: the servers', this client's
	}
	// measure runs load and reports its writes/s and CPU per write.
	measure := func(pids []int, load func() int64) row {
		before, clientBefore := cpuOf(pids), clientCPU()
		n := load()
		server, client := cpuOf(pids)-before, clientCPU()-clientBefore
		r := row{perSec: float64(n) / dur.Seconds()}
		if n > 0 {
			r.serverUs, r.client = server.Seconds()*1e6/float64(n), client.Seconds()*1e6/float64(n)
		}
		return r
	}
	results := map[[2]int]row{} // {total writers, tenants}
	for _, total := range totals {
		for _, k := range []int{1, 2, 4, 8} {
			each := max(1, total/k)
			profiled := c.profileRow(t, fmt.Sprintf("%dw-%dt", total, k), dur)
			r := measure(nodePIDs, func() int64 {
				var sum atomic.Int64
				var wg sync.WaitGroup
				for _, name := range names[:k] {
					wg.Add(1)
					go func() { defer wg.Done(); sum.Add(writeLoad(t, addrsOf(name), each, dur)) }()
				}
				wg.Wait()
				return sum.Load()
			})
			profiled()
			results[[2]int{total, k}] = r
			t.Logf("%d writers: %d tenants × %d: %.0f writes/s in all; CPU per write: servers %.0f µs, client %.0f µs (load %s)",
				total, k, each, r.perSec, r.serverUs, r.client, loadAvg())
		}
		r := measure(nodePIDs, func() int64 { return writeLoad(t, c.Addrs(), total, dur) })
		t.Logf("%d writers: the default tenant (one shard): %.0f writes/s; CPU per write: servers %.0f µs, client %.0f µs",
			total, r.perSec, r.serverUs, r.client)
	}
	c.stop()
	// ZooKeeper's default of 60 connections per client IP would refuse
	// the larger totals (every writer connects from 127.0.0.1); zkbridge's
	// nodes here have no such limit either.
	ens, err := StartZooKeeperEnsemble(3, "ZK_EXTRA_CFG=maxClientCnxns=0")
	if err != nil {
		t.Logf("no ZooKeeper ensemble to compare with: %v", err)
		return
	}
	defer ens.Stop()
	var zkPIDs []int
	for _, p := range strings.Split(ens.pids, ",") {
		if pid, err := strconv.Atoi(p); err == nil {
			zkPIDs = append(zkPIDs, pid)
		}
	}
	zk := map[int]row{}
	for _, total := range totals {
		r := measure(zkPIDs, func() int64 { return writeLoad(t, ens.Addrs, total, dur) })
		zk[total] = r
		t.Logf("%d writers: 3-node ZooKeeper: %.0f writes/s; CPU per write: servers %.0f µs, client %.0f µs (load %s)",
			total, r.perSec, r.serverUs, r.client, loadAvg())
	}
	best := func(f func(total int) float64) (float64, int) {
		var top float64
		var at int
		for _, total := range totals {
			if v := f(total); v > top {
				top, at = v, total
			}
		}
		return top, at
	}
	for _, total := range totals {
		four, one := results[[2]int{total, 4}], results[[2]int{total, 1}]
		t.Logf("%d writers: 4 tenants vs one tenant %.2f× (goal 2×); vs 3-node ZooKeeper %.2f× (goal 4×)",
			total, four.perSec/one.perSec, four.perSec/zk[total].perSec)
	}
	four, fourAt := best(func(total int) float64 { return results[[2]int{total, 4}].perSec })
	one, oneAt := best(func(total int) float64 { return results[[2]int{total, 1}].perSec })
	zkBest, zkAt := best(func(total int) float64 { return zk[total].perSec })
	t.Logf("each at its best: 4 tenants %.0f/s (%d writers), one tenant %.0f/s (%d), ZooKeeper %.0f/s (%d): 4 tenants %.2f× one tenant, %.2f× ZooKeeper",
		four, fourAt, one, oneAt, zkBest, zkAt, four/one, four/zkBest)
}

// profileRow, with ZKBRIDGE_TENANT_PROFILE=DIR, records a CPU profile of
// every node over the middle of a row (DIR/cpu-NAME-nodeI.pb.gz; go tool
// pprof sums them when given all three) and every node's write stages and log saves (DIR/stages-NAME-nodeI.json, when the
// nodes run with ZKBRIDGE_WRITE_STAGES=1), to see where a row's CPU goes.
// The returned func waits for the profile and saves the stages.
func (c *ProcCluster) profileRow(t *testing.T, name string, d time.Duration) func() {
	dir := os.Getenv("ZKBRIDGE_TENANT_PROFILE")
	if dir == "" {
		return func() {}
	}
	get := func(i int, path, file string, timeout time.Duration) {
		resp, err := (&http.Client{Timeout: timeout}).Get("http://" + c.Nodes[i].Admin + path)
		if err != nil {
			t.Logf("profile %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && file != "" {
			err = os.WriteFile(filepath.Join(dir, file), b, 0o644)
		}
		if err != nil {
			t.Logf("profile %s: %v", path, err)
		}
	}
	for i := range c.Nodes {
		get(i, "/debug/stages?reset=1", "", 5*time.Second)
	}
	secs := max(1, int(d.Seconds())-4)
	var profiles sync.WaitGroup
	for i := range c.Nodes {
		profiles.Go(func() {
			time.Sleep(2 * time.Second) // past the writers' connecting
			get(i, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), fmt.Sprintf("cpu-%s-node%d.pb.gz", name, i+1), d+10*time.Second)
		})
	}
	return func() {
		profiles.Wait()
		for i := range c.Nodes {
			get(i, "/debug/stages", fmt.Sprintf("stages-%s-node%d.json", name, i+1), 30*time.Second)
		}
	}
}

// cpuOf is the CPU time (user+system) the processes have used.
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		ticks += cpuTicks(pid)
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// clientCPU is the CPU time this test process (the load generator) has used.
func clientCPU() time.Duration { return cpuOf([]int{os.Getpid()}) }

func TestTenantNoisyNeighbourBench(t *testing.T) {
	tenantBench(t)
	c := StartProcCluster(t, 3, ClusterOptions{DistinctHosts: true})
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"noisy", "quiet"} {
		if err := c.AdminPost(0, "/tenants/create", url.Values{"name": {name}, "port": {strconv.Itoa(ports[i])}}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitTenants(t, 0, 2, 2*time.Minute)
	time.Sleep(5 * time.Second)
	addr := func(node, i int) string {
		host, _, _ := net.SplitHostPort(c.Nodes[node].Client)
		return net.JoinHostPort(host, strconv.Itoa(ports[i]))
	}
	// The quiet tenant writes 50 times a second and records each latency.
	quietP99 := func(d time.Duration) (time.Duration, int) {
		zc, _, err := gozk.Connect([]string{addr(0, 1)}, 10*time.Second, gozk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer zc.Close()
		_, _ = zc.Create("/q", nil, 0, gozk.WorldACL(gozk.PermAll))
		var lat []time.Duration
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			start := time.Now()
			if _, err := zc.Set("/q", []byte("x"), -1); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat[len(lat)*99/100], len(lat)
	}
	idle, n := quietP99(15 * time.Second)
	t.Logf("quiet tenant alone: p99 %v over %d writes (load %s)", idle, n, loadAvg())
	var loaded time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ops := writeLoad(t, []string{addr(0, 0), addr(1, 0), addr(2, 0)}, 32, 17*time.Second)
		t.Logf("noisy tenant: %.0f writes/s", float64(ops)/17)
	}()
	time.Sleep(time.Second)
	loaded, n = quietP99(15 * time.Second)
	wg.Wait()
	t.Logf("quiet tenant beside a noisy one at full load: p99 %v over %d writes (%.2f× alone; load %s)",
		loaded, n, float64(loaded)/float64(idle), loadAvg())
}
