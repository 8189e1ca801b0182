package zkdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

const zkJar = "/usr/share/java/zookeeper.jar"

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// zkServer is a real standalone ZooKeeper started by scripts/start-zookeeper.sh.
type zkServer struct {
	addr    string
	pid     int
	dataDir string
	stopped bool
}

func startZooKeeper(t *testing.T, jvmFlags string) *zkServer {
	t.Helper()
	if _, err := os.Stat(zkJar); err != nil {
		t.Skipf("ZooKeeper is not installed (%s missing; run scripts/install-zookeeper.sh)", zkJar)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is not installed (run scripts/install-zookeeper.sh)")
	}
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "start-zookeeper.sh"))
	cmd.Env = append(os.Environ(),
		"TMPDIR="+tmp,
		"ZK_TICK_TIME=200",
		"ZK_CONTAINER_CHECK_MS=300",
		"ZK_HEAP=256m",
		// Small snapCount and preallocation: several snapshots and logs.
		"ZK_JVM_FLAGS=-Dzookeeper.snapCount=16 -Dzookeeper.preAllocSize=16 -Dzookeeper.digest.enabled=true "+jvmFlags,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start-zookeeper.sh: %v\n%s", err, stderr.String())
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		t.Fatalf("start-zookeeper.sh printed %q", out)
	}
	pid, _ := strconv.Atoi(f[1])
	s := &zkServer{addr: "127.0.0.1:" + f[0], pid: pid, dataDir: filepath.Join(f[2], "data")}
	t.Cleanup(func() {
		if !s.stopped {
			s.stop(t)
		}
	})
	return s
}

// stop sends SIGTERM and waits for the JVM to exit.
func (s *zkServer) stop(t *testing.T) {
	s.stopped = true
	syscall.Kill(s.pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(s.pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(s.pid, syscall.SIGKILL)
	t.Logf("ZooKeeper %d did not stop on SIGTERM; killed", s.pid)
}

// rawSession speaks just enough of the wire protocol for what
// go-zookeeper lacks: create2 (opcode 15), and a session that is abandoned
// (the socket closed without closeSession) so that it expires.
type rawSession struct {
	c   net.Conn
	xid int32
	id  int64
}

func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func (r *rawSession) readFrame() ([]byte, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r.c, lb[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(lb[:]))
	_, err := io.ReadFull(r.c, b)
	return b, err
}

func rawConnect(addr string, timeoutMs int32) (*rawSession, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)                 // protocolVersion
	b = binary.BigEndian.AppendUint64(b, 0)                 // lastZxidSeen
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs)) // timeOut
	b = binary.BigEndian.AppendUint64(b, 0)                 // sessionId
	b = appendStr(b, string(make([]byte, 16)))              // passwd
	b = append(b, 0)                                        // readOnly
	r := &rawSession{c: c}
	if _, err := c.Write(frame(b)); err != nil {
		return nil, err
	}
	resp, err := r.readFrame()
	if err != nil || len(resp) < 16 {
		return nil, fmt.Errorf("connect response: %v", err)
	}
	r.id = int64(binary.BigEndian.Uint64(resp[8:16]))
	return r, nil
}

func (r *rawSession) create2(path string, data []byte, flags int32) error {
	r.xid++
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(r.xid))
	b = binary.BigEndian.AppendUint32(b, uint32(OpCreate2))
	b = appendStr(b, path)
	b = appendStr(b, string(data))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 31)
	b = appendStr(b, "world")
	b = appendStr(b, "anyone")
	b = binary.BigEndian.AppendUint32(b, uint32(flags))
	if _, err := r.c.Write(frame(b)); err != nil {
		return err
	}
	resp, err := r.readFrame()
	if err != nil || len(resp) < 16 {
		return fmt.Errorf("create2 response: %v", err)
	}
	if e := int32(binary.BigEndian.Uint32(resp[12:16])); e != 0 {
		return fmt.Errorf("create2 %s: error %d", path, e)
	}
	return nil
}

