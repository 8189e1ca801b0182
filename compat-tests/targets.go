package compattests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/internal/freeport"
	"github.com/zkbridge/zkbridge/server"
)

// SuperDigest is the super user both servers are started with
// (super:superpw), as scripts/start-zookeeper.sh does.
const SuperDigest = "super:g9oN2HttPfn8MMWJZ2r45Np/LIA="

// SuperCredentials is the super user's "user:password" of SuperDigest.
const SuperCredentials = "super:superpw"

// ReapInterval is the container/TTL check interval of both servers in
// the suite (ZooKeeper's znode.container.checkIntervalMs).
const ReapInterval = time.Second

// RepoRoot finds the repository root (where go.mod is).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// ZooKeeper is a real ZooKeeper started by scripts/start-zookeeper.sh.
type ZooKeeper struct {
	Addr    string
	pid     string
	dir     string
	scripts string
}

// StartZooKeeper starts a standalone ZooKeeper 3.8 on a free loopback port
// with the suite's settings (SuiteSettings).
func StartZooKeeper() (*ZooKeeper, error) {
	return StartZooKeeperWith(ZooKeeperOptions{})
}

// ZooKeeperOptions shape a ZooKeeper started by StartZooKeeperWith.
type ZooKeeperOptions struct {
	// Super is the super user's "user:password" (default SuperCredentials).
	Super string
	// Reaper is the container check interval (default ReapInterval).
	Reaper time.Duration
	// Scripts is the directory of start-zookeeper.sh (default: ScriptsDir()).
	Scripts string
	// Env is more environment for start-zookeeper.sh (ZK_EXTRA_CFG,
	// ZK_TLS, ZK_JVM_FLAGS).
	Env []string
}

// StartZooKeeperWith starts a standalone ZooKeeper 3.8 (Debian's package,
// scripts/install-zookeeper.sh) on a free loopback port: TTL nodes and
// every four-letter word enabled, reconfig disabled, and o's super user
// and container check interval.
func StartZooKeeperWith(o ZooKeeperOptions) (*ZooKeeper, error) {
	if o.Super == "" {
		o.Super = SuperCredentials
	}
	if o.Reaper <= 0 {
		o.Reaper = ReapInterval
	}
	if o.Scripts == "" {
		o.Scripts = ScriptsDir()
	}
	cmd := exec.Command("bash", filepath.Join(o.Scripts, "start-zookeeper.sh"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("ZK_CONTAINER_CHECK_MS=%d", max(o.Reaper.Milliseconds(), 1)), "ZK_HEAP=256m",
		"ZK_SUPER_DIGEST="+digestID(o.Super))
	cmd.Env = append(cmd.Env, o.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("start-zookeeper.sh: %v: %s", err, stderr.String())
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return nil, fmt.Errorf("start-zookeeper.sh printed %q, want PORT PID DIR", out)
	}
	return &ZooKeeper{Addr: "127.0.0.1:" + f[0], pid: f[1], dir: f[2], scripts: o.Scripts}, nil
}

// ScriptsDir is the directory of the project's scripts: ./scripts when it
// has start-zookeeper.sh (a checkout), else scripts/ beside the directory
// of the running executable (bin/zkbridge in a checkout), else the
// checkout this package was built from.
func ScriptsDir() string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, filepath.Join(wd, "scripts"))
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(exe)), "scripts"))
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "start-zookeeper.sh")); err == nil {
			return d
		}
	}
	return filepath.Join(RepoRoot(), "scripts")
}

// Stop stops the ZooKeeper and removes its directory.
func (z *ZooKeeper) Stop() {
	_ = exec.Command("bash", filepath.Join(z.scripts, "stop-zookeeper.sh"), z.pid, z.dir).Run()
}

// Zkbridge is a single zkbridge node run in this process.
type Zkbridge struct {
	Addr string
	Srv  *server.Server
	dir  string
}

// FreePort returns a loopback port that was free a moment ago, drawn
// below the kernel's ephemeral range (internal/freeport): a port 0 bind
// handed out ports an outgoing connection could take before the server
// bound it (a make chaos run lost a cluster start to that: "bind: address
// already in use").
func FreePort() (int, error) {
	return freeport.Pick()
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) { return freeport.PickN(n) }

// suiteConfig is a zkbridge node configured like the ZooKeeper of the
// suite: every four-letter word, the same super digest, a 1 s reaper, and
// the suite's election timeout.
func suiteConfig(dir, peer string) server.Config {
	return server.Config{
		DataDir:         dir,
		ClientAddr:      "127.0.0.1:0",
		AdminDisabled:   true,
		PeerAddr:        peer,
		FourLetterWords: []string{"*"},
		SuperDigest:     SuperDigest,
		ReaperInterval:  ReapInterval,
		ElectionTimeout: SuiteElectionTimeout,
	}
}

// SuiteElectionTimeout is the Raft election timeout of every zkbridge node
// the suite starts. The default 200 ms is shorter than the stalls a node
// sees on a 2-core machine running ZooKeeper ensembles, zkbridge clusters
// and another test package at once (a step worker held up to 260 ms was
// logged in CI), and an election mid-scenario drops clients. The suite
// tests behaviour, not failover speed (scripts/failover-gap.sh measures
// that with the default).
const SuiteElectionTimeout = time.Second

func suiteLogger(node int) zerolog.Logger {
	return zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Str("server", "zkbridge").Int("node", node).Logger()
}

