package compattests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/shell"
	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

// cutProxy forwards TCP connections to a server and can cut them all,
// which is a connection loss to the client while its session lives on.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	refuse bool // hang up on new connections at once
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refuse
			p.mu.Unlock()
			if refuse {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// setRefuse makes the proxy hang up on new connections (or not).
func (p *cutProxy) setRefuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// TestShellClientExpiry keeps the client away from the server longer than
// its session timeout: on reconnecting it learns the session expired,
// emits Expired, and the shell says "Not connected" as zkCli does.
func TestShellClientExpiry(t *testing.T) {
	_, zbAddr := servers(t)
	proxy := newCutProxy(t, zbAddr)
	var out lockedBuffer
	in, feed := io.Pipe()
	sh := shell.New(shell.Options{Server: proxy.addr(), Timeout: 4 * time.Second}, in, &out, &out)
	done := make(chan int, 1)
	go func() { done <- sh.Run(nil) }()
	say := func(line string) { _, _ = io.WriteString(feed, line+"\n") }
	waitOut := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(out.String(), want) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %q in:\n%s", want, out.String())
	}
	cleanRoots(t, zbAddr, "/expiry-probe")
	say("create -e /expiry-probe x")
	waitOut("Created /expiry-probe")
	proxy.setRefuse(true)
	proxy.cut()
	waitOut("WatchedEvent state:Disconnected type:None path:null")
	// The session (4 s) expires on the server while the client is away:
	// its ephemeral goes with it.
	admin, err := zkclient.New(zkclient.Options{Servers: []string{zbAddr}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := admin.Exists("/expiry-probe", false)
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session never expired on the server")
		}
		time.Sleep(100 * time.Millisecond)
	}
	proxy.setRefuse(false)
	waitOut("WatchedEvent state:Expired type:None path:null")
	say("ls /zookeeper")
	waitOut("Not connected")
	say("quit")
	feed.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the shell did not end after quit")
	}
}

// eventLog collects a client's events.
type eventLog struct {
	mu  sync.Mutex
	evs []zkclient.Event
}

func (l *eventLog) add(ev zkclient.Event) { l.mu.Lock(); l.evs = append(l.evs, ev); l.mu.Unlock() }

// waitFor polls until an event matching want arrives (deadline 10 s).
func (l *eventLog) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, ev := range l.evs {
			if ev.String() == want {
				l.mu.Unlock()
				return
			}
		}
		l.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Fatalf("no event %q; got %v", want, l.evs)
}