func connectZK(t *testing.T, addr string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, timeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				go func() {
					for range ev {
					}
				}()
				return c
			}
		case <-deadline:
			t.Fatal("no ZooKeeper session within 10 s")
		}
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func waitGone(t *testing.T, c *zk.Conn, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, p := range paths {
		for {
			ok, _, err := c.Exists(p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still exists after 20 s", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

type liveNode struct {
	data []byte
	stat zk.Stat
	acl  []zk.ACL
}

func walk(t *testing.T, c *zk.Conn, path string, out map[string]liveNode) {
	data, st, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	acl, _, err := c.GetACL(path)
	if err != nil {
		t.Fatalf("getACL %s: %v", path, err)
	}
	out[path] = liveNode{data, *st, acl}
	kids, _, err := c.Children(path)
	if err != nil {
		t.Fatalf("children %s: %v", path, err)
	}
	for _, k := range kids {
		walk(t, c, strings.TrimSuffix(path, "/")+"/"+k, out)
	}
}

// exercise drives every txn type ZooKeeper logs through a real server.
func exercise(t *testing.T, addr string) (*zk.Conn, map[string]liveNode) {
	open := zk.WorldACL(zk.PermAll)
	a := connectZK(t, addr, 4*time.Second)
	create := func(c *zk.Conn, p string, data string, flags int32) string {
		t.Helper()
		return must[string](t, "create "+p)(c.Create(p, []byte(data), flags, open))
	}
	create(a, "/app", "app", 0)
	create(a, "/app/p1", "one", 0)
	for i := 0; i < 3; i++ {
		create(a, "/app/seq-", fmt.Sprint(i), zk.FlagSequence)
	}
	create(a, "/app/eph", "mine", zk.FlagEphemeral)
	create(a, "/app/eseq-", "", zk.FlagEphemeralSequential)
	create(a, "/app/nil", "", 0)

	// A session closed by its client, holding ephemerals.
	b := connectZK(t, addr, 4*time.Second)
	create(b, "/app/ephB", "b", zk.FlagEphemeral)
	create(b, "/app/ephB2", "b2", zk.FlagEphemeral)
	b.Close()

	// create2, and a session that expires holding an ephemeral.
	raw, err := rawConnect(addr, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.create2("/app/c2", []byte("create2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := raw.create2("/app/ephC", []byte("expires"), 1); err != nil {
		t.Fatal(err)
	}
	raw.c.Close()

	// Containers (one emptied, so the server deletes it) and TTL nodes
	// (one short, so the server expires it).
	must[string](t, "container")(a.CreateContainer("/cont", []byte("c"), zk.FlagContainer, open))
	create(a, "/cont/x", "x", 0)
	must[string](t, "container2")(a.CreateContainer("/cont2", nil, zk.FlagContainer, open))
	create(a, "/cont2/y", "", 0)
	if err := a.Delete("/cont2/y", -1); err != nil {
		t.Fatal(err)
	}
	must[string](t, "ttl")(a.CreateTTL("/ttl1", []byte("long"), zk.FlagTTL, open, time.Hour))
	must[string](t, "ttl2")(a.CreateTTL("/ttl2", []byte("short"), zk.FlagTTL, open, 100*time.Millisecond))
	must[string](t, "ttlseq")(a.CreateTTL("/ttlseq-", nil, zk.FlagPersistentSequentialWithTTL, open, time.Hour))

	// setData, setACL, delete.
	must[*zk.Stat](t, "set")(a.Set("/app/p1", []byte("two"), -1))
	must[*zk.Stat](t, "set")(a.Set("/app/p1", []byte("three"), 1))
	must[*zk.Stat](t, "set empty")(a.Set("/app/nil", nil, -1))
	must[*zk.Stat](t, "setACL")(a.SetACL("/app/p1", append(zk.WorldACL(zk.PermRead|zk.PermWrite), zk.DigestACL(zk.PermAll, "u", "pw")...), -1))
	if err := a.Delete("/app/seq-0000000001", -1); err != nil {
		t.Fatal(err)
	}

	// A multi that succeeds and one that fails (logged with ErrorTxns).
	must[[]zk.MultiResponse](t, "multi")(a.Multi(
		&zk.CreateRequest{Path: "/m1", Data: []byte("m"), Acl: open},
		&zk.CreateRequest{Path: "/m1/k", Data: []byte("k"), Acl: open, Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: "/app/p1", Data: []byte("multi"), Version: -1},
		&zk.CheckVersionRequest{Path: "/app", Version: -1},
		&zk.DeleteRequest{Path: "/app/seq-0000000002", Version: -1},
	))
	if _, err := a.Multi(
		&zk.CreateRequest{Path: "/m2", Data: []byte("never"), Acl: open},
		&zk.CheckVersionRequest{Path: "/app", Version: 42},
	); err == nil {
		t.Fatal("failing multi succeeded")
	}

	// Enough writes for several snapshots and logs.
	for i := 0; i < 80; i++ {
		p := fmt.Sprintf("/bulk%d", i%8)
		if i < 8 {
			create(a, p, strings.Repeat("x", i*100), 0)
		} else {
			must[*zk.Stat](t, "bulk set")(a.Set(p, []byte(strings.Repeat("y", i)), -1))
		}
		if i%20 == 19 {
			create(a, fmt.Sprintf("/bulk%d/child", i/20), "", zk.FlagEphemeral)
		}
	}
	if err := a.Delete("/bulk7", -1); err != nil {
		t.Fatal(err)
	}

	waitGone(t, a, "/app/ephC", "/cont2", "/ttl2")
	// Authenticated, getACL shows digest ids instead of "u:x".
	if err := a.AddAuth("digest", []byte("u:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync("/"); err != nil {
		t.Fatal(err)
	}
	live := map[string]liveNode{}
	walk(t, a, "/", live)
	return a, live
}

func TestRealZooKeeperDataDir(t *testing.T) {
	start := time.Now()
	srv := startZooKeeper(t, "")
	a, live := exercise(t, srv.addr)
	srv.stop(t)
	var once sync.Once
	go once.Do(a.Close) // the server is gone; do not wait for closeSession
	t.Logf("ZooKeeper run: %v, %d live nodes", time.Since(start).Round(time.Millisecond), len(live))

	d, err := OpenDataDir(srv.dataDir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snapshots, %d logs", len(d.Snapshots), len(d.Logs))
	if len(d.Snapshots) < 2 || len(d.Logs) < 2 {
		t.Errorf("want several snapshots and logs, got %d and %d", len(d.Snapshots), len(d.Logs))
	}
	copyFixtures(t, d)

	// Every txn type the script should have produced, and the logs whole.
	seen := map[string]int{}
	r := d.NewLogReader(0)
	var digests int
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Digest != nil {
			digests++
		}
		name := OpName(e.Header.Type)
		switch rec := e.Record.(type) {
		case *MultiTxn:
			if rec.Failed() {
				name = "multi(failed)"
			}
			for _, s := range rec.Txns {
				seen["multi/"+OpName(s.Type)]++
			}
		case *CloseSessionTxn:
			if len(rec.Paths2Delete) > 0 {
				name = "closeSession(ephemerals)"
			}
		}
		seen[name]++
	}
	r.Close()
	t.Logf("txns: %v (%d with digest), tails %v", seen, digests, r.Tails())
	for _, want := range []string{"create", "create2", "createContainer", "createTTL", "delete", "deleteContainer",
		"setData", "setACL", "multi", "multi(failed)", "multi/error", "multi/check", "createSession",
		"closeSession(ephemerals)"} {
		if seen[want] == 0 {
			t.Errorf("no %s txn in the logs", want)
		}
	}
	if len(r.Tails()) != 0 {
		t.Errorf("clean shutdown left torn tails: %v", r.Tails())
	}
	for _, h := range r.Headers() {
		if h.Magic != LogMagic || h.Version != 2 {
			t.Errorf("log header %+v", h)
		}
	}

	// The newest snapshot and the oldest (replaying more logs) must both
	// give the tree the client read.
	for _, snap := range []SnapFile{d.Snapshots[0], d.Snapshots[len(d.Snapshots)-1]} {
		info, err := ReadSnapshot(snap.Path, SnapshotVisitor{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v digest %+v", filepath.Base(snap.Path), info, info.Digest)
		tree, _, err := LoadTreeFrom(d, &snap)
		if err != nil {
			t.Fatal(err)
		}
		compareTree(t, filepath.Base(snap.Path), tree, live)
		checkDigest(t, filepath.Base(snap.Path), tree)
	}
	tree, _, err := LoadTreeFrom(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	compareTree(t, "logs only", tree, live)
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// checkDigest: the replayed tree's digest is the one ZooKeeper logged with
// the last txn.
func checkDigest(t *testing.T, from string, tree *Tree) {
	t.Helper()
	if tree.LastDigest == nil {
		t.Fatalf("%s: the last txn carries no digest", from)
	}
	if got := tree.Digest(); got != tree.LastDigest.TreeDigest {
		t.Fatalf("%s: tree digest %#x, ZooKeeper logged %#x with txn %#x", from, got, tree.LastDigest.TreeDigest, tree.Zxid)
	}
}

func compareTree(t *testing.T, from string, tree *Tree, live map[string]liveNode) {
	t.Helper()
	var missing, extra []string
	for p := range live {
		if tree.Nodes[p] == nil {
			missing = append(missing, p)
		}
	}
	for p := range tree.Nodes {
		if _, ok := live[p]; !ok {
			extra = append(extra, p)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: paths differ: missing %v, extra %v", from, missing, extra)
	}
	for p, ln := range live {
		st, ok := tree.Stat(p)
		if !ok {
			continue
		}
		n := tree.Nodes[p]
		got := zk.Stat(st)
		if got != ln.stat {
			t.Errorf("%s: %s stat\n got  %+v\n want %+v", from, p, got, ln.stat)
		}
		if !bytes.Equal(n.Data, ln.data) {
			t.Errorf("%s: %s data %q, want %q", from, p, n.Data, ln.data)
		}
		var acl []zk.ACL
		for _, a := range n.ACL {
			acl = append(acl, zk.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID})
		}
		if fmt.Sprint(acl) != fmt.Sprint(ln.acl) {
			t.Errorf("%s: %s acl %v, want %v", from, p, acl, ln.acl)
		}
	}
	var kinds []string
	for _, p := range []string{"/cont", "/ttl1", "/app/eph", "/app/p1"} {
		if n := tree.Nodes[p]; n != nil {
			k, ttl := EphemeralKind(n.Stat.EphemeralOwner)
			kinds = append(kinds, fmt.Sprintf("%s=%s/%d", p, k, ttl))
		}
	}
	if want := "[/cont=container/0 /ttl1=ttl/3600000 /app/eph=ephemeral/0 /app/p1=/0]"; fmt.Sprint(kinds) != want {
		t.Errorf("%s: kinds %v, want %s", from, kinds, want)
	}
}

// copyFixtures refreshes testdata/ (the fuzz and bad-input seeds) from
// this run when ZKDATA_WRITE_TESTDATA is set.
func copyFixtures(t *testing.T, d *DataDir) {
	if os.Getenv("ZKDATA_WRITE_TESTDATA") != "" {
		// Refresh testdata/: the largest snapshot and the log with the
		// most kinds of txn that stay small, padding trimmed.
		os.MkdirAll("testdata", 0o755)
		var snap, log []byte
		for _, s := range d.Snapshots {
			if b, _ := os.ReadFile(s.Path); len(b) < 4096 && len(b) > len(snap) {
				snap = b
			}
		}
		best := 0
		for _, l := range d.Logs {
			b, _ := os.ReadFile(l.Path)
			if b = trimZeros(b); len(b) >= 8192 {
				continue
			}
			types := map[int32]bool{}
			r := NewLogReaderFiles([]LogFile{l}, 0)
			for {
				e, err := r.Next()
				if err != nil {
					break
				}
				types[e.Header.Type] = true
			}
			r.Close()
			if len(types) > best {
				best, log = len(types), b
			}
		}
		os.WriteFile("testdata/snapshot.seed", snap, 0o644)
		os.WriteFile("testdata/log.seed", log, 0o644)
	}
}

func trimZeros(b []byte) []byte {
	i := len(b)
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return b[:i]
}

// TestRealZooKeeperCompressedSnapshots reads the .gz and .snappy snapshots
// ZooKeeper writes with zookeeper.snapshot.compression.method.
func TestRealZooKeeperCompressedSnapshots(t *testing.T) {
	for _, method := range []string{"gz", "snappy"} {
		t.Run(method, func(t *testing.T) {
			start := time.Now()
			srv := startZooKeeper(t, "-Dzookeeper.snapshot.compression.method="+method)
			a, live := exercise(t, srv.addr)
			srv.stop(t)
			go a.Close()
			d, err := OpenDataDir(srv.dataDir, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range d.Snapshots {
				if s.Compression != method || !strings.HasSuffix(s.Path, "."+method) {
					t.Fatalf("snapshot %s, want .%s", s.Path, method)
				}
			}
			for _, snap := range []SnapFile{d.Snapshots[0], d.Snapshots[len(d.Snapshots)-1]} {
				tree, _, err := LoadTreeFrom(d, &snap)
				if err != nil {
					t.Fatal(err)
				}
				compareTree(t, filepath.Base(snap.Path), tree, live)
			}
			t.Logf("%d %s snapshots, %d logs, %v", len(d.Snapshots), method, len(d.Logs), time.Since(start).Round(time.Millisecond))
		})
	}
}
