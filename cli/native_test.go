package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

// startNativeNode runs a one-node zkbridge in this process with its native
// API on a free loopback port, and returns that address.
func startNativeNode(t *testing.T) string {
	t.Helper()
	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", NativeAddr: "127.0.0.1:0", PeerAddr: freeAddr(t), AdminDisabled: true}
	srv := startTestServer(t, cfg, 30*time.Second)
	return srv.NativeAddr()
}

// lockedBuffer is a bytes.Buffer safe to write from a running command and
// read from the test.
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

func TestNativeCommands(t *testing.T) {
	addr := startNativeNode(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := NewApp(&out, &out).RunContext(ctx, append([]string{"zkbridge"}, args...))
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	a := "--addr=" + addr

	if out := must("native", "put", a, "/app", "config-v1"); out != "created /app, version 0\n" {
		t.Fatalf("put: %q", out)
	}
	if out := must("native", "put", a, "--version", "0", "/app", "config-v2"); out != "set /app, version 1\n" {
		t.Fatalf("put at a version: %q", out)
	}
	if _, err := run("native", "put", a, "--version", "0", "/app", "stale"); err == nil || !strings.Contains(err.Error(), "read it again") {
		t.Fatalf("put at a stale version: %v", err)
	}
	if out := must("native", "get", a, "/app"); out != "config-v2\n" {
		t.Fatalf("get: %q", out)
	}
	var got struct {
		Path string
		Data string
		Stat struct{ Version int32 }
	}
	if err := json.Unmarshal([]byte(must("native", "get", a, "--json", "/app")), &got); err != nil || got.Data != "config-v2" || got.Stat.Version != 1 {
		t.Fatalf("get --json: %+v %v", got, err)
	}
	if out := must("native", "get", a, "--stat", "/app"); !strings.Contains(out, "dataVersion = 1") {
		t.Fatalf("get --stat: %q", out)
	}
	must("native", "put", a, "/app/b", "")
	must("native", "put", a, "/app/a", "")
	if out := must("native", "list", a, "/app"); out != "a\nb\n" {
		t.Fatalf("list: %q", out)
	}
	if out := must("native", "delete", a, "/app/b"); out != "deleted /app/b\n" {
		t.Fatalf("delete: %q", out)
	}
	if _, err := run("native", "get", a, "/app/b"); err == nil || !strings.Contains(err.Error(), "/app/b") {
		t.Fatalf("get of a deleted znode: %v", err)
	}
	if out := must("native", "allocate-id", a, "--count", "10", "/ids"); out != "0 9\n" {
		t.Fatalf("allocate-id: %q", out)
	}
	if out := must("native", "allocate-id", a, "--json", "/ids"); strings.TrimSpace(out) != `{"counter":"/ids","first":10,"last":10}` {
		t.Fatalf("allocate-id --json: %q", out)
	}

	// The feed up to now, as text and JSON lines.
	out := must("native", "fetch", a, "--prefix", "/app")
	want := []string{`created /app version 0 "config-v1"`, `data /app version 1 "config-v2"`, `created /app/b version 0 ""`,
		`created /app/a version 0 ""`, `deleted /app/b`}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("fetch:\n%s", out)
	}
	for i, l := range lines {
		if _, rest, _ := strings.Cut(l, " "); rest != want[i] {
			t.Fatalf("fetch line %d: %q, want OFFSET %s", i, l, want[i])
		}
	}
	var last int64
	for _, l := range strings.Split(strings.TrimSpace(must("native", "fetch", a, "--prefix", "/app", "--json")), "\n") {
		var rec struct {
			Offset  int64
			Changes []struct{ Type, Path string }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Offset <= last || len(rec.Changes) != 1 {
			t.Fatalf("fetch --json line %q: %+v %v", l, rec, err)
		}
		last = rec.Offset
	}
	// --from past the end prints nothing.
	if out := must("native", "fetch", a, "--prefix", "/app", "--from", "999999999999"); out != "" {
		t.Fatalf("fetch from the future: %q", out)
	}
	snap := must("native", "snapshot", a, "--prefix", "/app")
	if !strings.HasPrefix(snap, "snapshot at offset ") || !strings.Contains(snap, "\n/app version 1 \"config-v2\"\n/app/a version 0 \"\"\n") {
		t.Fatalf("snapshot:\n%s", snap)
	}

	// A follower of the feed streams until its context ends.
	follow := &lockedBuffer{}
	fctx, fcancel := context.WithCancel(context.Background())
	fdone := make(chan error, 1)
	go func() {
		fdone <- NewApp(follow, follow).RunContext(fctx, []string{"zkbridge", "native", "fetch", a, "--prefix", "/live", "--follow", "--json"})
	}()

	// register holds the lease until interrupted, then deregisters.
	reg := &lockedBuffer{}
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan error, 1)
	go func() {
		rdone <- NewApp(reg, reg).RunContext(rctx, []string{"zkbridge", "native", "register", a, "--group", "live", "--member", "w1",
			"--payload", "host-a:9000", "--ttl", "4s"})
	}()
	waitFor(t, func() bool { return strings.Contains(reg.String(), "holding it") })
	if !strings.HasPrefix(reg.String(), "registered /live/ids/w1: epoch ") {
		t.Fatalf("register printed %q", reg.String())
	}
	if out := must("native", "get", a, "/live/ids/w1"); out != "host-a:9000\n" {
		t.Fatalf("the registration: %q", out)
	}
	if _, err := run("native", "register", a, "--group", "live", "--member", "w1", "--ttl", "4s"); err == nil ||
		!strings.Contains(err.Error(), "--expected-epoch") {
		t.Fatalf("a second registration: %v", err)
	}
	lease := strings.TrimSuffix(strings.Fields(strings.SplitAfter(reg.String(), "lease ")[1])[0], ",")
	if out := must("native", "heartbeat", a, "--lease", lease); !strings.HasPrefix(out, "lease "+lease+" renewed: TTL 4s") {
		t.Fatalf("heartbeat: %q", out)
	}
	if out := must("native", "sessions", a); !strings.Contains(out, lease+"\tttl=4000ms") || !strings.Contains(out, "\t/live/ids/w1\n") {
		t.Fatalf("sessions: %q (lease %s)", out, lease)
	}
	time.Sleep(5 * time.Second) // past the TTL: the command keeps it alive
	if out := must("native", "get", a, "/live/ids/w1"); out != "host-a:9000\n" {
		t.Fatalf("the registration after its TTL: %q", out)
	}
	rcancel()
	if err := <-rdone; err != nil {
		t.Fatalf("register after an interrupt: %v", err)
	}
	if !strings.Contains(reg.String(), "deregistered /live/ids/w1") {
		t.Fatalf("register printed %q", reg.String())
	}
	if _, err := run("native", "heartbeat", a, "--lease", lease); err == nil || !strings.Contains(err.Error(), "register again") {
		t.Fatalf("heartbeat of a deregistered lease: %v", err)
	}
	waitFor(t, func() bool { return strings.Count(follow.String(), "\n") >= 4 })
	fcancel()
	if err := <-fdone; err != nil {
		t.Fatalf("fetch --follow after an interrupt: %v", err)
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(follow.String()), "\n") {
		var rec struct{ Changes []struct{ Type, Path string } }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("fetch --follow line %q: %v", l, err)
		}
		for _, c := range rec.Changes {
			types = append(types, c.Type+" "+c.Path)
		}
	}
	if strings.Join(types, ",") != "created /live,created /live/ids,created /live/ids/w1,deleted /live/ids/w1" {
		t.Fatalf("followed %v", types)
	}

	// Status and cutover policies.
	var st struct {
		Role     string
		Replicas []struct{ ReplicaID uint64 }
	}
	if err := json.Unmarshal([]byte(must("native", "status", a, "--json")), &st); err != nil || st.Role != "leader" || len(st.Replicas) != 1 {
		t.Fatalf("status --json: %+v %v", st, err)
	}
	if out := must("native", "status", a); !strings.Contains(out, "leader") || !strings.Contains(out, "MEMBER") {
		t.Fatalf("status: %q", out)
	}
	if out := must("cutover", "list", a); !strings.HasPrefix(out, "no cutover policies") {
		t.Fatalf("cutover list: %q", out)
	}
	if out := must("cutover", "set", a, "/app", "read-only"); !strings.HasPrefix(out, "/app: read-only") {
		t.Fatalf("cutover set: %q", out)
	}
	if out := must("cutover", "list", a); out != "SUBTREE  MODE\n/app     read-only\n" {
		t.Fatalf("cutover list: %q", out)
	}
	if out := must("cutover", "list", a, "--json"); strings.TrimSpace(out) != `{"policies":[{"mode":"read-only","subtree":"/app"}]}` {
		t.Fatalf("cutover list --json: %q", out)
	}
	if _, err := run("native", "put", a, "/app", "x"); err == nil || !strings.Contains(err.Error(), "cutover list") {
		t.Fatalf("put under read-only: %v", err)
	}
	must("cutover", "set", a, "/app", "zk")
	if _, err := run("cutover", "set", a, "/app", "sideways"); err == nil || !strings.Contains(err.Error(), "want zk, native or read-only") {
		t.Fatalf("unknown mode: %v", err)
	}

	// Mistakes say what to do.
	if _, err := run("native", "get", "/app", a); err == nil || !strings.Contains(err.Error(), "put flags first") {
		t.Fatalf("a flag after the arguments: %v", err)
	}
	if _, err := run("native", "get", "--addr", freeAddr(t), "/app"); err == nil || !strings.Contains(err.Error(), "--native-addr") {
		t.Fatalf("nothing at --addr: %v", err)
	}
	if _, err := run("native", "register", a, "--member", "x"); err == nil || !strings.Contains(err.Error(), "--group") {
		t.Fatalf("register without a group: %v", err)
	}
	if _, err := run("native", "get", a, "--tenant", "other", "/app"); err == nil || !strings.Contains(err.Error(), "tenant") {
		t.Fatalf("unknown tenant: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNativeAndCutoverHelp(t *testing.T) {
	for _, args := range [][]string{{"native", "--help"}, {"native", "register", "--help"}, {"native", "fetch", "--help"}, {"cutover", "set", "--help"}} {
		var out bytes.Buffer
		if err := NewApp(&out, &out).Run(append([]string{"zkbridge"}, args...)); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "Example") {
			t.Errorf("%v has no examples:\n%s", args, out.String())
		}
	}
}
