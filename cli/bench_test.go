package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/bench"
	"github.com/zkbridge/zkbridge/server"
)

// startInProcess runs a one-node zkbridge in the test process on loopback.
func startInProcess(t *testing.T) string {
	t.Helper()
	cfg := server.Config{
		DataDir:       t.TempDir(),
		ClientAddr:    "127.0.0.1:0",
		AdminDisabled: true,
		PeerAddr:      freeAddr(t),
	}
	srv := startTestServer(t, cfg, 60*time.Second)
	return srv.ClientAddr()
}

func runBenchCLI(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = NewApp(&out, &errOut).Run(append([]string{"zkbridge", "bench"}, args...))
	return out.String(), errOut.String(), err
}

func TestBenchWorkloads(t *testing.T) {
	addr := startInProcess(t)
	for _, w := range bench.Workloads {
		t.Run(w, func(t *testing.T) {
			args := []string{"--addr", addr, "--workload", w, "--ops", "300", "--warmup", "100ms",
				"--connections", "3", "--outstanding", "8", "--keyspace", "50", "--multi-ops", "4",
				"--watchers", "4", "--json", "--progress", "50ms"}
			if w == "mixed" {
				args = append(args, "--mix", "get:4,set:2,create:2,delete:2,exists:1,list:1,multi:1")
			}
			if w == "watch" {
				args[5] = "20" // rounds
			}
			if w == "connect" {
				args[5] = "30" // sessions
				args = append(args, "--connect-exists")
			}
			if w == "churn" {
				args[5] = "30" // cycles
			}
			if w == "watches" {
				args = append(args, "--watches", "120") // at most keyspace × connections = 150
			}
			if w == "sessions" {
				// Held for a duration: pings every third of 1.5 s (the
				// server's minimum timeout is 2 ticks, so it may be more).
				args[4], args[5] = "--duration", "3s"
				args = append(args, "--session-timeout", "1500ms", "--connections", "20")
			}
			out, _, err := runBenchCLI(args...)
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, out)
			}
			var res bench.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("JSON report: %v\n%s", err, out)
			}
			want := int64(300)
			switch w {
			case "watch":
				want = 20
				if res.Events != 20*4 {
					t.Errorf("events %d, want 80", res.Events)
				}
			case "connect":
				want = 30
				if len(res.PerOp) != 3 || !res.ConnectExists {
					t.Errorf("connect: per op %+v, want connect, exists and close", res.PerOp)
				}
			case "churn":
				want = 30
				if len(res.PerOp) != 4 {
					t.Errorf("churn: per op %+v, want create, connect, close and churn", res.PerOp)
				}
			case "watches":
				want = 120
				if w := res.Watches; w == nil || w.Watches != 120 || w.Paths != 50 || w.Sessions != 3 {
					t.Errorf("watches: %+v, want 120 watches on 50 paths from 3 sessions", w)
				}
			case "sessions":
				// Every session pings at least once in 3 s.
				want = res.Ops
				if s := res.Sessions; s == nil || s.Sessions != 20 || res.Ops < 20 {
					t.Errorf("sessions: %+v, %d pings, want 20 sessions pinging", s, res.Ops)
				}
			}
			if res.Ops != want || res.Errors != 0 || res.Workload != w || len(res.PerOp) == 0 {
				t.Fatalf("result: %+v", res)
			}
			lat := res.Latency
			if w == "watch" {
				// The fan-out time runs from the write's send to the last
				// event, so it is never below the write's own time. Its
				// part after the reply (the events arrive on other
				// connections) is 0 when every event beat the reply. The
				// set it times is a request like any other.
				if lat.P50 <= 0 {
					t.Errorf("fan-out latency not above 0: %+v", lat)
				}
				set, tail := false, false
				for _, o := range res.PerOp {
					if o.Op == "after_reply" {
						tail = true
						if o.Latency.P50 < 0 || o.Latency.Max > lat.Max {
							t.Errorf("after_reply %+v: below 0 or above the whole round's %+v", o.Latency, lat)
						}
					}
					if o.Op == "set" {
						set = true
						if o.Latency.P50 <= 0 || o.Latency.P50 > o.Latency.P99 || o.Latency.P99 > o.Latency.Max {
							t.Errorf("watch's set latency summary out of order: %+v", o.Latency)
						}
					}
				}
				if !set || !tail {
					t.Errorf("watch: no set or no after_reply in per op %+v", res.PerOp)
				}
			} else if lat.P50 <= 0 {
				t.Errorf("latency summary out of order: %+v", lat)
			}
			if lat.P50 > lat.P99 || lat.P99 > lat.Max {
				t.Errorf("latency summary out of order: %+v", lat)
			}
		})
	}
	// Cleanup left nothing behind.
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _, err := c.Exists("/zkbridge-bench"); err != nil || ok {
		t.Fatalf("/zkbridge-bench left behind (exists %v, err %v)", ok, err)
	}
}

