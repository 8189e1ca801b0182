package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	compattests "github.com/zkbridge/zkbridge/compat-tests"
	"github.com/zkbridge/zkbridge/internal/freeport"
	"github.com/zkbridge/zkbridge/server/node/logfs"
	"github.com/zkbridge/zkbridge/server/node/peernet"
	"github.com/zkbridge/zkbridge/wallclock"
)

// Cluster is a system under test: node i is 0-based.
type Cluster interface {
	Name() string
	Addrs() []string
	// Leader returns the index of the node that reports itself leader.
	Leader(d time.Duration) (int, error)
	Kill(i int) error
	// Restart starts a killed node again on its data.
	Restart(i int) error
	Pause(i int) error
	Resume(i int) error
	// Isolate cuts node i off from every other node until Heal.
	Isolate(i int) error
	Heal() error
	CanIsolate() bool
	// Down reports whether node i is known to be stopped (killed and not
	// restarted): the replica check skips it.
	Down(i int) bool
	Close()
}

// mode asks addr's srvr four-letter word for its Mode line.
func mode(addr string, d time.Duration) string {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return ""
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

func leaderOf(addrs []string, skip func(int) bool, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for {
		for i, a := range addrs {
			if skip != nil && skip(i) {
				continue
			}
			if mode(a, 300*time.Millisecond) == "leader" {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no node reports itself leader within %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary builds the zkbridge command once per process, into a directory of
// its own that RemoveBinary deletes.
func Binary() (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "zkbridge-faults-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "zkbridge")
		cmd := exec.Command("go", "build", "-o", built.path, ".")
		cmd.Dir = compattests.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return built.path, built.err
}

// RemoveBinary deletes what Binary built.
func RemoveBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// Zkbridge is a loopback cluster of zkbridge processes.
type Zkbridge struct {
	bin, dir string
	election time.Duration
	nodes    []*procNode
	tmpfs    []string // mounts to undo at Close
	extra    []string // more flags for every node
	// crashedOnFullDisk counts the times the disk-full node died, and
	// fullDiskExit is the last error it logged.
	crashedOnFullDisk int
	fullDiskExit      string
	// notes says what disk nemeses did and how the node took it.
	notes []string
}

type procNode struct {
	id                          int
	client, peer, admin, native string
	peers                       string
	faultFile                   string
	fsyncDelayFile              string
	clockFile                   string // wallclock's offset (SkewClock)
	cmd                         *exec.Cmd
	exited                      chan struct{}
	paused                      bool
}

// StartZkbridge starts n nodes in dir with the given election timeout (0:
// the server's default) and waits until every node follows one leader.
func StartZkbridge(bin, dir string, n int, election time.Duration) (*Zkbridge, error) {
	return startZkbridge(bin, dir, n, election, nil)
}

// startZkbridge is StartZkbridge with more flags for every node.
func startZkbridge(bin, dir string, n int, election time.Duration, extra []string) (*Zkbridge, error) {
	z := &Zkbridge{bin: bin, dir: dir, election: election, extra: extra}
	var ports []int
	for len(ports) < 4*n {
		p, err := compattests.FreePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	var peers []string
	for i := 0; i < n; i++ {
		nd := &procNode{id: i + 1,
			client:         fmt.Sprintf("127.0.0.1:%d", ports[4*i]),
			peer:           fmt.Sprintf("127.0.0.1:%d", ports[4*i+1]),
			admin:          fmt.Sprintf("127.0.0.1:%d", ports[4*i+2]),
			native:         fmt.Sprintf("127.0.0.1:%d", ports[4*i+3]),
			faultFile:      filepath.Join(dir, fmt.Sprintf("node%d.cut", i+1)),
			fsyncDelayFile: filepath.Join(dir, fmt.Sprintf("node%d.fsync-delay", i+1)),
			clockFile:      filepath.Join(dir, fmt.Sprintf("node%d.clock", i+1))}
		z.nodes = append(z.nodes, nd)
		peers = append(peers, fmt.Sprintf("%d=%s", nd.id, nd.peer))
	}
	for i, nd := range z.nodes {
		nd.peers = strings.Join(peers, ",")
		if err := z.start(i); err != nil {
			z.Close()
			return nil, err
		}
	}
	if err := z.waitServing(60 * time.Second); err != nil {
		z.Close()
		return nil, fmt.Errorf("%w; last log lines of the nodes not serving:\n%s", err, z.notServingLogs())
	}
	return z, nil
}

// notServingLogs returns the last lines of every node that does not serve.
func (z *Zkbridge) notServingLogs() string {
	var out []string
	for _, nd := range z.nodes {
		if m := mode(nd.client, 300*time.Millisecond); m == "leader" || m == "follower" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", nd.id)))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		out = append(out, fmt.Sprintf("node %d:\n%s", nd.id, strings.Join(lines[max(0, len(lines)-8):], "\n")))
	}
	return strings.Join(out, "\n")
}

func (z *Zkbridge) Name() string { return "zkbridge" }

func (z *Zkbridge) CanIsolate() bool { return true }

// NativeAddrs returns every node's native API address.
func (z *Zkbridge) NativeAddrs() []string {
	var out []string
	for _, nd := range z.nodes {
		out = append(out, nd.native)
	}
	return out
}

func (z *Zkbridge) Addrs() []string {
	var out []string
	for _, nd := range z.nodes {
		out = append(out, nd.client)
	}
	return out
}

func (z *Zkbridge) start(i int) error {
	nd := z.nodes[i]
	data := z.dataDir(i)
	if err := os.MkdirAll(data, 0o750); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", nd.id)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	args := []string{"server", "--data-dir", data, "--client-addr", nd.client, "--peer-addr", nd.peer,
		"--admin-addr", nd.admin, "--native-addr", nd.native, "--replica-id", fmt.Sprint(nd.id),
		"--peers", nd.peers, "--4lw", "*", "--log-format", "json",
		// TTL nodes are reaped every second, as in the compat suite, so the
		// ttl workload sees them go within seconds.
		"--reaper-interval", "1s"}
	if z.election > 0 {
		args = append(args, "--election-timeout", z.election.String())
	}
	args = append(args, z.extra...)
	cmd := exec.Command(z.bin, args...)
	cmd.Env = append(os.Environ(), peernet.FaultFileEnv+"="+nd.faultFile, logfs.SyncDelayFileEnv+"="+nd.fsyncDelayFile,
		wallclock.OffsetFileEnv+"="+nd.clockFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start node %d: %w", nd.id, err)
	}
	nd.cmd, nd.exited, nd.paused = cmd, make(chan struct{}), false
	go func(done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(nd.exited)
	if d := os.Getenv("FAULTS_GOROUTINES"); d != "" {
		go dumpGoroutines(filepath.Join(d, fmt.Sprintf("node%d", nd.id)), nd.admin, nd.exited)
	}
	return nil
}

// dumpGoroutines saves the node's goroutines (its admin port's pprof) into
// dir every 400 ms until it exits (FAULTS_GOROUTINES=DIR): what a node did
// while it stalled, found 17's evidence.
func dumpGoroutines(dir, admin string, done chan struct{}) {
	_ = os.MkdirAll(dir, 0o755)
	for {
		select {
		case <-done:
			return
		case <-time.After(400 * time.Millisecond):
		}
		resp, err := http.Get("http://" + admin + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = os.WriteFile(filepath.Join(dir, time.Now().UTC().Format("150405.000")+".txt"), b, 0o644)
	}
}

// waitServing waits until one node leads and every running node follows
// or leads.
func (z *Zkbridge) waitServing(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		leaders, serving := 0, 0
		for _, nd := range z.nodes {
			switch mode(nd.client, 300*time.Millisecond) {
			case "leader":
				leaders++
				serving++
			case "follower":
				serving++
			}
		}
		if leaders == 1 && serving == len(z.nodes) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zkbridge cluster not serving within %v (%d leaders, %d serving)", d, leaders, serving)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (z *Zkbridge) Leader(d time.Duration) (int, error) {
	return leaderOf(z.Addrs(), func(i int) bool { return z.nodes[i].paused || z.nodes[i].cmd == nil }, d)
}

func (z *Zkbridge) signal(i int, sig syscall.Signal) error {
	nd := z.nodes[i]
	if nd.cmd == nil {
		return fmt.Errorf("node %d is not running", nd.id)
	}
	return nd.cmd.Process.Signal(sig)
}

func (z *Zkbridge) Kill(i int) error {
	nd := z.nodes[i]
	if err := z.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	<-nd.exited
	nd.cmd = nil
	return nil
}

func (z *Zkbridge) Restart(i int) error { return z.start(i) }

func (z *Zkbridge) Down(i int) bool { return z.nodes[i].cmd == nil }

// WaitExit reports whether node i's process exits within d (it is then
// marked stopped).
func (z *Zkbridge) WaitExit(i int, d time.Duration) bool {
	nd := z.nodes[i]
	if nd.cmd == nil {
		return true
	}
	select {
	case <-nd.exited:
		nd.cmd = nil
		return true
	case <-time.After(d):
		return false
	}
}

func (z *Zkbridge) Pause(i int) error {
	z.nodes[i].paused = true
	return z.signal(i, syscall.SIGSTOP)
}

func (z *Zkbridge) Resume(i int) error {
	z.nodes[i].paused = false
	return z.signal(i, syscall.SIGCONT)
}

// SkewClock sets node i's wall clock d away from the host's (0: back in
// step): a jump of its clock, seen by its stamps within 20 ms.
func (z *Zkbridge) SkewClock(i int, d time.Duration) error {
	return os.WriteFile(z.nodes[i].clockFile, []byte(d.String()), 0o640)
}

// CutLinks cuts each given pair of nodes (0-based) both ways; the other
// links stay up (a bridge: two nodes that cannot talk, both talking to a
// third).
func (z *Zkbridge) CutLinks(pairs ...[2]int) error {
	cut := make([][]string, len(z.nodes))
	for _, p := range pairs {
		a, b := p[0], p[1]
		cut[a] = append(cut[a], fmt.Sprint(z.nodes[b].id))
		cut[b] = append(cut[b], fmt.Sprint(z.nodes[a].id))
	}
	for i, nd := range z.nodes {
		if err := os.WriteFile(nd.faultFile, []byte(strings.Join(cut[i], " ")), 0o640); err != nil {
			return err
		}
	}
	return nil
}

// Isolate writes the fault files: node i discards every peer's messages
// and every peer discards node i's.
func (z *Zkbridge) Isolate(i int) error {
	for j, nd := range z.nodes {
		var cut string
		if j == i {
			var ids []string
			for k, other := range z.nodes {
				if k != i {
					ids = append(ids, fmt.Sprint(other.id))
				}
			}
			cut = strings.Join(ids, " ")
		} else {
			cut = fmt.Sprint(z.nodes[i].id)
		}
		if err := os.WriteFile(nd.faultFile, []byte(cut), 0o640); err != nil {
			return err
		}
	}
	return nil
}

// SlowDisk makes every Raft log sync of node i wait d first (0: none).
func (z *Zkbridge) SlowDisk(i int, d time.Duration) error {
	return os.WriteFile(z.nodes[i].fsyncDelayFile, []byte(d.String()), 0o640)
}

func (z *Zkbridge) Heal() error {
	for _, nd := range z.nodes {
		if err := os.WriteFile(nd.faultFile, nil, 0o640); err != nil {
			return err
		}
	}
	return nil
}

// Output is everything node i wrote to its log and stderr.
func (z *Zkbridge) Output(i int) string {
	b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", z.nodes[i].id)))
	return string(b)
}

// LogCount counts the log lines of node i whose message contains msg.
func (z *Zkbridge) LogCount(i int, msg string) int {
	b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", z.nodes[i].id)))
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct {
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && strings.Contains(rec.Message, msg) {
			n++
		}
	}
	return n
}

// Elections counts the leader changes over the run: the distinct terms in
// which some node saw a new leader replace another ("raft leader elected"
// with a previous leader), so one election counts once however many nodes
// logged it.
func (z *Zkbridge) Elections() int {
	terms := map[uint64]bool{}
	for _, nd := range z.nodes {
		b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", nd.id)))
		for _, l := range strings.Split(string(b), "\n") {
			var rec struct {
				Message  string `json:"message"`
				Previous uint64 `json:"previous"`
				Term     uint64 `json:"term"`
			}
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Message == "raft leader elected" && rec.Previous != 0 {
				terms[rec.Term] = true
			}
		}
	}
	return len(terms)
}

// Drops counts dragonboat's "dropped an incoming message" over all nodes.
func (z *Zkbridge) Drops() int {
	n := 0
	for i := range z.nodes {
		n += z.LogCount(i, "dropped an incoming message")
	}
	return n
}

func (z *Zkbridge) Close() {
	defer func() {
		for _, m := range z.tmpfs {
			unmount(m)
		}
		z.tmpfs = nil
	}()
	for _, nd := range z.nodes {
		if nd.cmd == nil {
			continue
		}
		if nd.paused {
			_ = nd.cmd.Process.Signal(syscall.SIGCONT)
		}
		_ = nd.cmd.Process.Signal(syscall.SIGKILL)
		<-nd.exited
		nd.cmd = nil
	}
}

// zkEnsemble is a real ZooKeeper 3.8 ensemble (compat-tests starts it).
type zkEnsemble struct {
	e       *compattests.Ensemble
	proxies *peerProxies
	closed  bool
	paused  map[int]bool
	dead    map[int]bool
}

// StartZooKeeper starts an n-node ZooKeeper ensemble; with partitionable,
// its nodes reach each other through peer proxies (zkproxy.go), so it can
// be partitioned. Only then: a proxy accepts a connection to a node that
// is down and only then fails it, where the node's closed port would have
// refused it, and ZooKeeper's election waits on such a connection
// (kill-leader: writes resumed after 6.0 s through proxies, 1.04 s
// without).
func StartZooKeeper(n int, partitionable bool) (Cluster, error) {
	if !partitionable {
		e, err := compattests.StartZooKeeperEnsemble(n)
		if err != nil {
			return nil, err
		}
		return &zkEnsemble{e: e, paused: map[int]bool{}, dead: map[int]bool{}}, nil
	}
	ports, err := freeport.PickN(3 * n) // client, quorum, election per node, myid order
	if err != nil {
		return nil, err
	}
	pp, servers, err := startPeerProxies(ports)
	if err != nil {
		return nil, err
	}
	env := []string{"ZK_PORTS=" + strings.Trim(fmt.Sprint(ports), "[]")}
	for i, lines := range servers {
		env = append(env, fmt.Sprintf("ZK_SERVERS_%d=%s", i+1, lines))
	}
	e, err := compattests.StartZooKeeperEnsemble(n, env...)
	if err != nil {
		pp.close()
		return nil, err
	}
	return &zkEnsemble{e: e, proxies: pp, paused: map[int]bool{}, dead: map[int]bool{}}, nil
}

func (z *zkEnsemble) Name() string     { return "zookeeper" }
func (z *zkEnsemble) Addrs() []string  { return z.e.Addrs }
func (z *zkEnsemble) CanIsolate() bool { return z.proxies != nil }
func (z *zkEnsemble) Leader(d time.Duration) (int, error) {
	return leaderOf(z.e.Addrs, func(i int) bool { return z.paused[i] || z.dead[i] }, d)
}
func (z *zkEnsemble) Down(i int) bool { return z.dead[i] }

func (z *zkEnsemble) Kill(i int) error {
	z.dead[i] = true
	return z.e.Kill(i)
}

// Restart is not offered: the ensemble's start script owns its command
// lines. A ZooKeeper run ends after its kill.
func (z *zkEnsemble) Restart(i int) error {
	return fmt.Errorf("restarting a ZooKeeper node is not supported by the suite")
}
func (z *zkEnsemble) sig(i int, s syscall.Signal) error {
	pid, err := z.e.Pid(i)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, s)
}
func (z *zkEnsemble) Pause(i int) error  { z.paused[i] = true; return z.sig(i, syscall.SIGSTOP) }
func (z *zkEnsemble) Resume(i int) error { z.paused[i] = false; return z.sig(i, syscall.SIGCONT) }
func (z *zkEnsemble) Isolate(i int) error {
	if z.proxies == nil {
		return fmt.Errorf("this ZooKeeper ensemble was started without peer proxies")
	}
	z.proxies.isolate(i)
	return nil
}

// CutLinks cuts the links between each pair of nodes until Heal.
func (z *zkEnsemble) CutLinks(pairs ...[2]int) error {
	if z.proxies == nil {
		return fmt.Errorf("this ZooKeeper ensemble was started without peer proxies")
	}
	for _, p := range pairs {
		z.proxies.cutLink(p[0], p[1], true)
	}
	return nil
}
func (z *zkEnsemble) Heal() error {
	if z.proxies != nil {
		z.proxies.heal()
	}
	return nil
}
func (z *zkEnsemble) Close() {
	if z.closed {
		return
	}
	z.closed = true
	for i := range z.e.Addrs {
		if z.paused[i] {
			_ = z.sig(i, syscall.SIGCONT)
		}
	}
	_ = z.Heal()
	z.e.Stop()
	if z.proxies != nil {
		z.proxies.close()
	}
}

// Timeline returns the log lines of every node whose message contains one
// of the patterns, in time order: what a failing fault test shows.
func (z *Zkbridge) Timeline(patterns ...string) string {
	type line struct{ at, text string }
	var lines []line
	for _, nd := range z.nodes {
		b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", nd.id)))
		for _, l := range strings.Split(string(b), "\n") {
			var rec struct {
				Time    string `json:"time"`
				Message string `json:"message"`
			}
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			for _, p := range patterns {
				if strings.Contains(rec.Message, p) {
					lines = append(lines, line{rec.Time, fmt.Sprintf("%s node%d %s", rec.Time, nd.id, rec.Message)})
					break
				}
			}
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].at < lines[j].at })
	var out []string
	for _, l := range lines {
		out = append(out, l.text)
	}
	return strings.Join(out, "\n")
}

// HostStall reports a moment when every running node logged a step batch
// of 10 or more ticks (its Raft loop did not run for 200 ms) within 150 ms
// of each other: the machine stalled, not one node.
func (z *Zkbridge) HostStall() (string, bool) {
	tick := regexp.MustCompile(`had (\d+) LocalTick msgs`)
	var per [][]time.Time
	for _, nd := range z.nodes {
		b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", nd.id)))
		var at []time.Time
		for _, l := range strings.Split(string(b), "\n") {
			var rec struct {
				Time    time.Time `json:"time"`
				Message string    `json:"message"`
			}
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			if m := tick.FindStringSubmatch(rec.Message); m != nil {
				if n, _ := strconv.Atoi(m[1]); n >= 10 {
					at = append(at, rec.Time)
				}
			}
		}
		per = append(per, at)
	}
	for _, t0 := range per[0] {
		all := true
		for _, other := range per[1:] {
			near := false
			for _, t1 := range other {
				if d := t1.Sub(t0); d < 150*time.Millisecond && d > -150*time.Millisecond {
					near = true
					break
				}
			}
			all = all && near
		}
		if all {
			return t0.Format("15:04:05.000"), true
		}
	}
	return "", false
}

// lastProblem returns the last error-level or panic line node i logged.
func (z *Zkbridge) lastProblem(i int) string {
	b, _ := os.ReadFile(filepath.Join(z.dir, fmt.Sprintf("node%d.log", z.nodes[i].id)))
	last := ""
	for _, l := range strings.Split(string(b), "\n") {
		var rec struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal([]byte(l), &rec) == nil && (rec.Level == "error" || rec.Level == "fatal"):
			last = rec.Message
		case strings.HasPrefix(l, "panic: "):
			last = l
		}
	}
	if i := strings.IndexByte(last, '\n'); i >= 0 {
		last = last[:i]
	}
	return last
}
