package bench

import (
	"context"
	"math"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestUsageBetweenIsPerOp(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := procSample{at: t0, cpu: 3 * time.Second, runqueue: time.Second, switches: 1000, threads: 9}
	b := procSample{at: t0.Add(2 * time.Second), cpu: 4 * time.Second, runqueue: 1500 * time.Millisecond, switches: 6000, threads: 10}
	u := usageBetween([]int{7}, a, b, 1000)
	want := ServerUsage{PIDs: []int{7}, CPUPerOp: 1000, RunqueuePerOp: 500, SwitchesPerOp: 5, CPUCoresInUse: 0.5, ThreadsSampled: 10}
	if u.CPUPerOp != want.CPUPerOp || u.RunqueuePerOp != want.RunqueuePerOp || u.SwitchesPerOp != want.SwitchesPerOp ||
		math.Abs(u.CPUCoresInUse-want.CPUCoresInUse) > 1e-9 || u.ThreadsSampled != want.ThreadsSampled {
		t.Fatalf("usage %+v, want %+v", *u, want)
	}
	if z := usageBetween(nil, a, b, 0); z.CPUPerOp != 0 || z.SwitchesPerOp != 0 {
		t.Fatalf("no ops gave per-op figures: %+v", *z)
	}
}

// The fake server runs in the test process, so sampling the test's own
// pid sees the work the run made it do.
func TestRunReportsServerUsage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("server usage is read from Linux's /proc")
	}
	f := startFake(t)
	res, err := Run(context.Background(), Config{Addrs: []string{f.addr()}, Workload: "connect",
		Connections: 2, Ops: 200, Cleanup: true, Timeout: 5 * time.Second, ServerPIDs: []int{os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Server
	if u == nil || u.CPUPerOp <= 0 || u.ThreadsSampled < 1 || u.PIDs[0] != os.Getpid() {
		t.Fatalf("server usage %+v", u)
	}
	if _, err := Run(context.Background(), Config{Addrs: []string{f.addr()}, Workload: "connect",
		Ops: 1, ServerPIDs: []int{1 << 30}}); err == nil {
		t.Fatal("a pid that does not exist was accepted")
	}
}