// StartZkbridge starts a one-node zkbridge configured as suiteConfig.
func StartZkbridge(dir string) (*Zkbridge, error) {
	peer, err := FreePort()
	if err != nil {
		return nil, err
	}
	srv, err := server.New(suiteConfig(dir, fmt.Sprintf("127.0.0.1:%d", peer)), suiteLogger(1))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return &Zkbridge{Addr: srv.ClientAddr(), Srv: srv, dir: dir}, nil
}

// Stop stops the node.
func (z *Zkbridge) Stop() { z.Srv.Stop() }

// ZkbridgeCluster is an n-node zkbridge cluster run in this process, every
// node configured as suiteConfig: the counterpart of Ensemble.
type ZkbridgeCluster struct {
	Addrs []string // client address of each node, in replica id order
	nodes []*server.Server
}

// StartZkbridgeCluster starts n nodes with data under dir. They start
// together: each one's Start waits for a quorum.
func StartZkbridgeCluster(dir string, n int, mutate ...func(*server.Config)) (*ZkbridgeCluster, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	peers := map[uint64]string{}
	for i, p := range ports {
		peers[uint64(i+1)] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	c := &ZkbridgeCluster{}
	for i := 1; i <= n; i++ {
		cfg := suiteConfig(filepath.Join(dir, fmt.Sprintf("node%d", i)), peers[uint64(i)])
		cfg.ReplicaID, cfg.Peers = uint64(i), peers
		for _, m := range mutate {
			m(&cfg)
		}
		srv, err := server.New(cfg, suiteLogger(i))
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, n)
	for i, srv := range c.nodes {
		go func() {
			if err := srv.Start(ctx); err != nil {
				errs <- fmt.Errorf("node %d: %w", i+1, err)
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range c.nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		c.Stop()
		return nil, first
	}
	for _, srv := range c.nodes {
		c.Addrs = append(c.Addrs, srv.ClientAddr())
	}
	// Ready (registered in the replica directory) and caught up: fresh
	// scenarios read /zookeeper/config, which a ZooKeeper ensemble serves
	// complete from its static configuration.
	if err := c.awaitReady(60 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *ZkbridgeCluster) awaitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		why := c.notReady()
		if why == nil {
			// Status re-renders /zookeeper/config; once every directory is
			// complete, one more round renders it from the complete one.
			for _, srv := range c.nodes {
				_, _ = nodeStatus(srv)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready within %v: %w", d, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// notReady says why the first node that is not ready is not (nil: all are,
// and every directory lists every replica's client address).
func (c *ZkbridgeCluster) notReady() error {
	for i, srv := range c.nodes {
		if err := srv.Ready(); err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		st, err := nodeStatus(srv)
		if err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		for _, r := range st.Replicas {
			if r.ClientAddress == "" {
				return fmt.Errorf("node %d: replica %d has no client address in the directory yet", i+1, r.ReplicaID)
			}
		}
	}
	return nil
}

func nodeStatus(srv *server.Server) (server.RaftStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Status(ctx)
}

// KeepLeader makes replica id the leader again if leadership moved (an
// election on a loaded machine). It returns whether it had to. The check
// is srvr's Mode, as LeaderLast orders the nodes.
func (c *ZkbridgeCluster) KeepLeader(id uint64) (bool, error) {
	if nodeMode(c.Addrs[id-1]) == "leader" {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return true, c.nodes[id-1].TransferLeader(ctx, id)
}

// Stop stops every node.
func (c *ZkbridgeCluster) Stop() {
	for _, srv := range c.nodes {
		srv.Stop()
	}
}

// Ensemble is a real ZooKeeper ensemble started by
// scripts/start-zookeeper-ensemble.sh, the oracle for cluster scenarios.
type Ensemble struct {
	Addrs []string // client address of each node, in myid order
	pids  string
	dir   string
}

// StartZooKeeperEnsemble starts n ZooKeeper nodes on loopback and waits
// until they have a leader and all serve. env adds settings the start
// script reads (e.g. ZK_RECONFIG_ENABLED=true).
func StartZooKeeperEnsemble(n int, env ...string) (*Ensemble, error) {
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "start-zookeeper-ensemble.sh"), fmt.Sprint(n))
	cmd.Env = append(os.Environ(), fmt.Sprintf("ZK_CONTAINER_CHECK_MS=%d", ReapInterval.Milliseconds()))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("start-zookeeper-ensemble.sh: %v: %s", err, stderr.String())
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return nil, fmt.Errorf("start-zookeeper-ensemble.sh printed %q, want CONNECT PIDS DIR", out)
	}
	return &Ensemble{Addrs: strings.Split(f[0], ","), pids: f[1], dir: f[2]}, nil
}

// Kill kill -9s node i (0-based, myid order).
func (e *Ensemble) Kill(i int) error {
	pids := strings.Split(e.pids, ",")
	if i < 0 || i >= len(pids) {
		return fmt.Errorf("no ensemble node %d", i)
	}
	return exec.Command("kill", "-9", pids[i]).Run()
}

// StopNode stops node i (0-based) of the cluster.
func (c *ZkbridgeCluster) StopNode(i int) { c.nodes[i].Stop() }

// Stop stops every node and removes the ensemble's directory.
func (e *Ensemble) Stop() {
	_ = exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "stop-zookeeper.sh"), e.pids, e.dir).Run()
}

// Pid returns the process id of node i (0-based, myid order), for a fault
// suite that pauses it (SIGSTOP) or kills it.
func (e *Ensemble) Pid(i int) (int, error) {
	pids := strings.Split(e.pids, ",")
	if i < 0 || i >= len(pids) {
		return 0, fmt.Errorf("no ensemble node %d", i)
	}
	return strconv.Atoi(pids[i])
}
