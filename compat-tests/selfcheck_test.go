package compattests

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCompatSelfCheck runs the whole suite the way `zkbridge compat` does
// (several scenarios at once, tolerant transcripts, both sides together)
// with ZooKeeper as both the reference and the candidate: two ZooKeeper
// servers started alike. Every scenario must come out equal, which shows
// the suite is deterministic: a difference here would be noise in every
// real comparison. Only the scenarios that need reconfig enabled are
// skipped (TestCompatReconfig runs them). It also audits the scenarios'
// declarations: one seen to use a need (TTL, the super user, the reaper,
// a four-letter word, reconfig) it does not declare fails.
func TestCompatSelfCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ZooKeeper servers")
	}
	var zks [2]*ZooKeeper
	var errs [2]error
	var wg sync.WaitGroup
	for i := range zks {
		wg.Add(1)
		go func() { defer wg.Done(); zks[i], errs[i] = StartZooKeeper() }()
	}
	wg.Wait()
	for i, z := range zks {
		if z != nil {
			defer z.Stop()
		}
		if errs[i] != nil {
			t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", errs[i])
		}
	}
	ref, cand := suiteTarget("zookeeper-1", zks[0].Addr), suiteTarget("zookeeper-2", zks[1].Addr)
	start := time.Now()
	results := Compare(context.Background(), Scenarios(), ref, cand, Options{Parallel: selfCheckParallel})
	byID := map[string]*Scenario{}
	for _, sc := range Scenarios() {
		byID[sc.ID()] = sc
	}
	for _, r := range results {
		sc := byID[r.ID]
		switch {
		case r.Status == Skipped && sc.Needs&NeedReconfig != 0:
		case r.Status != Equal:
			t.Errorf("%s: %s against ZooKeeper: %s\n%s", r.ID, r.Status, r.Reason, Diff(r.Reference, r.Candidate, ref.Name, cand.Name, 0))
		}
		if err := auditNeeds(sc, r); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nZooKeeper against ZooKeeper, %d at once, %.0f s\n", selfCheckParallel, time.Since(start).Seconds())
	WriteTable(&b, results)
	WriteSkips(&b, results)
	fmt.Fprint(os.Stdout, b.String())
	t.Log(b.String())
}

// selfCheckParallel is how many scenarios TestCompatSelfCheck runs at once.
const selfCheckParallel = 8

// auditNeeds fails a scenario that used what it does not declare.
func auditNeeds(sc *Scenario, r Result) error {
	declared := sc.Needs
	if declared&NeedNoReconfig != 0 {
		declared |= NeedReconfig // a reconfig the servers refuse
	}
	if extra := r.Used &^ declared; extra != 0 {
		return fmt.Errorf("uses %s without declaring it in Needs", extra)
	}
	for _, w := range r.Words {
		if !slices.Contains(sc.Words, w) {
			return fmt.Errorf("sends the four-letter word %s without declaring it in Words", w)
		}
	}
	return nil
}

// TestScenarioDeclarations checks the registry without servers: unique
// ids, a Check for every declared difference, words only with Need4lw.
func TestScenarioDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		if seen[sc.ID()] {
			t.Errorf("scenario %s registered twice", sc.ID())
		}
		seen[sc.ID()] = true
		if sc.Differs != "" && sc.Check == nil {
			t.Errorf("%s: declared difference without a Check", sc.ID())
		}
		if (len(sc.Words) > 0) != (sc.Needs&Need4lw != 0) {
			t.Errorf("%s: Words %v with needs %s", sc.ID(), sc.Words, sc.Needs)
		}
		for _, w := range sc.Words {
			if !slices.Contains(AllWords, w) {
				t.Errorf("%s: word %s is not in AllWords (the probe would not look for it)", sc.ID(), w)
			}
		}
	}
	if len(seen) < 200 {
		t.Errorf("%d scenarios registered; the suite has more than 200", len(seen))
	}
}

// TestTolerantTranscript checks how a tolerant transcript names the zxid
// of a read: by the latest own transaction at or before it.
func TestTolerantTranscript(t *testing.T) {
	for _, tolerant := range []bool{false, true} {
		tr := NewTranscript()
		if tolerant {
			tr.Tolerant()
		}
		tr.Logf("read %s", tr.ReadZxid(5)) // before any own transaction
		tr.Logf("write %s", tr.Zxid(10))
		tr.Logf("read %s", tr.ReadZxid(10))
		tr.Logf("read %s", tr.ReadZxid(17)) // others wrote meanwhile
		tr.Logf("write %s", tr.Zxid(20))
		tr.Logf("read %s", tr.ReadZxid(0))
		want := []string{"read z1", "write z2", "read z2", "read z3", "write z4", "read 0"}
		if tolerant {
			want = []string{"read z0", "write z1", "read z1", "read z1", "write z2", "read 0"}
		}
		if got := tr.Lines(); !slices.Equal(got, want) {
			t.Errorf("tolerant=%v: %q, want %q", tolerant, got, want)
		}
	}
}
