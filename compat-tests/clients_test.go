package compattests

import (
	"bytes"
	"context"
	"fmt"
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
func TestClientZkCli(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	requireTool(t, zkCliPath)
	cmds := clientScript(t, "zkcli.txt")
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
	t.Logf("zkCli: %d commands in %v", len(cmds), time.Since(start).Round(time.Millisecond))
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
	lines := []string{"> " + command}
	var children []string
	flush := func() {
		sort.Strings(children)
		lines = append(lines, children...)
		children = nil
	}
	inChildren := false
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r ")
		if l == "" || cliMtDropLine.MatchString(l) {
			continue
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
	return lines
}

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
