package compattests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/migrate"
	"github.com/zkbridge/zkbridge/server"
)

// migrateZnodes is the bulk size of TestMigrate: reduced in `make test`,
// ZKBRIDGE_MIGRATE_ZNODES=100000 (make migrate-bench) for the full run.
func migrateZnodes() int {
	if n, err := strconv.Atoi(os.Getenv("ZKBRIDGE_MIGRATE_ZNODES")); err == nil && n > 0 {
		return n
	}
	return 5000
}

// flipDialer dials ZooKeeper until flipped, then the zkbridge address: a
// client's DNS flip. Flip also drops the open connection, so the client
// reconnects (with its session id, password and lastZxidSeen) to zkbridge.
type flipDialer struct {
	mu      sync.Mutex
	to      string
	conns   []net.Conn
	flipped bool
	last    string // the address of the last connection made
}

func (d *flipDialer) lastDialed() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

func (d *flipDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	if d.flipped {
		addr = d.to
	}
	d.mu.Unlock()
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.last = addr
		d.mu.Unlock()
	}
	return c, err
}

func (d *flipDialer) flip(to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.to, d.flipped = to, true
	for _, c := range d.conns {
		c.Close()
	}
}

// watchStates records the session states a client went through.
func watchStates(events <-chan zk.Event) *sync.Map {
	var seen sync.Map
	go func() {
		for ev := range events {
			if ev.Type == zk.EventSession {
				seen.Store(ev.State, true)
			}
		}
	}()
	return &seen
}

