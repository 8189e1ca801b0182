package compattests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tmuxPath = "/usr/bin/tmux"

// tmuxSession is a detached tmux session on a private server socket.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func startTmux(t *testing.T, name string, env []string, command ...string) *tmuxSession {
	t.Helper()
	requireTool(t, tmuxPath)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("zkbridge-test-%d-%s", os.Getpid(), name), name: name}
	args := []string{"-L", s.socket, "new-session", "-d", "-s", name, "-x", "200", "-y", "40"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, command...)
	if out, err := exec.Command(tmuxPath, args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(tmuxPath, "-L", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) screen() string {
	out, err := exec.Command(tmuxPath, "-L", s.socket, "capture-pane", "-p", "-t", s.name).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	args := append([]string{"-L", s.socket, "send-keys", "-t", s.name}, keys...)
	if out, err := exec.Command(tmuxPath, args...).CombinedOutput(); err != nil {
		s.t.Fatalf("tmux send-keys %v: %v: %s", keys, err, out)
	}
}

// waitScreen polls the screen until ok accepts it (deadline 20 s).
func (s *tmuxSession) waitScreen(what string, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		if screen = s.screen(); ok(screen) {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("screen never showed %s:\n%s", what, screen)
	return ""
}

func containsAll(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

// TestTopUnderTmux runs `zkbridge top` on ZooKeeper and zkbridge in a
// terminal (tmux) as an operator would, and reads the screen: one row per
// server with its role, the Raft column for zkbridge, refreshed; Ctrl-C
// quits.
func TestTopUnderTmux(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	bin := zkbridgeBinary(t)
	// A third address where nothing listens: shown DOWN, the others still.
	down, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	downAddr := fmt.Sprintf("127.0.0.1:%d", down)
	s := startTmux(t, "top", nil, bin, "top", "--server", zkAddr+","+zbAddr+","+downAddr, "--interval", "300ms")
	screen := s.waitScreen("two servers up", containsAll("zkbridge top", "2/3 servers up", "RAFT LAG", zkAddr, zbAddr, "0 behind"))
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, downAddr) && !strings.Contains(l, "DOWN") {
			t.Errorf("the dead server's row: %q", l)
		}
	}
	if !strings.Contains(screen, downAddr) {
		t.Errorf("no row for the dead server %s:\n%s", downAddr, screen)
	}
	var zkRow, zbRow string
	for _, l := range strings.Split(screen, "\n") {
		switch {
		case strings.HasPrefix(l, zkAddr):
			zkRow = l
		case strings.HasPrefix(l, zbAddr):
			zbRow = l
		}
	}
	if !strings.Contains(zkRow, "standalone") || !strings.Contains(zkRow, "3.8") {
		t.Errorf("ZooKeeper's row lacks its role or version: %q", zkRow)
	}
	if strings.Contains(zkRow, "behind") {
		t.Errorf("ZooKeeper's row shows Raft lag: %q", zkRow)
	}
	if !strings.Contains(zbRow, "0 behind, 0 unapplied") {
		t.Errorf("zkbridge's row lacks its Raft lag: %q", zbRow)
	}
	// It refreshes: the clock in the title moves.
	first := strings.SplitN(screen, "\n", 2)[0]
	s.waitScreen("a refresh", func(sc string) bool { return strings.SplitN(sc, "\n", 2)[0] != first })
	s.keys("C-c")
	s.waitScreen("top gone", func(sc string) bool { return !strings.Contains(sc, "RAFT LAG") || strings.Contains(sc, "$") })
}

// TestShellUnderTmux drives the interactive shell in a terminal: the
// zkCli prompt with the connection state, line editing, completion of a
// command and of a znode path from the server, and the history persisted
// to $ZKBRIDGE_HISTORY.
func TestShellUnderTmux(t *testing.T) {
	_, zbAddr := servers(t)
	cleanRoots(t, zbAddr, "/tmuxnode")
	defer cleanRoots(t, zbAddr, "/tmuxnode")
	bin := zkbridgeBinary(t)
	history := filepath.Join(t.TempDir(), "history")
	s := startTmux(t, "shell", []string{"ZKBRIDGE_HISTORY=" + history}, bin, "shell", "-server", zbAddr)
	s.waitScreen("the prompt", containsAll("Welcome to ZooKeeper!", "[zk: "+zbAddr+"(", ") 0]"))
	s.keys("create /tmuxnode hello", "Enter")
	s.waitScreen("the create", containsAll("Created /tmuxnode", "(CONNECTED) 1]"))
	// "ge" + Tab completes the command, "/tmux" + Tab the path.
	s.keys("ge", "Tab")
	s.keys(" /tmux", "Tab")
	s.waitScreen("the completed line", containsAll("(CONNECTED) 1] get /tmuxnode"))
	s.keys("Enter")
	s.waitScreen("the data", containsAll("\nhello\n", "(CONNECTED) 2]"))
	s.keys("quit", "Enter")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(history); err == nil && strings.Contains(string(b), "get /tmuxnode") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(history)
	t.Fatalf("history file lacks the commands: %q", b)
}

// TestShellBinaryExitCodes runs the built zkbridge binary as scripts do:
// zkCli's exit codes reach the shell (0, 1, 127, 2), and a one-shot --json
// command prints the JSON alone.
func TestShellBinaryExitCodes(t *testing.T) {
	_, zbAddr := servers(t)
	bin := zkbridgeBinary(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"shell", "-server", zbAddr, "ls", "/"}, 0},
		{[]string{"shell", "-server", zbAddr, "get", "/no/such/node"}, 1},
		{[]string{"shell", "-server", zbAddr, "bogus"}, 127},
		{[]string{"shell", "-server", zbAddr, "-timeout", "x", "ls", "/"}, 2},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails this test, not the package
		err := exec.CommandContext(ctx, bin, c.args...).Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("zkbridge %s: exit %d, want %d", strings.Join(c.args, " "), code, c.code)
		}
	}
	out, err := exec.Command(bin, "shell", "-server", zbAddr, "stat", "--json", "/").Output()
	if err != nil || !strings.HasPrefix(string(out), `{"path":"/","stat":{`) {
		t.Fatalf("stat --json: %v %q", err, out)
	}
}
