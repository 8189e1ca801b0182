package compattests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Real clients driven end to end against a real ZooKeeper and zkbridge.
// Every TestClient… function shares one pair of servers (started on first
// use, stopped by TestMain); each test works under its own root znode, so
// the tests do not see each other's data.

const installHint = "run scripts/install-zookeeper.sh"

// Client programs, as installed by scripts/install-zookeeper.sh. The
// python3 first on PATH may be another interpreter without kazoo.
const (
	zkCliPath   = "/usr/share/zookeeper/bin/zkCli.sh"
	cliMtPath   = "/usr/lib/zookeeper/bin/cli_mt"
	python3Path = "/usr/bin/python3"
)

var clientServers struct {
	once sync.Once
	zk   *ZooKeeper
	zb   *Zkbridge
	dir  string
	err  error
}

// servers returns the shared ZooKeeper's and zkbridge's addresses.
func servers(t *testing.T) (zkAddr, zbAddr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("client tests need a real ZooKeeper; skipped in -short mode")
	}
	cs := &clientServers
	cs.once.Do(func() {
		if cs.zk, cs.err = StartZooKeeper(); cs.err != nil {
			cs.err = fmt.Errorf("start ZooKeeper (%s): %w", installHint, cs.err)
			return
		}
		if cs.dir, cs.err = os.MkdirTemp("", "zkbridge-clients-"); cs.err != nil {
			return
		}
		if cs.zb, cs.err = StartZkbridge(cs.dir); cs.err != nil {
			cs.err = fmt.Errorf("start zkbridge: %w", cs.err)
		}
	})
	if cs.err != nil {
		t.Fatal(cs.err)
	}
	return cs.zk.Addr, cs.zb.Addr
}

func stopClientServers() {
	cs := &clientServers
	if cs.zb != nil {
		cs.zb.Stop()
	}
	if cs.zk != nil {
		cs.zk.Stop()
	}
	if cs.dir != "" {
		os.RemoveAll(cs.dir)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopClientServers()
	removeZkbridgeBinary()
	os.Exit(code)
}

// requireTool fails the test (never skips it) when a client is missing.
func requireTool(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: %s", path, installHint)
	}
}

// both runs fn against ZooKeeper and zkbridge at once and returns their
// results (clients are slow to start, so the two runs overlap).
func both[T any](zkAddr, zbAddr string, fn func(addr string) T) (zk, zb T) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); zk = fn(zkAddr) }()
	go func() { defer wg.Done(); zb = fn(zbAddr) }()
	wg.Wait()
	return zk, zb
}

// ---- zkCli.sh ----

// zkCliMarker is what `printwatches` (without argument) prints. The test
// runs it after every command to cut zkCli's output into one piece per
// command: zkCli does not echo commands when stdin is not a terminal.
const zkCliMarker = "printwatches is on\n"

var (
	zkCliLogLine = regexp.MustCompile(`^(SLF4J:|log4j:|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)`)
	zkCliStat    = regexp.MustCompile(`^(cZxid|mZxid|pZxid|ctime|mtime|ephemeralOwner) = (.*)$`)
)