// TestShellClientReconnect cuts the shell client's connection under a
// chroot with a watch and an identity set: the client must fall back to
// the next server of its list, resume the same session, re-send its auth
// and its watches, and deliver the watch's event afterwards.
func TestShellClientReconnect(t *testing.T) {
	_, zbAddr := servers(t)
	cleanRoots(t, zbAddr, "/zkclient-app")
	admin, err := zkclient.New(zkclient.Options{Servers: []string{zbAddr}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, _, err := admin.Create("/zkclient-app", nil, zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	defer cleanRoots(t, zbAddr, "/zkclient-app")

	// A dead address first: the client must move on to the proxy.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	proxy := newCutProxy(t, zbAddr)
	var log eventLog
	zk, err := zkclient.New(zkclient.Options{Servers: []string{deadAddr, proxy.addr()}, Chroot: "/zkclient-app",
		SessionTimeout: 6 * time.Second, Watcher: log.add})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	if err := zk.Wait(10 * time.Second); err != nil {
		t.Fatalf("never connected past a dead server: %v", err)
	}
	session := zk.SessionID()
	if err := zk.AddAuth("digest", []byte("u:p")); err != nil {
		t.Fatal(err)
	}
	path, _, err := zk.Create("/n", []byte("1"), zkproto.CreatorAllACL(), zkproto.ModePersistent, 0)
	if err != nil || path != "/n" {
		t.Fatalf("create under the chroot: %q %v", path, err)
	}
	if _, _, err := admin.Get("/zkclient-app/n", false); zkclient.Code(err) != zkproto.ErrNoAuth {
		t.Fatalf("the node should carry the creator's digest ACL, admin read: %v", err)
	}
	if _, _, err := zk.Get("/n", true); err != nil {
		t.Fatal(err)
	}
	if err := zk.AddWatch("/", zkproto.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}

	proxy.cut()
	log.waitFor(t, "WatchedEvent state:Disconnected type:None path:null")
	if err := zk.Wait(10 * time.Second); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	if zk.SessionID() != session {
		t.Fatalf("session %#x after reconnect, want %#x resumed", zk.SessionID(), session)
	}
	// The identity was re-sent: the digest-protected node is readable.
	if data, _, err := zk.Get("/n", false); err != nil || string(data) != "1" {
		t.Fatalf("read with the re-sent identity: %q %v", data, err)
	}
	// The watches were re-registered: a change by another session fires them.
	if _, _, err := admin.Create("/zkclient-app/m", nil, zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "WatchedEvent state:SyncConnected type:NodeCreated path:/m")
	if err := admin.AddAuth("digest", []byte("u:p")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Set("/zkclient-app/n", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "WatchedEvent state:SyncConnected type:NodeDataChanged path:/n")
}

// runShell runs one shell command against addr and returns its stdout,
// stderr and exit code.
func runShell(addr string, cmd ...string) (string, string, int) {
	return runShellWith(addr, nil, cmd...)
}

// runShellWith is runShell with zkCli options before the command.
func runShellWith(addr string, options []string, cmd ...string) (string, string, int) {
	var stdout, stderr lockedBuffer
	opts, rest, err := shell.ParseArgs(append(append([]string{"-server", addr}, options...), cmd...))
	if err != nil {
		return "", err.Error(), 2
	}
	code := shell.New(opts, strings.NewReader(""), &stdout, &stderr).Run(rest)
	// The connection event precedes the output; drop it.
	out := stdout.String()
	out = strings.Replace(out, "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n", "", 1)
	out = strings.TrimPrefix(out, "Connecting to "+addr+"\n")
	return out, stderr.String(), code
}

// TestShellBeyondZkCli covers zkbridge shell's own commands against
// zkbridge and ZooKeeper: --json, --format, tree, du, find, dump and load.
func TestShellBeyondZkCli(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	for name, addr := range map[string]string{"zookeeper": zkAddr, "zkbridge": zbAddr} {
		t.Run(name, func(t *testing.T) {
			cleanRoots(t, addr, "/beyond", "/beyond-copy")
			defer cleanRoots(t, addr, "/beyond", "/beyond-copy")
			script := "create /beyond top\ncreate /beyond/a hello\ncreate /beyond/a/b 12345\ncreate /beyond/c\ncreate -e /beyond/e eph\n" +
				"set /beyond/c " + string([]byte{0xff, 0x00, 0x01}) + "\n"
			var out lockedBuffer
			sh := shell.New(shell.Options{Server: addr}, strings.NewReader(script+"tree /beyond\ntree -d 1 /beyond\nfind /beyond --ephemeral\nget /beyond/c\nget --format hex /beyond/c\nquit\n"), &out, &out)
			if code := sh.Run(nil); code != 0 {
				t.Fatalf("exit %d:\n%s", code, out.String())
			}
			text := out.String()
			for _, want := range []string{
				"/beyond (3 B, 3 children)\n├── a (5 B, 1 children)\n│   └── b (5 B)\n├── c (3 B)\n└── e (3 B, ephemeral)\n",
				"/beyond (3 B, 3 children)\n├── a (5 B, 1 children)\n├── c (3 B)\n└── e (3 B, ephemeral)\n",
				"\n/beyond/e\n",
				"00000000  ff 00 01  ",
				"\nff0001\n",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			// The ephemeral is gone with that session; the rest stays.
			stdout, stderr, code := runShell(addr, "get", "--json", "/beyond/a")
			var node struct {
				Path string `json:"path"`
				Data string `json:"data"`
				Stat struct {
					DataLength  int `json:"dataLength"`
					NumChildren int `json:"numChildren"`
				} `json:"stat"`
			}
			if err := json.Unmarshal([]byte(stdout), &node); err != nil || code != 0 {
				t.Fatalf("get --json: %v (exit %d) %q %q", err, code, stdout, stderr)
			}
			if node.Path != "/beyond/a" || node.Data != "hello" || node.Stat.DataLength != 5 || node.Stat.NumChildren != 1 {
				t.Fatalf("get --json: %+v", node)
			}
			stdout, _, _ = runShell(addr, "ls", "--json", "/beyond")
			if strings.TrimSpace(stdout) != `{"children":["a","c"],"path":"/beyond"}` {
				t.Fatalf("ls --json: %s", stdout)
			}
			stdout, _, _ = runShell(addr, "du", "/beyond")
			for _, want := range []string{"         2           10  /beyond/a\n", "         1            3  /beyond/c\n",
				"         4           16  /beyond (total)\n"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("du lacks %q:\n%s", want, stdout)
				}
			}
			stdout, _, _ = runShell(addr, "find", "/beyond", "--name", "?")
			if stdout != "/beyond/a\n/beyond/a/b\n/beyond/c\n" {
				t.Errorf("find --name ?: %q", stdout)
			}
			// --owner finds the ephemerals of one live session.
			owner, err := zkclient.New(zkclient.Options{Servers: []string{addr}, SessionTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := owner.Create("/beyond/a/mine", nil, zkproto.OpenACLUnsafe(), zkproto.ModeEphemeral, 0); err != nil {
				t.Fatal(err)
			}
			stdout, _, _ = runShell(addr, "find", "/beyond", "--owner", fmt.Sprintf("0x%x", owner.SessionID()))
			owner.Close()
			if stdout != "/beyond/a/mine\n" {
				t.Errorf("find --owner: %q", stdout)
			}
			dump := filepath.Join(t.TempDir(), "beyond.jsonl")
			if _, stderr, code := runShell(addr, "dump", "/beyond", "-o", dump); code != 0 || !strings.Contains(stderr, "dumped 4 znodes") {
				t.Fatalf("dump: exit %d %s", code, stderr)
			}
			b, err := os.ReadFile(dump)
			if err != nil {
				t.Fatal(err)
			}
			copyDump := strings.ReplaceAll(string(b), `"path":"/beyond`, `"path":"/beyond-copy`)
			if err := os.WriteFile(dump, []byte(copyDump), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := runShell(addr, "load", dump); code != 0 || !strings.Contains(stderr, "4 created") {
				t.Fatalf("load: exit %d %s", code, stderr)
			}
			stdout, _, _ = runShell(addr, "get", "--format", "base64", "/beyond-copy/c")
			if stdout != "/wAB\n" {
				t.Errorf("loaded binary data: %q", stdout)
			}
			if _, stderr, _ := runShell(addr, "load", dump); !strings.Contains(stderr, "0 created, 0 updated, 4 already there") {
				t.Errorf("second load: %s", stderr)
			}
		})
	}
}