func TestBenchTableAndProgress(t *testing.T) {
	addr := startInProcess(t)
	out, errOut, err := runBenchCLI("--addr", addr, "-w", "get", "--duration", "300ms", "--warmup", "0s",
		"--progress", "100ms", "--root", "/b", "--no-cleanup", "--server-pids", strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{"workload get against " + addr, "ops/s", "p999 ms", "\n  get "}
	if runtime.GOOS == "linux" {
		lines = append(lines, fmt.Sprintf("server processes [%d], per op: ", os.Getpid()), " µs on a CPU")
	}
	for _, s := range lines {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(errOut, "ops/s") || !strings.Contains(errOut, " done ") {
		t.Errorf("no progress line on stderr: %q", errOut)
	}
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _, _ := c.Exists("/b/d0/k0"); !ok {
		t.Fatal("--no-cleanup removed the keyspace")
	}
}

func TestBenchFlagErrors(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--workload", "read"}, "unknown workload"},
		{[]string{"--mix", "get:1", "-w", "get"}, "--mix applies to the mixed workload"},
		{[]string{"--mix", "get:x"}, "--mix"},
		{[]string{"--connections", "0"}, "--connections must be positive"},
		{[]string{"--outstanding", "-2"}, "--outstanding must be positive"},
		{[]string{"--duration", "0s"}, "--duration must be positive"},
		{[]string{"--addr", "nohost"}, "not HOST:PORT"},
		{[]string{"--payload", "9999999"}, "payload"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--connect-exists", "-w", "get"}, "--connect-exists applies to the connect workload"},
		{[]string{"--probe-min", "3"}, "--probe-min needs --probe"},
		{[]string{"--rate", "-5"}, "rate must be in"},
		{[]string{"--rate", "100", "-w", "connect"}, "rate applies to request/reply workloads"},
		{[]string{"--server-pids", "12,x"}, `--server-pids: "x" is not a process id`},
		{[]string{"--addr", closed, "--probe", "/x", "--timeout", "300ms"}, "no answer within 300ms"},
		{[]string{"--addr", closed, "--timeout", "2s"}, "connection refused"},
	} {
		_, _, err := runBenchCLI(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("bench %v: %v, want an error containing %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestBenchProbe(t *testing.T) {
	addr := startInProcess(t)
	// 40 nodes under /p/c, as the create workload leaves them.
	if _, _, err := runBenchCLI("--addr", addr, "-w", "create", "--ops", "40", "--warmup", "0s", "--root", "/p",
		"--no-cleanup", "--progress", "0"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runBenchCLI("--addr", addr, "--probe", "/p/c", "--probe-min", "40", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res bench.ProbeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if res.Children != 40 || res.Attempts != 1 || res.Waited <= 0 {
		t.Fatalf("probe: %+v", res)
	}
	out, _, err = runBenchCLI("--addr", addr, "--probe", "/p/c")
	if err != nil || !strings.Contains(out, "getAllChildrenNumber(/p/c) = 40 after ") {
		t.Fatalf("probe table: %v %q", err, out)
	}
	// More than there are: it waits, and gives up at --timeout.
	if _, _, err := runBenchCLI("--addr", addr, "--probe", "/p/c", "--probe-min", "41", "--timeout", "500ms"); err == nil ||
		!strings.Contains(err.Error(), "fewer than 41") {
		t.Fatalf("probe for 41: %v", err)
	}
}