// zkCliRun feeds cmds to one zkCli.sh process connected to addr and
// returns its combined output (zkCli writes results to stdout and errors
// and "Created …" to stderr; one pipe keeps them in order).
func zkCliRun(addr string, cmds []string) (string, error) {
	var in strings.Builder
	for _, c := range cmds {
		in.WriteString(c + "\nprintwatches\n")
	}
	in.WriteString("quit\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	// A quicker JVM start: no C2 compiler for a short-lived client.
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -Xss1m")
	cmd.Stdin = strings.NewReader(in.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// zkCliNormalise turns zkCli's output into "> command" lines each followed
// by its output, then the watch events in arrival order. Events are moved
// out of the command output because zkCli prints them from another thread,
// racing with the command that triggered them. Zxids, session ids and
// times are replaced like the transcripts do; the server address by ADDR.
func zkCliNormalise(out, addr string, cmds []string, start time.Time) []string {
	tr := NewTranscript()
	tr.start = start
	pieces := strings.Split(out, zkCliMarker)
	var lines, events []string
	for i, piece := range pieces {
		// The first piece also holds zkCli's greeting; the last is quit's.
		if i < len(cmds) {
			lines = append(lines, "> "+cmds[i])
		} else {
			lines = append(lines, "> quit")
		}
		for _, l := range strings.Split(piece, "\n") {
			l = strings.TrimRight(l, "\r ")
			switch {
			case l == "" || l == "WATCHER::" || zkCliLogLine.MatchString(l):
				continue
			case l == "WatchedEvent state:Closed type:None path:null":
				// zkCli's event thread prints this as quit closes the client,
				// racing the JVM's exit: printed or not by chance, against
				// either server.
				continue
			case strings.HasPrefix(l, "WatchedEvent "):
				events = append(events, "event: "+l)
				continue
			}
			l = strings.ReplaceAll(l, addr, "ADDR")
			if m := zkCliStat.FindStringSubmatch(l); m != nil {
				l = m[1] + " = " + zkCliStatValue(tr, m[1], m[2])
			}
			lines = append(lines, "  "+l)
		}
	}
	return append(lines, events...)
}

// zkCliStatValue normalises one stat field as printed by zkCli.
func zkCliStatValue(tr *Transcript, field, v string) string {
	switch field {
	case "ctime", "mtime":
		ts, err := time.Parse("Mon Jan 02 15:04:05 MST 2006", v)
		if err != nil {
			return v
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.timeLocked(ts.UnixMilli())
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
	if err != nil {
		return v
	}
	if field != "ephemeralOwner" {
		return tr.Zxid(int64(n))
	}
	// Container and TTL nodes carry a marker, not a session: keep it.
	if hi := n >> 56; hi == 0x80 || hi == 0xff {
		return v
	}
	return tr.Session(int64(n))
}

// clientScript reads a script under clients/: one command a line, blank
// lines and '#' comments skipped.
func clientScript(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "compat-tests", "clients", name))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// TestClientZkCli runs clients/zkcli.txt in one zkCli.sh session against
// each server and requires the same normalised output.
func TestClientZkCli(t *testing.T) { zkCliCompare(t, "zkcli.txt") }

// TestClientZkCliQuota runs clients/zkcli_quota.txt: setquota, listquota
// and delquota, whose output shows the zookeeper_stats node the server
// keeps up to date under /zookeeper/quota.
func TestClientZkCliQuota(t *testing.T) { zkCliCompare(t, "zkcli_quota.txt") }

// zkCliCompare runs a zkCli script in one session against each server and
// requires the same normalised output.
func zkCliCompare(t *testing.T, script string) {
	zkAddr, zbAddr := servers(t)
	requireTool(t, zkCliPath)
	cmds := clientScript(t, script)
	type result struct {
		lines []string
		raw   string
		err   error
	}
	start := time.Now()
	zk, zb := both(zkAddr, zbAddr, func(addr string) result {
		out, err := zkCliRun(addr, cmds)
		return result{zkCliNormalise(out, addr, cmds, start), out, err}
	})
	t.Logf("zkCli %s: %d commands in %v", script, len(cmds), time.Since(start).Round(time.Millisecond))
	if zk.err != nil {
		t.Fatalf("zkCli against ZooKeeper: %v\n%s", zk.err, zk.raw)
	}
	if zb.err != nil {
		t.Fatalf("zkCli against zkbridge: %v\n%s", zb.err, zb.raw)
	}
	for name, r := range map[string]result{"ZooKeeper": zk, "zkbridge": zb} {
		if n := strings.Count(r.raw, zkCliMarker); n != len(cmds) {
			t.Fatalf("zkCli against %s ran %d of %d commands:\n%s", name, n, len(cmds), r.raw)
		}
	}
	if testing.Verbose() {
		t.Logf("normalised output (ZooKeeper):\n%s", strings.Join(zk.lines, "\n"))
	}
	if d := diff(zk.lines, zb.lines); d != "" {
		t.Fatalf("zkCli output differs (ZooKeeper vs zkbridge):\n%s", d)
	}
}

// ---- kazoo ----

// TestClientKazoo runs clients/kazoo_recipes.py (Lock, Election, Counter,
// Queue, LockingQueue, Barrier, DoubleBarrier, Party, Semaphore, TreeCache,
// DataWatch, ChildrenWatch, transactions) against each server: the script
// asserts on its own and prints one line per recipe, and both servers'
// lines must be the same.
func TestClientKazoo(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	requireTool(t, python3Path)
	if out, err := exec.Command(python3Path, "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Fatalf("kazoo is not importable by %s (%v: %s): %s", python3Path, err, out, installHint)
	}
	script := filepath.Join(RepoRoot(), "compat-tests", "clients", "kazoo_recipes.py")
	type result struct {
		out string
		err error
	}
	start := time.Now()
	zk, zb := both(zkAddr, zbAddr, func(addr string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, python3Path, script, addr, "/kazoo").CombinedOutput()
		return result{string(out), err}
	})
	t.Logf("kazoo recipes: %v", time.Since(start).Round(time.Millisecond))
	for name, r := range map[string]result{"ZooKeeper": zk, "zkbridge": zb} {
		if r.err != nil || !strings.HasSuffix(r.out, "OK\n") {
			t.Errorf("kazoo recipes against %s failed (%v):\n%s", name, r.err, r.out)
		}
	}
	if t.Failed() {
		return
	}
	if testing.Verbose() {
		t.Logf("kazoo output (ZooKeeper):\n%s", zk.out)
	}
	if d := diff(strings.Split(zk.out, "\n"), strings.Split(zb.out, "\n")); d != "" {
		t.Fatalf("kazoo recipes observed different results (ZooKeeper vs zkbridge):\n%s", d)
	}
}

// ---- the C client ----

var (
	cliMtDropLine = regexp.MustCompile(`^(Got a new session id: |time = -?\d+ msec$|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+:\d+\(0x[0-9a-f]+\):ZOO_)`)
	cliMtTime     = regexp.MustCompile(`^(\s*[cm]time ?= ?)(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})$`)
	cliMtZxid     = regexp.MustCompile(`^(\s*[cm]zxid=)([0-9a-f]+)$`) // cli prints ids in hex
	cliMtOwner    = regexp.MustCompile(`^(\s*ephemeralOwner = )([0-9a-f]+)$`)
	cliMtChildren = regexp.MustCompile(`^/.*: rc = 0$`)
)

// cliMtRun runs one command in cli_mt's batch mode and returns what it
// printed (all of it goes to stderr).
func cliMtRun(addr, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cliMtPath, addr, "cmd:"+command).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%q did not finish in 10 s", command)
	}
	return string(out), err
}

// cliMtNormalise maps the zxids, session ids and times of cli_mt's
// output like the transcripts do, drops session-id, timing and log lines,
// and sorts the children that ls and ls2 print (ZooKeeper returns them in
// hash-set order, which the suite does not compare).
func cliMtNormalise(tr *Transcript, command, out string) []string {
	// The session event is written by the client's event thread in two
	// pieces (text, then newline) and may land inside another thread's line:
	// take it out of the raw output first, wherever it fell.
	events := strings.Count(out, cliMtConnected)
	out = strings.ReplaceAll(out, cliMtConnected, "")
	lines := []string{"> " + command}
	var children []string
	flush := func() {
		sort.Strings(children)
		lines = append(lines, children...)
		children = nil
	}
	inChildren := false
	var sessionEvents []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r ")
		if l == "" || cliMtDropLine.MatchString(l) {
			continue
		}
		// Printed by the client's event thread, racing with the command's
		// own lines, even inside one of them: listed after the output.
		if ev := cliMtSessionEvent.FindString(l); ev != "" {
			sessionEvents = append(sessionEvents, "  "+ev)
			if l = strings.TrimSpace(strings.Replace(l, ev, "", 1)); l == "" {
				continue
			}
		}
		if inChildren && strings.HasPrefix(l, "\t") && !strings.Contains(l, "=") {
			children = append(children, "  "+l)
			continue
		}
		flush()
		inChildren = strings.HasPrefix(command, "ls") && cliMtChildren.MatchString(l)
		if m := cliMtTime.FindStringSubmatch(l); m != nil {
			ts, err := time.ParseInLocation("Mon Jan _2 15:04:05 2006", m[2], time.Local)
			if err == nil {
				tr.mu.Lock()
				l = m[1] + tr.timeLocked(ts.UnixMilli())
				tr.mu.Unlock()
			}
		} else if m := cliMtZxid.FindStringSubmatch(l); m != nil {
			z, _ := strconv.ParseUint(m[2], 16, 64)
			l = m[1] + tr.Zxid(int64(z))
		} else if m := cliMtOwner.FindStringSubmatch(l); m != nil {
			s, _ := strconv.ParseUint(m[2], 16, 64)
			l = m[1] + tr.Session(int64(s))
		}
		lines = append(lines, "  "+l)
	}
	flush()
	// Three threads (main, completion, events) write one stream, and a
	// line may be split by another's write: what the server answered is
	// the characters of the command's output, not their order or breaks.
	body := []rune(strings.Join(lines[1:], ""))
	sort.Slice(body, func(i, j int) bool { return body[i] < body[j] })
	lines = append(lines[:1], "  "+strings.ReplaceAll(string(body), " ", ""))
	for i := 0; i < events; i++ {
		sessionEvents = append(sessionEvents, "  "+cliMtConnected)
	}
	return append(lines, sessionEvents...)
}

