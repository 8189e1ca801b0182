package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// TestMain removes the binary buildBinary made.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildBinary builds zkbridge once per test binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "zkbridge-cli-test"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "zkbridge")
		if out, err := exec.Command("go", "build", "-o", built.bin, "..").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type node struct {
	cmd        *exec.Cmd
	clientAddr string
	started    time.Duration
	exited     chan error
}

// startNode runs `zkbridge server` and waits for its "serving" log line.
func startNode(t *testing.T, bin, dataDir, client, peer string) *node {
	t.Helper()
	return startNodeEnv(t, bin, dataDir, client, peer, nil)
}

// startNodeEnv is startNode with env as the process environment (nil: the
// test's own) and extra flags.
func startNodeEnv(t *testing.T, bin, dataDir, client, peer string, env []string, extra ...string) *node {
	t.Helper()
	args := append([]string{"server", "--data-dir", dataDir, "--client-addr", client, "--peer-addr", peer, "--no-admin", "--log-format", "json"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{cmd: cmd, clientAddr: client, exited: make(chan error, 1)}
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			var line struct{ Message string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "zkbridge serving" && !signalled {
				signalled = true
				close(serving)
			}
		}
		n.exited <- cmd.Wait()
	}()
	select {
	case <-serving:
		n.started = time.Since(begin)
	case err := <-n.exited:
		t.Fatalf("zkbridge exited during start-up: %v", err)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("zkbridge did not start within 60 s")
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return n
}

func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.State() != zk.StateHasSession && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.State() != zk.StateHasSession {
		t.Fatalf("no session with %s: %v", addr, c.State())
	}
	return c
}

// createThenKill creates prefix000, prefix001, … (data "0", "1", …), each
// acknowledged, then kills the node with SIGKILL and waits for it to exit.
func createThenKill(t *testing.T, n *node, prefix string, writes int) {
	t.Helper()
	c := connectZK(t, n.clientAddr)
	for i := 0; i < writes; i++ {
		if _, err := c.Create(fmt.Sprintf("%s%03d", prefix, i), []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	c.Close()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n.exited
}

// TestServerSurvivesKillAndStopsOnSIGTERM: acknowledged writes survive
// kill -9; SIGTERM exits 0; a fresh node serves in well under 2 s.
func TestServerSurvivesKillAndStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	client, peer := freeAddr(t), freeAddr(t)
	n := startNode(t, bin, dir, client, peer)
	t.Logf("fresh node serving after %v", n.started)
	if n.started > 2*time.Second {
		t.Errorf("fresh node took %v to serve, want < 2 s", n.started)
	}

	const writes = 200
	createThenKill(t, n, "/k", writes)

	n2 := startNode(t, bin, dir, client, peer)
	c2 := connectZK(t, client)
	children, _, err := c2.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, ch := range children {
		if strings.HasPrefix(ch, "k") {
			got++
		}
	}
	if got != writes {
		t.Fatalf("after kill -9: %d of %d acknowledged creates survived", got, writes)
	}
	data, _, err := c2.Get("/k199")
	if err != nil || string(data) != "199" {
		t.Fatalf("/k199 = %q, %v", data, err)
	}
	c2.Close()

	if err := n2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-n2.exited:
		if err != nil {
			t.Fatalf("SIGTERM: exit %v, want 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not stop the node within 20 s")
	}
}

// Without the log sync (forceSync=no) an acknowledged write is in the
// kernel's page cache: kill -9 of the process loses none of them.
func TestServerWithoutLogSyncSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	client, peer := freeAddr(t), freeAddr(t)
	n := startNodeEnv(t, bin, dir, client, peer, nil, "--force-sync=false")
	const writes = 100
	createThenKill(t, n, "/u", writes)

	startNodeEnv(t, bin, dir, client, peer, nil, "--force-sync=false")
	c2 := connectZK(t, client)
	defer c2.Close()
	for i := 0; i < writes; i++ {
		data, _, err := c2.Get(fmt.Sprintf("/u%03d", i))
		if err != nil || string(data) != fmt.Sprint(i) {
			t.Fatalf("after kill -9: /u%03d = %q, %v", i, data, err)
		}
	}
}

func TestServerHelpListsItsFlags(t *testing.T) {
	var out strings.Builder
	app := NewApp(&out, os.Stderr)
	if err := app.Run([]string{"zkbridge", "server", "--help"}); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--config", "--data-dir", "--client-addr", "--admin-addr"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("server --help lacks %s", flag)
		}
	}
}
