package compattests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file runs zkbridge clusters as separate processes for the fault
// tests: one built binary, nodes killed with SIGKILL and restarted on
// their data, and an optional TCP proxy between peers to cut one node off.

var builtBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// zkbridgeBinary builds the zkbridge command once per test binary run.
func zkbridgeBinary(t testing.TB) string {
	t.Helper()
	b := &builtBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "zkbridge-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "zkbridge")
		cmd := exec.Command("go", "build", "-o", b.path, ".")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// removeZkbridgeBinary deletes the built binary (TestMain calls it).
func removeZkbridgeBinary() {
	if builtBinary.dir != "" {
		os.RemoveAll(builtBinary.dir)
	}
}

// ClusterOptions shape a process cluster.
type ClusterOptions struct {
	TickTime time.Duration // ZooKeeper tickTime (default 2 s)
	// Proxied routes every peer connection through a PeerProxy, so a node
	// can be cut off from the others (Isolate).
	Proxied bool
	// SnapshotEntries is every node's --snapshot-entries (0: the default).
	SnapshotEntries uint64
	// ElectionTimeout is every node's --election-timeout (0:
	// SuiteElectionTimeout, which is longer than the server's default).
	ElectionTimeout time.Duration
	// DistinctHosts gives node i the client address 127.0.0.<i+1> instead
	// of 127.0.0.1, so that every node can open a tenant's port.
	DistinctHosts bool
}

// ProcNode is one zkbridge process.
type ProcNode struct {
	ID     int
	Client string // client address
	Peer   string // Raft address the others dial
	listen string // Raft listen address when not Peer (behind the proxy)
	Admin  string // admin HTTP address
	Native string // native gRPC API address
	peers  string // its --peers flag
	join   bool   // started with --join (added by raft add-voter)
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// ProcCluster is a loopback zkbridge cluster of separate processes.
type ProcCluster struct {
	t     testing.TB
	bin   string
	opts  ClusterOptions
	Nodes []*ProcNode
	Proxy *PeerProxy // nil unless Proxied
}

// StartProcCluster starts n nodes and waits until one leads and a majority
// follows it. Everything is stopped and removed when the test ends.
func StartProcCluster(t testing.TB, n int, opts ClusterOptions) *ProcCluster {
	t.Helper()
	if opts.TickTime == 0 {
		opts.TickTime = 2 * time.Second
	}
	if opts.ElectionTimeout == 0 {
		opts.ElectionTimeout = SuiteElectionTimeout
	}
	c := &ProcCluster{t: t, bin: zkbridgeBinary(t), opts: opts}
	ports, err := freePorts(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	for i := 0; i < n; i++ {
		clientHost := "127.0.0.1"
		if opts.DistinctHosts {
			clientHost = fmt.Sprintf("127.0.0.%d", i+1)
		}
		c.Nodes = append(c.Nodes, &ProcNode{ID: i + 1,
			Client: fmt.Sprintf("%s:%d", clientHost, ports[4*i]),
			Peer:   fmt.Sprintf("127.0.0.1:%d", ports[4*i+1]),
			Admin:  fmt.Sprintf("127.0.0.1:%d", ports[4*i+2]),
			Native: fmt.Sprintf("127.0.0.1:%d", ports[4*i+3]),
			dir:    filepath.Join(base, fmt.Sprintf("node%d", i+1))})
	}
	if opts.Proxied {
		if c.Proxy, err = newPeerProxy(c.Nodes); err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range c.Nodes {
		var peers []string
		for _, other := range c.Nodes {
			peers = append(peers, fmt.Sprintf("%d=%s", other.ID, other.Peer))
		}
		nd.peers = strings.Join(peers, ",")
	}
	t.Cleanup(c.stop)
	for i := range c.Nodes {
		c.Start(i)
	}
	c.WaitLeader(60 * time.Second)
	// Ready means registered in the replica directory too: scenarios that
	// read /zookeeper/config see every node's client address, as a
	// ZooKeeper ensemble serves its static configuration from the start.
	for i := range c.Nodes {
		if !c.WaitReady(i, 60*time.Second) {
			t.Fatalf("node %d not ready within 60 s", i+1)
		}
	}
	c.WaitCaughtUp(60 * time.Second)
	return c
}

// NativeAddrs returns every node's native API address, in node order.
func (c *ProcCluster) NativeAddrs() []string {
	var out []string
	for _, nd := range c.Nodes {
		out = append(out, nd.Native)
	}
	return out
}

// Addrs returns every node's client address, in node order.
func (c *ProcCluster) Addrs() []string {
	var out []string
	for _, nd := range c.Nodes {
		out = append(out, nd.Client)
	}
	return out
}

// Start starts node i (0-based) on its ports and data directory.
func (c *ProcCluster) Start(i int) {
	c.t.Helper()
	nd := c.Nodes[i]
	if err := os.MkdirAll(nd.dir, 0o750); err != nil {
		c.t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(nd.dir, "..", fmt.Sprintf("node%d.log", nd.ID)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		c.t.Fatal(err)
	}
	args := []string{"server", "--data-dir", nd.dir, "--client-addr", nd.Client,
		"--peer-addr", nd.Peer, "--admin-addr", nd.Admin, "--native-addr", nd.Native, "--replica-id", fmt.Sprint(nd.ID),
		"--peers", nd.peers, "--4lw", "*", "--tick-time", c.opts.TickTime.String(),
		"--election-timeout", c.opts.ElectionTimeout.String(), "--log-format", "json"}
	if nd.listen != "" {
		args = append(args, "--peer-listen-addr", nd.listen)
	}
	if c.opts.SnapshotEntries > 0 {
		args = append(args, "--snapshot-entries", fmt.Sprint(c.opts.SnapshotEntries))
	}
	if nd.join {
		args = append(args, "--join")
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary that dies (timeout, panic) takes its nodes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatal(err)
	}
	nd.cmd, nd.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(nd.exited)
}

// Kill sends SIGKILL to node i and waits until the process is gone.
func (c *ProcCluster) Kill(i int) {
	nd := c.Nodes[i]
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
	nd.cmd = nil
}

// Wipe kills node i, deletes its data directory and gives it replica id
// newID: started again (after raft add-voter), it joins as a new replica at
// the same addresses. Dragonboat never takes a removed replica id back.
func (c *ProcCluster) Wipe(i, newID int) {
	c.t.Helper()
	c.Kill(i)
	nd := c.Nodes[i]
	if err := os.RemoveAll(nd.dir); err != nil {
		c.t.Fatal(err)
	}
	nd.ID, nd.join = newID, true
	var peers []string
	for _, other := range c.Nodes {
		peers = append(peers, fmt.Sprintf("%d=%s", other.ID, other.Peer))
	}
	nd.peers = strings.Join(peers, ",")
}

// Alive reports whether node i's process runs.
func (c *ProcCluster) Alive(i int) bool {
	nd := c.Nodes[i]
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.exited:
		return false
	default:
		return true
	}
}

func (c *ProcCluster) stop() {
	for i, nd := range c.Nodes {
		if nd.cmd == nil {
			continue
		}
		// SIGTERM first so the node syncs; SIGKILL if it lingers.
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-nd.exited:
		case <-time.After(10 * time.Second):
			c.Kill(i)
		}
		nd.cmd = nil
	}
	if c.Proxy != nil {
		c.Proxy.Close()
	}
	if c.t.Failed() || os.Getenv("ZKBRIDGE_FAULT_LOGS") != "" {
		for _, nd := range c.Nodes {
			b, _ := os.ReadFile(filepath.Join(nd.dir, "..", fmt.Sprintf("node%d.log", nd.ID)))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			c.t.Logf("node %d log (last %d lines):\n%s", nd.ID, min(40, len(lines)), strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}
}

// NodeStatus is the part of /raft/status the tests read.
type NodeStatus struct {
	ReplicaID    int    `json:"replica_id"`
	Role         string `json:"role"`
	LeaderID     int    `json:"leader_id"`
	Term         uint64 `json:"term"`
	AppliedIndex uint64 `json:"applied_index"`
	LastZxid     int64  `json:"last_zxid"`
	Error        string `json:"error"`
}

var adminClient = &http.Client{Timeout: 3 * time.Second}

// Status returns node i's /raft/status. It fails on a node cut off from
// the majority: the status reads the membership through Raft.
func (c *ProcCluster) Status(i int) (NodeStatus, error) {
	return c.StatusWithin(i, adminClient.Timeout)
}

// StatusWithin is Status with a timeout of d.
func (c *ProcCluster) StatusWithin(i int, d time.Duration) (NodeStatus, error) {
	var st NodeStatus
	resp, err := (&http.Client{Timeout: d}).Get("http://" + c.Nodes[i].Admin + "/raft/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("status %q: %w", b, err)
	}
	if st.Error != "" {
		return st, errors.New(st.Error)
	}
	return st, nil
}

// AdminPost posts form values to node i's admin path (/raft/add-voter, ...).
func (c *ProcCluster) AdminPost(i int, path string, form url.Values) error {
	client := &http.Client{Timeout: 20 * time.Second} // membership changes take a round or two
	resp, err := client.PostForm("http://"+c.Nodes[i].Admin+path, form)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s on node %d: %s: %s", path, c.Nodes[i].ID, resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// ContentHash returns node i's /raft/hash: its applied index and a hash of
// its whole state machine at that index.
func (c *ProcCluster) ContentHash(i int) (uint64, string, error) {
	var out struct {
		Index uint64 `json:"applied_index"`
		Hash  string `json:"content_hash"`
		Error string `json:"error"`
	}
	resp, err := adminClient.Get("http://" + c.Nodes[i].Admin + "/raft/hash")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, "", fmt.Errorf("node %d /raft/hash: %w", c.Nodes[i].ID, err)
	}
	if out.Error != "" {
		return 0, "", errors.New(out.Error)
	}
	return out.Index, out.Hash, nil
}

// LogEvents returns the fields of every JSON line node i logged with
// message msg (in its current log file, named after its replica id).
func (c *ProcCluster) LogEvents(i int, msg string) []map[string]any {
	nd := c.Nodes[i]
	b, err := os.ReadFile(filepath.Join(nd.dir, "..", fmt.Sprintf("node%d.log", nd.ID)))
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["message"] == msg {
			out = append(out, ev)
		}
	}
	return out
}

// LastZxid is the last zxid node i applied, from the admin srvr command
// (answered with or without a leader).
func (c *ProcCluster) LastZxid(i int) int64 {
	c.t.Helper()
	resp, err := adminClient.Get("http://" + c.Nodes[i].Admin + "/commands/srvr")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Stats struct {
			Zxid int64 `json:"last_processed_zxid"`
		} `json:"server_stats"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.t.Fatalf("node %d srvr: %v", i+1, err)
	}
	return out.Stats.Zxid
}

// WaitLeader waits until a live node leads with a quorum behind it (its
// status, which reads the membership through Raft, succeeds) and a
// majority of the live nodes agree; it returns the leader's index.
func (c *ProcCluster) WaitLeader(d time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		lead, agree := -1, 0
		for i := range c.Nodes {
			if !c.Alive(i) {
				continue
			}
			st, err := c.Status(i)
			if err != nil {
				continue
			}
			if st.Role == "leader" {
				lead = i
			}
			if st.LeaderID != 0 {
				agree++
			}
		}
		if lead >= 0 && agree > len(c.Nodes)/2 {
			return lead
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %v", d)
	return -1
}

// WaitReady waits until node i's /readyz answers (it knows a leader).
func (c *ProcCluster) WaitReady(i int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := adminClient.Get("http://" + c.Nodes[i].Admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	return false
}

// WaitCaughtUp waits until every live node has applied the same last zxid,
// and returns it.
func (c *ProcCluster) WaitCaughtUp(d time.Duration) int64 {
	c.t.Helper()
	deadline := time.Now().Add(d)
	var last []string
	for time.Now().Before(deadline) {
		last = last[:0]
		zxids := map[int64]bool{}
		for i := range c.Nodes {
			if !c.Alive(i) {
				continue
			}
			st, err := c.Status(i)
			if err != nil {
				last = append(last, fmt.Sprintf("node %d: %v", i+1, err))
				zxids[-1] = true
				continue
			}
			last = append(last, fmt.Sprintf("node %d: zxid %#x applied %d", i+1, st.LastZxid, st.AppliedIndex))
			zxids[st.LastZxid] = true
		}
		if len(zxids) == 1 && !zxids[-1] {
			for z := range zxids {
				return z
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("nodes did not converge within %v: %s", d, strings.Join(last, "; "))
	return 0
}

// PeerProxy stands in front of every node's Raft listener: the nodes
// advertise and dial the proxy's address, which forwards to the node. Each
// connection is attributed to the node that dialed it by the sender address
// dragonboat puts in every message batch, so one node can be cut off from
// all others in both directions.
type PeerProxy struct {
	mu       sync.Mutex
	fronts   []*proxyFront
	sources  map[string]int // length-prefixed advertised address -> node id
	isolated map[int]bool
	conns    map[net.Conn][2]int // open connections -> (from, to)
	wg       sync.WaitGroup
}

type proxyFront struct {
	to     int
	ln     net.Listener
	target string
}

// newPeerProxy opens one front per node; each node's Peer becomes the
// proxy's address and listen the address the node really listens on.
func newPeerProxy(nodes []*ProcNode) (*PeerProxy, error) {
	p := &PeerProxy{sources: map[string]int{}, isolated: map[int]bool{}, conns: map[net.Conn][2]int{}}
	for _, nd := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, err
		}
		f := &proxyFront{to: nd.ID, ln: ln, target: nd.Peer}
		nd.listen, nd.Peer = nd.Peer, ln.Addr().String()
		// protobuf string: length byte, then the bytes (addresses are short)
		p.sources[string([]byte{byte(len(nd.Peer))})+nd.Peer] = nd.ID
		p.fronts = append(p.fronts, f)
	}
	for _, f := range p.fronts {
		p.wg.Add(1)
		go p.accept(f)
	}
	return p, nil
}

func (p *PeerProxy) cut(from, to int) bool { return p.isolated[from] || p.isolated[to] }

// source reads the start of a connection until it names its sender; it
// returns the bytes read (to forward) and the sender (0 if unknown).
func (p *PeerProxy) source(nc net.Conn) ([]byte, int) {
	var buf []byte
	chunk := make([]byte, 32<<10)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = nc.SetReadDeadline(time.Time{}) }()
	for len(buf) < 4<<20 {
		n, err := nc.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for pat, id := range p.sources {
			if strings.Contains(string(buf), pat) {
				return buf, id
			}
		}
		if err != nil {
			break
		}
	}
	return buf, 0
}

func (p *PeerProxy) accept(f *proxyFront) {
	defer p.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(f, in)
	}
}

func (p *PeerProxy) forward(f *proxyFront, in net.Conn) {
	head, from := p.source(in)
	p.mu.Lock()
	blocked := p.cut(from, f.to)
	p.mu.Unlock()
	if blocked {
		in.Close()
		return
	}
	out, err := net.DialTimeout("tcp", f.target, time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.mu.Lock()
	if p.cut(from, f.to) {
		p.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	p.conns[in], p.conns[out] = [2]int{from, f.to}, [2]int{from, f.to}
	p.mu.Unlock()
	if _, err := out.Write(head); err != nil {
		in.Close()
		out.Close()
	}
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	go pipe(out, in)
	go pipe(in, out)
}

// Isolate cuts node id off from every other node: open connections to and
// from it are closed and new ones refused until Heal.
func (p *PeerProxy) Isolate(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isolated[id] = true
	for nc, link := range p.conns {
		if p.cut(link[0], link[1]) {
			nc.Close()
		}
	}
}

// Heal lets every link carry traffic again.
func (p *PeerProxy) Heal() {
	p.mu.Lock()
	clear(p.isolated)
	p.mu.Unlock()
}

// Close stops the proxy and closes its connections.
func (p *PeerProxy) Close() {
	p.mu.Lock()
	for _, f := range p.fronts {
		f.ln.Close()
	}
	for nc := range p.conns {
		nc.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