const cliMtConnected = "Watcher SESSION_EVENT state = CONNECTED_STATE"

var cliMtSessionEvent = regexp.MustCompile(`Watcher SESSION_EVENT state = [A-Z_]+`)

// TestClientCliMt runs clients/cli_mt.txt with ZooKeeper's C client, one
// command per cli_mt process, against each server and requires the same
// normalised output.
func TestClientCliMt(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	requireTool(t, cliMtPath)
	cmds := clientScript(t, "cli_mt.txt")
	type result struct {
		lines []string
		err   error
	}
	start := time.Now()
	zk, zb := both(zkAddr, zbAddr, func(addr string) result {
		tr := NewTranscript()
		tr.start = start
		var r result
		for _, c := range cmds {
			out, err := cliMtRun(addr, c)
			if err != nil {
				r.err = fmt.Errorf("cli_mt %s: %v\n%s", c, err, out)
				return r
			}
			r.lines = append(r.lines, cliMtNormalise(tr, c, out)...)
		}
		return r
	})
	t.Logf("cli_mt: %d commands in %v", len(cmds), time.Since(start).Round(time.Millisecond))
	if zk.err != nil {
		t.Fatalf("against ZooKeeper: %v", zk.err)
	}
	if zb.err != nil {
		t.Fatalf("against zkbridge: %v", zb.err)
	}
	if testing.Verbose() {
		t.Logf("normalised output (ZooKeeper):\n%s", strings.Join(zk.lines, "\n"))
	}
	if d := diff(zk.lines, zb.lines); d != "" {
		t.Fatalf("cli_mt output differs (ZooKeeper vs zkbridge):\n%s", d)
	}
}

