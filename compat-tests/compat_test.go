package compattests

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestCompat(t *testing.T) {
	if testing.Short() {
		t.Skip("compat suite needs a real ZooKeeper; skipped in -short mode")
	}
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer zk.Stop()
	zb, err := StartZkbridge(t.TempDir())
	if err != nil {
		t.Fatalf("start zkbridge: %v", err)
	}
	defer zb.Stop()
	compareAll(t, "standalone", suiteTarget("zookeeper", zk.Addr), suiteTarget("zkbridge", zb.Addr), Mode{}, nil)
}

// suiteTarget is a server the suite started, with the suite's settings.
func suiteTarget(name string, addrs ...string) *Target {
	return &Target{Name: name, Addrs: addrs, Settings: SuiteSettings()}
}

// compareAll runs every scenario against ZooKeeper (the oracle) and
// zkbridge, one subtest each, one at a time and with exact (not tolerant)
// transcripts, as both servers are the suite's alone, and prints the
// tally per area. Every difference must be a declared one; when both run
// a declared difference, they must still differ.
func compareAll(t *testing.T, title string, zk, zb *Target, mode Mode, beforeEach func(t *testing.T)) {
	var results []Result
	for _, sc := range Scenarios() {
		t.Run(sc.ID(), func(t *testing.T) {
			if beforeEach != nil && sc.Unmet(zk, zb) == "" {
				beforeEach(t)
			}
			r := CompareOne(sc, zk, zb, mode)
			results = append(results, r)
			judge(t, sc, r, zk.Name, zb.Name)
		})
	}
	report(t, title, results)
}

// judge fails t unless r is what the suite wants of zkbridge: equal to
// ZooKeeper, or the scenario's declared difference.
func judge(t *testing.T, sc *Scenario, r Result, zkName, zbName string) {
	t.Helper()
	switch r.Status {
	case Skipped:
		t.Skip(r.Reason)
	case Failed:
		t.Fatalf("%s\n%s:\n%s\n%s:\n%s", r.Reason, zkName, strings.Join(r.Reference, "\n"), zbName, strings.Join(r.Candidate, "\n"))
	case Differs:
		t.Fatalf("%s differs from %s: %s\n%s", zbName, zkName, r.Reason, Diff(r.Reference, r.Candidate, zkName, zbName, 0))
	case Documented:
		t.Logf("deliberate difference: %s", r.Reason)
	case Equal:
		if sc.Differs != "" {
			t.Errorf("declared difference %q: %s and %s answer alike now (update the scenario and docs/compatibility.md)", sc.Differs, zbName, zkName)
		}
	}
}

func report(t *testing.T, title string, results []Result) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", title)
	WriteTable(&b, results)
	WriteSkips(&b, results)
	fmt.Fprint(os.Stdout, b.String())
	t.Log(b.String())
}

// diff renders two transcripts side by side from their first difference
// ("" when they are equal).
func diff(want, got []string) string { return Diff(want, got, "zookeeper", "zkbridge", 0) }
