package compattests

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// registry holds every scenario; area files add theirs in init.
var registry []*Scenario

func register(scs ...*Scenario) { registry = append(registry, scs...) }

// runOn runs sc against one server (addrs: its nodes' client addresses)
// and returns its transcript.
func runOn(sc *Scenario, addrs []string, server string) ([]string, []string) {
	s := &S{T: NewTranscript(), Addrs: addrs, Addr: addrs[0], Root: sc.Root(), Server: server, nodes: newPlacement(len(addrs))}
	// The scenario's root is made by a setup session outside the transcript.
	if setup, _, err := Connect(addrs[0], "setup", NewTranscript(), DialOptions{}); err == nil {
		_, _ = setup.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: s.Root, ACL: zkproto.OpenACLUnsafe()})
		setup.EndSession(2 * time.Second)
		setup.Close()
	} else {
		s.Failf("setup session: %v", err)
	}
	s.nodes.did(0)
	run(s, sc)
	s.closeAll()
	if s.madeTTL {
		// A TTL node left behind would be reaped a minute later, a
		// transaction in another scenario's window.
		removeTree(addrs[0], s.Root)
	}
	return s.T.Lines(), s.failed
}

// run runs the scenario; a panic (a scenario using a client that did not
// connect) fails it instead of the whole test binary, whose servers
// would outlive it.
func run(s *S, sc *Scenario) {
	defer func() {
		if r := recover(); r != nil {
			s.Failf("scenario panicked: %v", r)
		}
	}()
	sc.Run(s)
}

// removeTree deletes path and everything under it, outside any transcript.
func removeTree(addr, path string) {
	c, _, err := Connect(addr, "teardown", NewTranscript(), DialOptions{})
	if err != nil {
		return
	}
	defer c.Close()
	var walk func(p string)
	walk = func(p string) {
		if r, err := c.Call(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: p}); err == nil {
			if ch, ok := r.Body.(*zkproto.GetChildrenResponse); ok {
				for _, name := range ch.Children {
					walk(p + "/" + name)
				}
			}
		}
		_, _ = c.Call(zkproto.OpDelete, &zkproto.DeleteRequest{Path: p, Version: -1})
	}
	walk(path)
	c.EndSession(2 * time.Second)
}

type tally struct{ scenarios, match, deliberate, mismatch, skipped int }

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
	compareAll(t, "standalone", []string{zk.Addr}, []string{zb.Addr}, nil)
}

// compareAll runs every registered scenario against ZooKeeper (the
// oracle) and zkbridge, each given by its nodes' client addresses, and
// prints the tally per area. With more than one node, scenarios marked
// StandaloneOnly are skipped.
func compareAll(t *testing.T, title string, zk, zb []string, beforeEach func(t *testing.T)) {
	cluster := len(zk) > 1
	ordered := append([]*Scenario(nil), registry...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Fresh && !ordered[j].Fresh })
	seen := map[string]bool{}
	tallies := map[string]*tally{}
	var skipped []string
	for _, sc := range ordered {
		if seen[sc.ID()] {
			t.Fatalf("scenario %s registered twice", sc.ID())
		}
		seen[sc.ID()] = true
		ta := tallies[sc.Area]
		if ta == nil {
			ta = &tally{}
			tallies[sc.Area] = ta
		}
		ta.scenarios++
		if cluster && sc.StandaloneOnly != "" {
			ta.skipped++
			skipped = append(skipped, fmt.Sprintf("%s: %s", sc.ID(), sc.StandaloneOnly))
			continue
		}
		t.Run(sc.ID(), func(t *testing.T) {
			if beforeEach != nil {
				beforeEach(t)
			}
			compareOne(t, sc, ta, zk, zb)
		})
	}
	report(t, title, tallies, skipped)
}

// compareOne runs one scenario and tallies its outcome: zkbridge's
// transcript must equal ZooKeeper's (and pass the scenario's Check, if it
// has one), or pass the Check of a deliberate difference.
func compareOne(t *testing.T, sc *Scenario, ta *tally, zk, zb []string) {
	if sc.Differs != "" {
		got, failed := runOn(sc, zb, "zkbridge")
		for _, f := range failed {
			t.Error(f)
		}
		if sc.Check == nil {
			t.Fatalf("deliberate difference %q has no Check", sc.Differs)
		}
		if err := sc.Check(got); err != nil {
			ta.mismatch++
			t.Fatalf("zkbridge (deliberately differing: %s): %v\n%s", sc.Differs, err, strings.Join(got, "\n"))
		}
		ta.deliberate++
		return
	}
	want, failedZK := runOn(sc, zk, "zookeeper")
	got, failedZB := runOn(sc, zb, "zkbridge")
	for _, f := range append(failedZK, failedZB...) {
		t.Error(f)
	}
	if d := diff(want, got); d != "" {
		ta.mismatch++
		t.Fatalf("zkbridge differs from ZooKeeper:\n%s", d)
	}
	// A Check on a matching scenario guards against both transcripts
	// being equally empty of what the scenario is about.
	if sc.Check != nil {
		if err := sc.Check(want); err != nil {
			ta.mismatch++
			t.Fatalf("both transcripts fail the scenario's check: %v\n%s", err, strings.Join(want, "\n"))
		}
	}
	ta.match++
}

// diff renders the two transcripts side by side from the first difference.
func diff(want, got []string) string {
	n := max(len(want), len(got))
	first := -1
	for i := 0; i < n; i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		mark := "  "
		if w != g {
			mark = "!="
		}
		if i >= first-2 {
			fmt.Fprintf(&b, "%s zookeeper: %s\n   zkbridge:  %s\n", mark, w, g)
		}
	}
	return b.String()
}

func report(t *testing.T, title string, tallies map[string]*tally, skipped []string) {
	areas := make([]string, 0, len(tallies))
	for a := range tallies {
		areas = append(areas, a)
	}
	sort.Strings(areas)
	var b strings.Builder
	var total tally
	row := func(name string, ta *tally) {
		fmt.Fprintf(&b, "%-14s | %9d | %5d | %21d | %8d | %7d\n", name, ta.scenarios, ta.match, ta.deliberate, ta.mismatch, ta.skipped)
	}
	fmt.Fprintf(&b, "\n%s\n%-14s | %9s | %5s | %21s | %8s | %7s\n", title, "area", "scenarios", "match", "deliberate difference", "mismatch", "skipped")
	for _, a := range areas {
		ta := tallies[a]
		row(a, ta)
		total.scenarios += ta.scenarios
		total.match += ta.match
		total.deliberate += ta.deliberate
		total.mismatch += ta.mismatch
		total.skipped += ta.skipped
	}
	row("total", &total)
	for _, sk := range skipped {
		fmt.Fprintf(&b, "skipped %s\n", sk)
	}
	fmt.Fprint(os.Stdout, b.String())
	t.Log(b.String())
}

// contains is a Check helper: every wanted line must appear, in order.
func contains(wanted ...string) func([]string) error {
	return func(lines []string) error {
		i := 0
		for _, l := range lines {
			if i < len(wanted) && strings.Contains(l, wanted[i]) {
				i++
			}
		}
		if i < len(wanted) {
			return fmt.Errorf("missing %q", wanted[i])
		}
		return nil
	}
}