// ---- go-zookeeper ----

// gzRecorder records what a go-zookeeper run observes, normalised.
type gzRecorder struct {
	tr    *Transcript
	lines []string
}

var gzProtected = regexp.MustCompile(`_c_[0-9a-f]{32}-`)

func (r *gzRecorder) logf(format string, args ...any) {
	l := fmt.Sprintf(format, args...)
	r.lines = append(r.lines, gzProtected.ReplaceAllString(l, "_c_GUID-"))
}

func (r *gzRecorder) stat(s *zk.Stat) string {
	if s == nil {
		return "nil"
	}
	return r.tr.Stat(&zkproto.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid})
}

func gzErr(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// event waits (bounded) for one watch event and formats it.
func (r *gzRecorder) event(what string, ch <-chan zk.Event) {
	select {
	case ev := <-ch:
		r.logf("%s: event %s %s state=%s err=%v", what, ev.Type, ev.Path, ev.State, ev.Err)
	case <-time.After(8 * time.Second):
		r.logf("%s: no event within 8 s", what)
	}
}

// noEvent checks that a watch has not fired (yet).
func (r *gzRecorder) noEvent(what string, ch <-chan zk.Event) {
	select {
	case ev := <-ch:
		r.logf("%s: unexpected event %s %s", what, ev.Type, ev.Path)
	default:
		r.logf("%s: no event", what)
	}
}

// gzDialer dials through a gate and remembers the last connection, so a
// test can cut the client's TCP connection and hold its reconnect.
type gzDialer struct {
	mu   sync.Mutex
	open chan struct{} // closed while dialing is allowed
	last net.Conn
}

func newGzDialer() *gzDialer {
	d := &gzDialer{open: make(chan struct{})}
	close(d.open)
	return d
}

func (d *gzDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	open := d.open
	d.mu.Unlock()
	select {
	case <-open:
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("dial gate stayed shut")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		d.mu.Lock()
		d.last = c
		d.mu.Unlock()
	}
	return c, err
}

// cut shuts the gate and closes the current connection.
func (d *gzDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.open = make(chan struct{})
	if d.last != nil {
		d.last.Close()
	}
}

func (d *gzDialer) reopen() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.open)
}

