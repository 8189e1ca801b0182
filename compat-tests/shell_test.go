package compattests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/shell"
	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

// lockedBuffer is one output stream for the shell's stdout and stderr
// (as zkCliRun gives zkCli one pipe for both), safe for the shell's event
// goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// shellRun feeds cmds to one `zkbridge shell` session connected to addr,
// exactly as zkCliRun feeds zkCli (each command followed by the
// printwatches marker, then quit), and returns its output and exit code.
func shellRun(addr string, cmds []string) (string, int) {
	var in strings.Builder
	for _, c := range cmds {
		in.WriteString(c + "\nprintwatches\n")
	}
	in.WriteString("quit\n")
	var out lockedBuffer
	sh := shell.New(shell.Options{Server: addr, Timeout: 30 * time.Second}, strings.NewReader(in.String()), &out, &out)
	code := sh.Run(nil)
	return out.String(), code
}

// shellNormalise is zkCliNormalise plus what legitimately differs between
// the two programs: the version string, and zkCli's note that its line
// editor is off when stdin is not a terminal.
func shellNormalise(out, addr string, cmds []string, start time.Time) []string {
	var lines []string
	for _, l := range zkCliNormalise(out, addr, cmds, start) {
		l = strings.ReplaceAll(l, addr, "ADDR") // "> connect ADDR" too
		switch {
		case l == "  JLine support is disabled":
			continue
		case strings.HasPrefix(l, "  ZooKeeper CLI version: "):
			l = "  ZooKeeper CLI version: VERSION"
		}
		lines = append(lines, l)
	}
	return lines
}

// withAddr replaces ADDR in a script by the server's address.
func withAddr(cmds []string, addr string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = strings.ReplaceAll(c, "ADDR", addr)
	}
	return out
}

// cleanRoots removes what a failed earlier run may have left, as the super user.
func cleanRoots(t *testing.T, addr string, roots ...string) {
	t.Helper()
	zk, err := zkclient.New(zkclient.Options{Servers: []string{addr}, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	if err := zk.AddAuth("digest", []byte(SuperCredentials)); err != nil {
		t.Fatal(err)
	}
	for _, root := range roots {
		var walk func(p string) error
		walk = func(p string) error {
			children, _, err := zk.Children(p, false)
			if zkclient.Code(err) == zkproto.ErrNoNode {
				return nil
			}
			if err != nil {
				return err
			}
			for _, c := range children {
				if err := walk(p + "/" + c); err != nil {
					return err
				}
			}
			if err := zk.Delete(p, -1); err != nil && zkclient.Code(err) != zkproto.ErrNoNode {
				return err
			}
			return nil
		}
		if err := walk(root); err != nil {
			t.Fatalf("clean %s on %s: %v", root, addr, err)
		}
	}
}

// TestShellZkCli runs the zkCli scripts (clients/zkcli.txt,
// zkcli_quota.txt and shell_extra.txt: every zkCli command, its flags,
// error cases and watches firing) through the real zkCli.sh and through
// zkbridge shell against the same real ZooKeeper, and requires the same
// normalised output (zxids, session ids and times masked, events in
// arrival order) and the same exit code. The same scripts then run
// through zkbridge shell against zkbridge, with the same expectation.
func TestShellZkCli(t *testing.T) {
	zkAddr, zbAddr := servers(t)
	requireTool(t, zkCliPath)
	for _, script := range []string{"zkcli.txt", "zkcli_quota.txt", "shell_extra.txt"} {
		t.Run(strings.TrimSuffix(script, ".txt"), func(t *testing.T) {
			roots := []string{"/zkcli", "/zkquota", "/zkshell", "/zookeeper/quota/zkquota", "/zookeeper/quota/zkshell"}
			cleanRoots(t, zkAddr, roots...)
			cleanRoots(t, zbAddr, roots...)
			start := time.Now()
			zkCmds := withAddr(clientScript(t, script), zkAddr)
			raw, err := zkCliRun(zkAddr, zkCmds)
			if err != nil {
				t.Fatalf("zkCli.sh against ZooKeeper: %v\n%s", err, raw)
			}
			// Every command is followed by printwatches, which prints its
			// state (on or off) whether connected or not.
			if n := strings.Count(raw, "printwatches is on\n") + strings.Count(raw, "printwatches is off\n"); n != len(zkCmds) {
				t.Fatalf("zkCli.sh ran %d of %d commands:\n%s", n, len(zkCmds), raw)
			}
			want := shellNormalise(raw, zkAddr, zkCmds, start)
			zkCliTook := time.Since(start)
			cleanRoots(t, zkAddr, roots...)

			start = time.Now()
			out, code := shellRun(zkAddr, zkCmds)
			got := shellNormalise(out, zkAddr, zkCmds, start)
			t.Logf("%s: %d commands; zkCli.sh %v, zkbridge shell %v", script, len(zkCmds),
				zkCliTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			if testing.Verbose() {
				t.Logf("normalised zkCli.sh output:\n%s", strings.Join(want, "\n"))
			}
			if code != 0 {
				t.Errorf("zkbridge shell exited %d after quit, zkCli.sh 0", code)
			}
			if d := diff(want, got); d != "" {
				t.Fatalf("zkbridge shell differs from zkCli.sh against ZooKeeper:\n%s", d)
			}

			zbCmds := withAddr(clientScript(t, script), zbAddr)
			start = time.Now()
			out, _ = shellRun(zbAddr, zbCmds)
			gotZb := shellNormalise(out, zbAddr, zbCmds, start)
			if d := diff(want, gotZb); d != "" {
				t.Fatalf("zkbridge shell against zkbridge differs from zkCli.sh against ZooKeeper:\n%s", d)
			}
		})
	}
}

// TestShellZkCliOneShot compares zkCli's non-interactive mode: one command
// per process, its stderr and its exit code (0, 1, 127).
func TestShellZkCliOneShot(t *testing.T) {
	zkAddr, _ := servers(t)
	requireTool(t, zkCliPath)
	cleanRoots(t, zkAddr, "/zkoneshot")
	cases := [][]string{
		{"create", "/zkoneshot", "x"},
		{"get", "/zkoneshot"},
		{"create", "/zkoneshot", "again"},
		{"get", "/zkoneshot/missing"},
		{"bogus"},
		{"create"},
		{"ls", "-x", "/"},
		{"delete", "-v", "5", "/zkoneshot"},
		{"delete", "/zkoneshot"},
	}
	type result struct {
		stderr string
		code   int
	}
	var want, got []result
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, zkCliPath, append([]string{"-server", zkAddr}, c...)...)
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -Xss1m")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("zkCli.sh %v: %v", c, err)
		}
		want = append(want, result{dropLogLines(stderr.String()), code})
	}
	cleanRoots(t, zkAddr, "/zkoneshot")
	for _, c := range cases {
		var stdout, stderr lockedBuffer
		code := shell.New(shell.Options{Server: zkAddr}, strings.NewReader(""), &stdout, &stderr).Run(c)
		got = append(got, result{stderr.String(), code})
	}
	for i, c := range cases {
		if want[i] != got[i] {
			t.Errorf("%v: zkCli.sh exit %d stderr %q; zkbridge shell exit %d stderr %q", c, want[i].code, want[i].stderr,
				got[i].code, got[i].stderr)
		}
	}
}

func dropLogLines(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" && !zkCliLogLine.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}