func mustConnect(t *testing.T, hosts []string) *zk.Conn {
	t.Helper()
	c, err := migrate.Dial(hosts, []string{"digest:" + SuperCredentials}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadMix fills ZooKeeper with what a migration must carry: deep trees,
// bulk znodes, a sequential counter mid-way, ACLs of every scheme,
// containers, TTL nodes, quota nodes, ~1 MB values; the ephemerals are the
// caller's (live sessions).
func loadMix(t *testing.T, c *zk.Conn, bulk int) {
	t.Helper()
	open := zk.WorldACL(zk.PermAll)
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create("/app", []byte("root of app"), 0, open))
	p := "/app"
	for i := 0; i < 10; i++ { // deep
		p += fmt.Sprintf("/d%d", i)
		must(c.Create(p, []byte(p), 0, open))
	}
	must(c.Create("/members", nil, 0, open))
	must(c.Create("/seq", nil, 0, open))
	for i := 0; i < 7; i++ {
		must(c.Create("/seq/job-", []byte{byte(i)}, zk.FlagSequence, open))
	}
	for _, s := range []string{"0000000001", "0000000003", "0000000005"} {
		if err := c.Delete("/seq/job-"+s, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Set("/app/d0", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	// ACLs of every scheme ZooKeeper ships without extra configuration.
	must(c.Create("/acl", nil, 0, open))
	must(c.Create("/acl/digest", []byte("d"), 0, zk.DigestACL(zk.PermRead|zk.PermWrite, "user", "pw")))
	must(c.Create("/acl/ip", []byte("i"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, {Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"}}))
	must(c.Create("/acl/auth", []byte("a"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth", ID: ""}}))
	must(c.Create("/acl/world-read", []byte("w"), 0, zk.WorldACL(zk.PermRead)))
	if _, err := c.SetACL("/acl/ip", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}, -1); err != nil {
		t.Fatal(err)
	}
	// A container with a child (an empty one is reaped) and a TTL node.
	must(c.CreateContainer("/ctr", nil, zk.FlagContainer, open))
	must(c.Create("/ctr/lock-1", nil, 0, open))
	must(c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour))
	// Quota: zkCli's setquota -n 100 /app writes these nodes.
	must(c.Create("/zookeeper/quota/app", nil, 0, open))
	must(c.Create("/zookeeper/quota/app/zookeeper_limits", []byte("count=100,bytes=-1"), 0, open))
	must(c.Create("/zookeeper/quota/app/zookeeper_stats", []byte("count=0,bytes=0"), 0, open))
	// Large values.
	big := make([]byte, 1000_000)
	for i := range big {
		big[i] = byte(i)
	}
	must(c.Create("/big", nil, 0, open))
	for i := 0; i < 3; i++ {
		must(c.Create(fmt.Sprintf("/big/v%d", i), big, 0, open))
	}
	// Bulk: groups of 500 in multi creates.
	must(c.Create("/bulk", nil, 0, open))
	for g := 0; g*500 < bulk; g++ {
		gp := fmt.Sprintf("/bulk/g%04d", g)
		must(c.Create(gp, nil, 0, open))
		var ops []any
		for i := 0; i < 500 && g*500+i < bulk; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/n%04d", gp, i), Data: []byte("value-" + strconv.Itoa(i)), Acl: open})
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatalf("bulk multi %s: %v", gp, err)
		}
	}
}

// transcript runs the same script on a server: ACLs and stats, the next
// sequential name, a compare-and-set; its output must be equal on ZooKeeper and zkbridge.
func transcript(t *testing.T, c *zk.Conn, tag string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{"/", "/app", "/app/d0", "/seq", "/acl/digest", "/acl/ip", "/acl/auth", "/ctr", "/ttl", "/big/v1", "/bulk/g0000/n0001", "/zookeeper/quota/app/zookeeper_limits", "/zookeeper/quota/app/zookeeper_stats"} {
		acl, st, err := c.GetACL(p)
		fmt.Fprintf(&b, "%s acl=%v err=%v czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d v=%d cv=%d av=%d owner=%#x len=%d kids=%d\n",
			p, acl, err, st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
	}
	// The next sequential name (the new node's zxids are each system's own).
	name, err := c.Create("/seq/job-", []byte(tag), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	fmt.Fprintf(&b, "create seq: %s %v\n", strings.TrimPrefix(name, "/seq/"), err)
	// Compare-and-set at the migrated version.
	_, err = c.Set("/app/d0", []byte("cas"), 1)
	fmt.Fprintf(&b, "cas at version 1: %v\n", err)
	return b.String()
}

// zkbridgeNative starts a 3-node zkbridge cluster with native APIs.
func startMigrationCluster(t *testing.T) *ZkbridgeCluster {
	t.Helper()
	zc, err := StartZkbridgeCluster(t.TempDir(), 3, func(c *server.Config) { c.NativeAddr = "127.0.0.1:0" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Stop)
	return zc
}

// TestMigrate drives every migration path against a real 3-node
// ZooKeeper 3.8: export → import → validate and equal transcripts, a
// session that moves with its ephemeral, a live migration under load, a
// convert of the data directory ZooKeeper wrote, and bad input.
func TestMigrate(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper")
	}
	ens, err := StartZooKeeperEnsemble(3)
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer ens.Stop()
	zc := startMigrationCluster(t)
	target := zc.Addrs[0]
	native := zc.nodes[1].NativeAddr() // any node: a follower here
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	src := mustConnect(t, ens.Addrs)
	defer src.Close()
	bulk := migrateZnodes()
	start := time.Now()
	loadMix(t, src, bulk)
	t.Logf("loaded ZooKeeper with %d bulk znodes in %s", bulk, time.Since(start))

	// A live session with an ephemeral, connected through a dialer that
	// flips to zkbridge later.
	flip := &flipDialer{}
	member, memberEvents, err := zk.Connect(ens.Addrs[:1], 40*time.Second, zk.WithDialer(flip.dial), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	memberStates := watchStates(memberEvents)
	if _, err := member.Create("/members/m1", []byte("host:1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	// A kazoo client does the same from Python: it leaves ZooKeeper with
	// its session open, to come back to zkbridge after the import.
	kazooScript := filepath.Join(RepoRoot(), "compat-tests", "clients", "kazoo_migrate.py")
	requireTool(t, python3Path)
	kazoo := exec.Command(python3Path, kazooScript, "start", strings.Join(ens.Addrs, ","))
	kazooIn, _ := kazoo.StdinPipe()
	kazooOut, _ := kazoo.StdoutPipe()
	kazoo.Stderr = os.Stderr
	if err := kazoo.Start(); err != nil {
		t.Fatalf("kazoo start: %v", err)
	}
	defer func() { kazooIn.Close(); _ = kazoo.Wait() }()
	kz := make([]byte, 200)
	n, _ := io.ReadAtLeast(kazooOut, kz, 10)
	kazooSession := strings.Fields(string(kz[:n]))
	if len(kazooSession) != 2 {
		t.Fatalf("kazoo start printed %q", kz[:n])
	}

	// Export and import.
	file := filepath.Join(t.TempDir(), "zk.jsonl.gz")
	o := migrate.ExportOptions{Hosts: ens.Addrs, Path: "/", Auth: []string{"digest:" + SuperCredentials}, Timeout: 30 * time.Second, DefaultSessionTimeout: 30000}
	start = time.Now()
	end, err := migrate.ExportToFile(ctx, o, file)
	if err != nil {
		t.Fatal(err)
	}
	exportTook := time.Since(start)
	tgt, err := migrate.DialTarget(native)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	start = time.Now()
	stats, err := migrate.ImportFile(ctx, tgt, file, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("export: %d znodes, %d sessions in %s; import: %d znodes in %d batches in %s (%.0f znodes/s)",
		end.Nodes, end.Sessions, exportTook, stats.Nodes, stats.Batches, took, float64(stats.Nodes)/took.Seconds())
	if stats.LastZxid < migrate.NextZxidBase(end.LastZxid) {
		t.Fatalf("target's last zxid %#x is not above the source's epoch (last %#x)", stats.LastZxid, end.LastZxid)
	}
	dst := mustConnect(t, []string{target})
	defer dst.Close()
	// The member's session moves at once (an imported session must be
	// resumed within its timeout): its client reconnects to zkbridge with
	// its ZooKeeper session id and password and keeps its ephemeral. Its
	// ZooKeeper session lives on until that timeout, while validate runs.
	sid := member.SessionID()
	_, _, memberWatch, err := member.ChildrenW("/members") // replayed by SetWatches after the move
	if err != nil {
		t.Fatal(err)
	}
	flip.flip(target)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, st, err := member.Get("/members/m1")
		if err == nil && st.EphemeralOwner == sid && member.SessionID() == sid && flip.lastDialed() == target && member.State() == zk.StateHasSession {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member did not resume its session on zkbridge: %v (dialed %s)", err, flip.lastDialed())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, expired := memberStates.Load(zk.StateExpired); expired {
		t.Fatal("the member's session expired on the move")
	}

	validate := func(a, b *zk.Conn, root string, exclude ...string) {
		t.Helper()
		res, err := migrate.Validate(ctx, a, b, root, 10, 32, exclude...)
		if err != nil {
			t.Fatalf("validate %s: %v", root, err)
		}
		if res.Count != 0 {
			t.Fatalf("validate %s: %d differences over %d znodes: %v", root, res.Count, res.Nodes, res.First)
		}
	}
	kazooIn.Close() // kazoo leaves ZooKeeper, its session open there
	_ = kazoo.Wait()
	if out, err := exec.Command(python3Path, kazooScript, "resume", target, kazooSession[0], kazooSession[1]).CombinedOutput(); err != nil {
		t.Fatalf("kazoo resume on zkbridge: %v\n%s", err, out)
	} else {
		t.Logf("kazoo: %s", strings.TrimSpace(string(out)))
	}
	// The moved sessions' ephemerals first: their ZooKeeper sessions,
	// left behind, expire there after their timeout; then the rest.
	validate(src, dst, "/members")
	validate(src, dst, "/", "/members")
	// The watch the member set on ZooKeeper fires on zkbridge.
	if _, err := dst.Create("/members/trigger", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-memberWatch:
		if ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/members" {
			t.Fatalf("the member's watch after the move: %+v", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the member's children watch, set on ZooKeeper, did not fire on zkbridge")
	}

	// The same script on both: equal transcripts.
	zkT, zbT := transcript(t, src, "x"), transcript(t, dst, "x")
	if zkT != zbT {
		t.Fatalf("transcripts differ:\nZooKeeper:\n%s\nzkbridge:\n%s", zkT, zbT)
	}
	if !strings.Contains(zkT, "job-0000000007") {
		t.Fatalf("the next sequential name is not 7:\n%s", zkT)
	}

	// Importing again into the non-empty target is refused, and a
	// truncated export is refused before anything is sent.
	if _, err := migrate.ImportFile(ctx, tgt, file, false, nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("import into a non-empty target: %v", err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	plain := filepath.Join(t.TempDir(), "plain.jsonl")
	if _, err := migrate.ExportToFile(ctx, migrate.ExportOptions{Hosts: ens.Addrs, Path: "/seq", Auth: o.Auth, Timeout: o.Timeout, DefaultSessionTimeout: 30000}, plain); err != nil {
		t.Fatal(err)
	}
	whole, _ := os.ReadFile(plain)
	_ = os.WriteFile(cut, whole[:len(whole)-20], 0o644)
	if _, err := migrate.ImportFile(ctx, tgt, cut, true, nil); !errors.Is(err, migrate.ErrTruncated) || !strings.Contains(err.Error(), "nothing was imported") {
		t.Fatalf("import of a truncated export: %v", err)
	}
	// An unreachable source is a clear error.
	free, _ := FreePort()
	if _, err := migrate.ExportToFile(ctx, migrate.ExportOptions{Hosts: []string{fmt.Sprintf("127.0.0.1:%d", free)}, Path: "/", Timeout: 2 * time.Second}, filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "no server answered") {
		t.Fatalf("export from an unreachable source: %v", err)
	}

	liveUnderLoad(t, ctx, ens, zc, tgt, src, dst)

	liveCommand(t, ens, zc, src, dst)

	convertDataDir(t, ctx, ens, dst)
}

// liveCommand runs `zkbridge migrate live` as an operator's script would:
// with stdin closed it ends by itself once quiet (exit 0); under writes
// that never stop, SIGINT makes it run the final pass and exit within 30 s.
func liveCommand(t *testing.T, ens *Ensemble, zc *ZkbridgeCluster, src, dst *zk.Conn) {
	bin := zkbridgeBinary(t)
	args := func(path string) []string {
		return []string{"migrate", "live", "--from", strings.Join(ens.Addrs, ","), "--to", zc.Addrs[0],
			"--native", zc.nodes[0].NativeAddr(), "--path", path, "--auth", "digest:" + SuperCredentials, "--json", "--pause", "100ms"}
	}
	for _, p := range []string{"/quiet", "/quiet/a", "/busy"} {
		if _, err := src.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	quiet := exec.Command(bin, args("/quiet")...)
	done := make(chan error, 1)
	var out strings.Builder
	quiet.Stdout, quiet.Stderr = &out, &out
	if err := quiet.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- quiet.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("migrate live with stdin closed: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		_ = quiet.Process.Kill()
		t.Fatalf("migrate live with stdin closed did not end by itself:\n%s", out.String())
	}
	if data, _, err := dst.Get("/quiet/a"); err != nil || string(data) != "/quiet/a" {
		t.Fatalf("/quiet/a after migrate live: %q %v", data, err)
	}
	// Again: refused without --merge (the target has /quiet), a resume with it.
	if _, err := src.Set("/quiet/a", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, args("/quiet")...).CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Fatalf("migrate live over a non-empty target: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, append(args("/quiet"), "--merge")...).CombinedOutput(); err != nil {
		t.Fatalf("migrate live --merge: %v\n%s", err, out)
	}
	if data, _, err := dst.Get("/quiet/a"); err != nil || string(data) != "v2" {
		t.Fatalf("/quiet/a after migrate live --merge: %q %v", data, err)
	}

	// A writer that never stops: SIGINT, then the final pass and the end.
	stop := make(chan struct{})
	var wrote sync.WaitGroup
	wrote.Add(1)
	go func() {
		defer wrote.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = src.Set("/busy", []byte(strconv.Itoa(i)), -1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() { close(stop); wrote.Wait() }()
	busy := exec.Command(bin, args("/busy")...)
	pr, pw, _ := os.Pipe()
	busy.Stdout, busy.Stderr = pw, pw
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	lines := make(chan string, 100)
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				lines <- string(b[:n])
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var log strings.Builder
	for !strings.Contains(log.String(), `"pass":2`) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("migrate live ended before its second pass:\n%s", log.String())
			}
			log.WriteString(l)
		case <-time.After(2 * time.Minute):
			t.Fatalf("no second pass within 2 minutes:\n%s", log.String())
		}
	}
	_ = busy.Process.Signal(os.Interrupt)
	sent := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- busy.Wait() }()
	select {
	case err := <-errc:
		for l := range lines {
			log.WriteString(l)
		}
		if err != nil || !strings.Contains(log.String(), `"final":true`) {
			t.Fatalf("migrate live after SIGINT: %v\n%s", err, log.String())
		}
		t.Logf("migrate live ended %s after SIGINT", time.Since(sent).Round(time.Millisecond))
	case <-time.After(35 * time.Second):
		_ = busy.Process.Kill()
		t.Fatalf("migrate live still running 35 s after SIGINT:\n%s", log.String())
	}
}

// liveUnderLoad: a writer and a watcher keep running on ZooKeeper while
// `live` imports /live and catches up; after the writer stops, the final
// pass leaves no acknowledged write behind, and the writer's session
// reconnects to zkbridge with its ephemeral.
func liveUnderLoad(t *testing.T, ctx context.Context, ens *Ensemble, zc *ZkbridgeCluster, tgt *migrate.Target, src, dst *zk.Conn) {
	if _, err := src.Create("/live", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	flip := &flipDialer{}
	writer, writerEvents, err := zk.Connect(ens.Addrs, 10*time.Second, zk.WithDialer(flip.dial), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	writerStates := watchStates(writerEvents)
	if _, err := writer.Create("/live/writer", []byte("alive"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	watcher := mustConnect(t, ens.Addrs)
	defer watcher.Close()
	var acked []string
	var ackMu sync.Mutex
	stopWriting := make(chan struct{})
	var writes sync.WaitGroup
	var watched atomic.Int64
	writes.Add(2)
	go func() {
		defer writes.Done()
		for i := 0; ; i++ {
			select {
			case <-stopWriting:
				return
			default:
			}
			p, err := writer.Create("/live/w-", []byte(strconv.Itoa(i)), zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err == nil {
				ackMu.Lock()
				acked = append(acked, p)
				ackMu.Unlock()
				if i%10 == 0 {
					_, _ = writer.Set("/live", []byte(strconv.Itoa(i)), -1)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	go func() {
		defer writes.Done()
		for {
			_, _, ch, err := watcher.ChildrenW("/live")
			if err != nil {
				return
			}
			select {
			case <-ch:
				watched.Add(1)
			case <-stopWriting:
				return
			}
		}
	}()
	final := make(chan struct{})
	var passes atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := migrate.Live(ctx, migrate.LiveOptions{
			Export: migrate.ExportOptions{Hosts: ens.Addrs, Path: "/live", Auth: []string{"digest:" + SuperCredentials}, Timeout: 30 * time.Second, DefaultSessionTimeout: 30000},
			Target: tgt, TargetZK: dst, Pause: 200 * time.Millisecond, Final: final, Fence: true,
			Pass: func(p migrate.PassReport) { passes.Add(1) },
		})
		done <- err
	}()
	// Let a few catch-up passes run under load, then the operator stops
	// the writers and asks for the final pass.
	deadline := time.Now().Add(2 * time.Minute)
	for passes.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no catch-up passes within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stopWriting)
	writes.Wait()
	close(final)
	if err := <-done; err != nil {
		t.Fatalf("live: %v", err)
	}
	ackMu.Lock()
	defer ackMu.Unlock()
	if len(acked) == 0 || watched.Load() == 0 {
		t.Fatalf("the load did not run: %d acknowledged writes, %d watch events", len(acked), watched.Load())
	}
	for _, p := range acked {
		if ok, _, err := dst.Exists(p); err != nil || !ok {
			t.Fatalf("acknowledged write %s missing on zkbridge after the final pass (%v)", p, err)
		}
	}
	// The fence left ZooKeeper's /live read-only, and zkbridge got the
	// ACLs from before it: validate finds those and nothing else.
	plainClient, err := migrate.Dial(ens.Addrs, nil, 30*time.Second) // not the super user
	if err != nil {
		t.Fatal(err)
	}
	defer plainClient.Close()
	if _, err := plainClient.Create("/live/late", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a write to the fenced /live on ZooKeeper: %v", err)
	}
	if acl, _, err := dst.GetACL("/live"); err != nil || len(acl) != 1 || acl[0].Perms != zk.PermAll {
		t.Fatalf("/live's ACL on zkbridge: %v %v", acl, err)
	}
	res, err := migrate.Validate(ctx, src, dst, "/live", 1000, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.First {
		if d.Field != "acl" && d.Field != "aversion" {
			t.Fatalf("validate /live after the final pass: %v", d)
		}
	}
	if res.Count == 0 || res.Count > int64(len(res.First)) {
		t.Fatalf("validate /live after the fence: %d differences", res.Count)
	}
	t.Logf("live: %d acknowledged writes, %d watch events, %d passes, all on zkbridge", len(acked), watched.Load(), passes.Load())
	// The writer moves: same session, ephemeral kept, no refusal.
	sid := writer.SessionID()
	flip.flip(zc.Addrs[2])
	deadline = time.Now().Add(30 * time.Second)
	for {
		_, st, err := writer.Get("/live/writer")
		if err == nil && st.EphemeralOwner == sid && flip.lastDialed() == zc.Addrs[2] && writer.State() == zk.StateHasSession {
			if _, err := writer.Create("/live/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("a write after the move: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer did not resume its session on zkbridge: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, expired := writerStates.Load(zk.StateExpired); expired {
		t.Fatal("the writer's session expired on the move")
	}
	// Symmetric on ZooKeeper, so both trees stay equal for convert.
	if _, err := src.Create("/live/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// convertDataDir stops ZooKeeper (kill -9, as a crash leaves it) and
// converts the leader's data directory into a fresh zkbridge, which must
// equal the imported one; then bad data directories.
func convertDataDir(t *testing.T, ctx context.Context, ens *Ensemble, imported *zk.Conn) {
	leader := -1
	for i, a := range ens.Addrs {
		if nodeMode(a) == "leader" {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no ZooKeeper leader")
	}
	for i := range ens.Addrs {
		if err := ens.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(ens.dir, strconv.Itoa(leader+1), "data", "version-2")
	deadline := time.Now().Add(10 * time.Second)
	for { // wait until the killed JVMs let go of their files
		if _, err := os.Stat(dir); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	one, err := StartZkbridgeCluster(t.TempDir(), 1, func(c *server.Config) { c.NativeAddr = "127.0.0.1:0" })
	if err != nil {
		t.Fatal(err)
	}
	defer one.Stop()
	tgt, err := migrate.DialTarget(one.nodes[0].NativeAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	im, err := tgt.NewImporter(ctx, migrate.ImporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := migrate.Convert(dir, dir, "/", func(h migrate.Header) error { return tgt.Begin(ctx, "/", false, h.LastZxid) }, im)
	if err != nil {
		t.Fatalf("convert %s: %v", dir, err)
	}
	if _, err := im.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tgt.Finish(ctx, res.Zxid); err != nil {
		t.Fatal(err)
	}
	t.Logf("convert: %d znodes, %d sessions from %s up to %#x in %s (tails %v)", res.Nodes, res.Sessions, res.Snapshot, res.Zxid, time.Since(start), res.Tails)
	if !res.DigestVerified {
		t.Fatal("convert did not verify the tree digest ZooKeeper logged")
	}
	conv := mustConnect(t, one.Addrs)
	defer conv.Close()
	// Every subtree no client wrote to after the import (the transcript's
	// writes and /live/after carry each system's own zxids).
	// (/members: the moved sessions expired on ZooKeeper after they left.)
	for _, p := range []string{"/app/d0/d1", "/acl", "/ctr", "/ttl", "/big", "/bulk", "/zookeeper/quota"} {
		r, err := migrate.Validate(ctx, imported, conv, p, 10, 32)
		if err != nil || r.Count != 0 {
			t.Fatalf("convert vs import, %s: %+v %v", p, r, err)
		}
	}
	// Bad data directories: a truncated snapshot, a wrong magic.
	bad := t.TempDir()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.HasPrefix(e.Name(), "snapshot.") {
			b = b[:len(b)/2]
		}
		_ = os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644)
	}
	nop := func(migrate.Header) error { return nil }
	if _, err := migrate.Convert(bad, bad, "/", nop, discard{}); err == nil {
		t.Fatal("convert of a truncated snapshot succeeded")
	} else {
		t.Logf("truncated snapshot: %v", err)
	}
	// A damaged newest snapshot: convert falls back to the older one and
	// replays more of the logs, as ZooKeeper does, and says so.
	fallback := t.TempDir()
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		_ = os.WriteFile(filepath.Join(fallback, e.Name()), b, 0o644)
		if strings.HasPrefix(e.Name(), "snapshot.") {
			_ = os.WriteFile(filepath.Join(fallback, fmt.Sprintf("snapshot.%x", res.Zxid)), b[:len(b)-10], 0o644)
		}
	}
	fb, err := migrate.Convert(fallback, fallback, "/", nop, discard{})
	if err != nil || len(fb.Skipped) != 1 || fb.Nodes != res.Nodes || !fb.DigestVerified {
		t.Fatalf("convert past a damaged newest snapshot: %+v %v", fb, err)
	}
	// A log of another ensemble after this one's: an error naming it.
	foreign := t.TempDir()
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		_ = os.WriteFile(filepath.Join(foreign, e.Name()), b, 0o644)
	}
	seed, err := os.ReadFile(filepath.Join(RepoRoot(), "migrate", "zkdata", "testdata", "log.seed"))
	if err != nil {
		t.Fatal(err)
	}
	foreignLog := fmt.Sprintf("log.%x", res.Zxid+1)
	_ = os.WriteFile(filepath.Join(foreign, foreignLog), seed, 0o644)
	if _, err := migrate.Convert(foreign, foreign, "/", nop, discard{}); err == nil || !strings.Contains(err.Error(), foreignLog) {
		t.Fatalf("convert with another ensemble's log: %v", err)
	} else {
		t.Logf("another ensemble's log: %v", err)
	}
	magic := t.TempDir()
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.HasPrefix(e.Name(), "log.") {
			copy(b, "XXXX")
		}
		_ = os.WriteFile(filepath.Join(magic, e.Name()), b, 0o644)
	}
	if _, err := migrate.Convert(magic, magic, "/", nop, discard{}); err == nil || !strings.Contains(err.Error(), "log.") {
		t.Fatalf("convert with a log of the wrong magic: %v", err)
	}
}

type discard struct{}

func (discard) Session(migrate.Session) error { return nil }
func (discard) Node(*migrate.Node) error      { return nil }