type gzQuiet struct{}

func (gzQuiet) Printf(string, ...any) {}

// gzStates collects a connection's session states.
type gzStates struct {
	mu     sync.Mutex
	states []zk.State
}

func (s *gzStates) add(ev zk.Event) {
	if ev.Type == zk.EventSession {
		s.mu.Lock()
		s.states = append(s.states, ev.State)
		s.mu.Unlock()
	}
}

// waitFor waits (bounded) until state st is reported after index from and
// returns the states seen since from.
func (s *gzStates) waitFor(from int, st zk.State) []zk.State {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		seen := append([]zk.State(nil), s.states[min(from, len(s.states)):]...)
		s.mu.Unlock()
		for _, x := range seen {
			if x == st {
				return seen
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (s *gzStates) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.states)
}

// goZkRun drives go-zookeeper's API against addr and returns the
// normalised observations.
func goZkRun(addr string, start time.Time) (lines []string, err error) {
	r := &gzRecorder{tr: NewTranscript()}
	r.tr.start = start
	dialer := newGzDialer()
	st1 := &gzStates{}
	c1, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(gzQuiet{}), zk.WithDialer(dialer.dial),
		zk.WithEventCallback(st1.add))
	if err != nil {
		return nil, err
	}
	defer c1.Close()
	c2, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(gzQuiet{}))
	if err != nil {
		return nil, err
	}
	defer c2.Close()
	if st1.waitFor(0, zk.StateHasSession) == nil {
		return nil, fmt.Errorf("no session with %s", addr)
	}
	open := zk.WorldACL(zk.PermAll)
	root := "/gozk"

	// Creates of every kind, and the errors creates can meet.
	for _, c := range []struct {
		path  string
		flags int32
	}{{root, 0}, {root + "/a", 0}, {root + "/seq-", zk.FlagSequence}, {root + "/seq-", zk.FlagSequence},
		{root + "/eph", zk.FlagEphemeral}, {root + "/ephseq-", zk.FlagEphemeralSequential},
		{root + "/a", 0}, {root + "/no/parent", 0}, {root + "/eph/kid", 0}, {root + "/bad/", 0}} {
		p, err := c1.Create(c.path, []byte("d"), c.flags, open)
		r.logf("create %s flags=%d: %q %s", c.path, c.flags, p, gzErr(err))
	}
	p, err := c1.CreateProtectedEphemeralSequential(root+"/lock-", []byte("p"), open)
	r.logf("create protected ephemeral sequential: %q %s", p, gzErr(err))
	p, err = c1.CreateContainer(root+"/cont", nil, zk.FlagContainer, open)
	r.logf("create container: %q %s", p, gzErr(err))
	p, err = c1.CreateTTL(root+"/ttl", nil, zk.FlagTTL, open, time.Second)
	r.logf("create ttl: %q %s", p, gzErr(err))
	// Watched at once: the reaper removes it within 1 s + 1 s.
	ok, _, ttlWatch, err := c2.ExistsW(root + "/ttl")
	r.logf("existsW ttl: %v %s", ok, gzErr(err))
	p, err = c1.CreateTTL(root+"/ttlseq-", nil, zk.FlagPersistentSequentialWithTTL, open, time.Hour)
	r.logf("create ttl sequential: %q %s", p, gzErr(err))

	// Reads, writes and their stats.
	data, s, err := c2.Get(root + "/a")
	r.logf("get a: %q %s %s", data, r.stat(s), gzErr(err))
	s, err = c2.Set(root+"/a", []byte("v1"), 0)
	r.logf("set a v0: %s %s", r.stat(s), gzErr(err))
	s, err = c2.Set(root+"/a", []byte("v2"), 0)
	r.logf("set a stale version: %s %s", r.stat(s), gzErr(err))
	ok, s, err = c2.Exists(root + "/eph")
	r.logf("exists eph: %v %s %s", ok, r.stat(s), gzErr(err))
	ok, s, err = c2.Exists(root + "/missing")
	r.logf("exists missing: %v %s %s", ok, r.stat(s), gzErr(err))
	kids, s, err := c2.Children(root)
	sort.Strings(kids)
	r.logf("children: %v %s %s", kids, r.stat(s), gzErr(err))
	_, _, err = c2.Get(root + "/missing")
	r.logf("get missing: %s", gzErr(err))
	r.logf("delete a wrong version: %s", gzErr(c2.Delete(root+"/a", 7)))
	r.logf("delete non-empty: %s", gzErr(c2.Delete(root, -1)))
	p, err = c2.Sync(root)
	r.logf("sync: %q %s", p, gzErr(err))

	// Watches and their events.
	ok, _, ew, err := c1.ExistsW(root + "/w")
	r.logf("existsW missing w: %v %s", ok, gzErr(err))
	_, err = c2.Create(root+"/w", []byte("0"), 0, open)
	r.event("create w", ew)
	_, _, dw, err := c1.GetW(root + "/w")
	r.logf("getW w: %s", gzErr(err))
	_, _, cw, err := c1.ChildrenW(root + "/w")
	r.logf("childrenW w: %s", gzErr(err))
	_, _ = c2.Set(root+"/w", []byte("1"), -1)
	r.event("set w", dw)
	r.noEvent("child watch after set w", cw)
	_, _ = c2.Create(root+"/w/k", nil, 0, open)
	r.event("create w/k", cw)
	_, _, ew, _ = c1.ExistsW(root + "/w/k")
	_, _, dw, _ = c1.GetW(root + "/w/k")
	_, _, cw, _ = c1.ChildrenW(root + "/w/k")
	r.logf("delete w/k: %s", gzErr(c2.Delete(root+"/w/k", -1)))
	r.event("delete w/k (exists)", ew)
	r.event("delete w/k (data)", dw)
	r.event("delete w/k (children)", cw)
	_, _, _, err = c1.GetW(root + "/w/k")
	r.logf("getW deleted: %s", gzErr(err))

	// Multi: one that commits and one that fails as a whole.
	res, err := c1.Multi(&zk.CreateRequest{Path: root + "/m", Data: []byte("m"), Acl: open},
		&zk.CreateRequest{Path: root + "/mseq-", Acl: open, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: root + "/m", Data: []byte("m2"), Version: 0},
		&zk.CheckVersionRequest{Path: root + "/m", Version: 1},
		&zk.DeleteRequest{Path: root + "/m", Version: 1})
	r.logf("multi: %s", gzErr(err))
	for i, x := range res {
		r.logf("  op %d: %q %s %s", i, x.String, r.stat(x.Stat), gzErr(x.Error))
	}
	res, err = c1.Multi(&zk.CreateRequest{Path: root + "/m", Acl: open},
		&zk.CheckVersionRequest{Path: root + "/a", Version: 9},
		&zk.DeleteRequest{Path: root + "/missing", Version: -1})
	r.logf("failing multi: %s", gzErr(err))
	for i, x := range res {
		r.logf("  op %d: %q %s", i, x.String, gzErr(x.Error))
	}
	ok, _, _ = c2.Exists(root + "/m")
	r.logf("failed multi left m: %v", ok)

	// ACLs and auth.
	_, err = c1.Create(root+"/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "gouser", "gopw"))
	r.logf("create digest-protected: %s", gzErr(err))
	_, _, err = c2.Get(root + "/secret")
	r.logf("get without auth: %s", gzErr(err))
	acl, s, err := c2.GetACL(root + "/secret")
	r.logf("getACL without auth: %v %s %s", acl, r.stat(s), gzErr(err))
	r.logf("addAuth: %s", gzErr(c2.AddAuth("digest", []byte("gouser:gopw"))))
	data, _, err = c2.Get(root + "/secret")
	r.logf("get with auth: %q %s", data, gzErr(err))
	acl, s, err = c2.GetACL(root + "/secret")
	r.logf("getACL with auth: %v %s %s", acl, r.stat(s), gzErr(err))
	s, err = c2.SetACL(root+"/secret", zk.WorldACL(zk.PermRead), 5)
	r.logf("setACL wrong version: %s %s", r.stat(s), gzErr(err))
	s, err = c2.SetACL(root+"/secret", zk.WorldACL(zk.PermRead|zk.PermAdmin), 0)
	r.logf("setACL: %s %s", r.stat(s), gzErr(err))
	_, err = c1.Set(root+"/secret", nil, -1)
	r.logf("set read-only: %s", gzErr(err))
	_, err = c1.Create(root+"/authacl", nil, 0, zk.AuthACL(zk.PermAll))
	r.logf("create auth ACL without auth: %s", gzErr(err))
	_, err = c2.Create(root+"/authacl", nil, 0, zk.AuthACL(zk.PermAll))
	r.logf("create auth ACL with auth: %s", gzErr(err))
	acl, _, err = c1.GetACL(root + "/authacl")
	r.logf("getACL auth ACL: %v %s", acl, gzErr(err))

	// The reaper: an emptied container and an expired TTL node go.
	_, _ = c1.Create(root+"/cont/kid", nil, 0, open)
	_, _, ew, _ = c2.ExistsW(root + "/cont")
	r.logf("delete container's child: %s", gzErr(c1.Delete(root+"/cont/kid", -1)))
	r.event("container reaped", ew)
	r.event("ttl reaped", ttlWatch)

	// A client-side reconnect: cut c1's TCP connection, change a watched
	// node while it is away, and let it back in. The session, its
	// ephemerals and its watches survive; the missed change fires on
	// reconnect (SetWatches).
	sid := c1.SessionID()
	_, _, dw, _ = c1.GetW(root + "/a")
	from := st1.len()
	dialer.cut()
	away := st1.waitFor(from, zk.StateConnecting)
	_, err = c2.Set(root+"/a", []byte("while away"), -1)
	r.logf("set a while c1 is away: %s", gzErr(err))
	dialer.reopen()
	back := st1.waitFor(from, zk.StateHasSession)
	r.logf("reconnect states: %v then %v", away, back)
	r.logf("same session: %v", c1.SessionID() == sid)
	r.event("watch across reconnect", dw)
	ok, s, _ = c2.Exists(root + "/eph")
	r.logf("ephemeral after reconnect: %v owner=%s", ok, r.tr.Session(s.EphemeralOwner))
	data, _, err = c1.Get(root + "/a")
	r.logf("get a after reconnect: %q %s", data, gzErr(err))

	// go-zookeeper's lock recipe, between the two sessions.
	l1, l2 := zk.NewLock(c1, root+"/lock", open), zk.NewLock(c2, root+"/lock", open)
	r.logf("lock 1: %s", gzErr(l1.Lock()))
	got := make(chan error, 1)
	go func() { got <- l2.Lock() }()
	select {
	case err := <-got:
		r.logf("lock 2 while held: %s (should wait)", gzErr(err))
	case <-time.After(200 * time.Millisecond):
		r.logf("lock 2 waits while held")
	}
	r.logf("unlock 1: %s", gzErr(l1.Unlock()))
	select {
	case err := <-got:
		r.logf("lock 2 after unlock: %s", gzErr(err))
	case <-time.After(8 * time.Second):
		r.logf("lock 2 not granted within 8 s")
	}
	r.logf("unlock 2: %s", gzErr(l2.Unlock()))

	// Closing c1 removes its ephemerals.
	_, _, ew, _ = c2.ExistsW(root + "/eph")
	c1.Close()
	r.event("c1 closed", ew)
	kids, _, err = c2.Children(root)
	sort.Strings(kids)
	r.logf("children at the end: %v %s", kids, gzErr(err))
	return r.lines, nil
}

// TestClientGoZookeeper drives github.com/go-zookeeper/zk's API against
// each server and requires the same normalised observations.
func TestClientGoZookeeper(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	type result struct {
		lines []string
		err   error
	}
	start := time.Now()
	zkr, zbr := both(zkAddr, zbAddr, func(addr string) result {
		lines, err := goZkRun(addr, start)
		return result{lines, err}
	})
	t.Logf("go-zookeeper: %v", time.Since(start).Round(time.Millisecond))
	if zkr.err != nil {
		t.Fatalf("against ZooKeeper: %v", zkr.err)
	}
	if zbr.err != nil {
		t.Fatalf("against zkbridge: %v", zbr.err)
	}
	if testing.Verbose() {
		t.Logf("observations (ZooKeeper):\n%s", strings.Join(zkr.lines, "\n"))
	}
	if d := diff(zkr.lines, zbr.lines); d != "" {
		t.Fatalf("go-zookeeper observed different results (ZooKeeper vs zkbridge):\n%s", d)
	}
}
