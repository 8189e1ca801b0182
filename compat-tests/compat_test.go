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

// runOn runs sc against one server and returns its transcript.
func runOn(sc *Scenario, addr, server string) ([]string, []string) {
	s := &S{T: NewTranscript(), Addr: addr, Root: sc.Root(), Server: server}
	// The scenario's root is made by a setup session outside the transcript.
	if setup, _, err := Connect(addr, "setup", NewTranscript(), DialOptions{}); err == nil {
		_, _ = setup.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: s.Root, ACL: zkproto.OpenACLUnsafe()})
		_, _ = setup.Send(zkproto.OpCloseSession, nil)
		setup.Closed(2 * time.Second)
		setup.Close()
	} else {
		s.Failf("setup session: %v", err)
	}
	sc.Run(s)
	s.closeAll()
	return s.T.Lines(), s.failed
}

type tally struct{ scenarios, match, deliberate, mismatch int }

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

	ordered := append([]*Scenario(nil), registry...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Fresh && !ordered[j].Fresh })
	seen := map[string]bool{}
	tallies := map[string]*tally{}
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
		t.Run(sc.ID(), func(t *testing.T) {
			if sc.Differs != "" {
				got, failed := runOn(sc, zb.Addr, "zkbridge")
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
			want, failedZK := runOn(sc, zk.Addr, "zookeeper")
			got, failedZB := runOn(sc, zb.Addr, "zkbridge")
			for _, f := range append(failedZK, failedZB...) {
				t.Error(f)
			}
			if d := diff(want, got); d != "" {
				ta.mismatch++
				t.Fatalf("zkbridge differs from ZooKeeper:\n%s", d)
			}
			ta.match++
		})
	}
	report(t, tallies)
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

func report(t *testing.T, tallies map[string]*tally) {
	areas := make([]string, 0, len(tallies))
	for a := range tallies {
		areas = append(areas, a)
	}
	sort.Strings(areas)
	var b strings.Builder
	var total tally
	fmt.Fprintf(&b, "\n%-14s | %9s | %5s | %21s | %8s\n", "area", "scenarios", "match", "deliberate difference", "mismatch")
	for _, a := range areas {
		ta := tallies[a]
		fmt.Fprintf(&b, "%-14s | %9d | %5d | %21d | %8d\n", a, ta.scenarios, ta.match, ta.deliberate, ta.mismatch)
		total.scenarios += ta.scenarios
		total.match += ta.match
		total.deliberate += ta.deliberate
		total.mismatch += ta.mismatch
	}
	fmt.Fprintf(&b, "%-14s | %9d | %5d | %21d | %8d\n", "total", total.scenarios, total.match, total.deliberate, total.mismatch)
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
