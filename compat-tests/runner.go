package compattests

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// registry holds every scenario; area files add theirs in init.
var registry []*Scenario

func register(scs ...*Scenario) { registry = append(registry, scs...) }

// Scenarios returns every scenario of the suite: those that need a fresh
// server first (they must run before anything else writes), then the
// others in the order the area files register them.
func Scenarios() []*Scenario {
	out := append([]*Scenario(nil), registry...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Needs&NeedFresh != 0 && out[j].Needs&NeedFresh == 0
	})
	return out
}

// Target is a server the scenarios run against: a standalone server (one
// address) or an ensemble (every node's client address; a scenario's k-th
// connection goes to node k mod n).
type Target struct {
	Name     string   `json:"name"`
	Addrs    []string `json:"addrs"`
	Settings Settings `json:"settings"`
}

// Status is a scenario's outcome.
type Status string

// The outcomes of a scenario.
const (
	// Equal: the normalised transcripts are the same.
	Equal Status = "equal"
	// Differs: they are not.
	Differs Status = "differs"
	// Documented: they are not, and the candidate does what the
	// scenario's declared difference (Scenario.Differs) says zkbridge
	// does on purpose.
	Documented Status = "documented"
	// Skipped: a server lacks what the scenario needs (Reason).
	Skipped Status = "skipped"
	// Failed: the run itself failed (a server did not take the
	// scenario's setup, a harness error, a panic), or both transcripts
	// miss what the scenario is about (its Check).
	Failed Status = "failed"
)

// Result is one scenario's outcome against a reference and a candidate.
type Result struct {
	ID     string `json:"id"`
	Area   string `json:"area"`
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Reason says why a scenario was skipped or failed, or names the
	// documented difference.
	Reason string `json:"reason,omitempty"`
	// First is the index of the first step where the transcripts differ
	// (-1 when they do not).
	First int `json:"firstDifference"`
	// Reference and Candidate are the normalised transcripts (kept for
	// scenarios that did not come out equal).
	Reference []string `json:"reference,omitempty"`
	Candidate []string `json:"candidate,omitempty"`
	Seconds   float64  `json:"seconds"`
	// Used are the needs the run saw the scenario use (both sides), and
	// Words the four-letter words it sent: an audit of its declaration.
	Used  Need     `json:"-"`
	Words []string `json:"-"`
}

// Mode is how a scenario is run.
type Mode struct {
	// Tolerant transcripts tolerate other clients' transactions (see
	// Transcript): for servers other clients use, and for parallel runs.
	Tolerant bool
	// Together runs the reference's and the candidate's side at once
	// (they are different servers); otherwise one after the other.
	Together bool
	// CandidateOnlyIfDeclared runs a scenario with a declared difference
	// (Differs) against the candidate alone, which must pass its Check:
	// the go tests that know the candidate is zkbridge, and the reference
	// a ZooKeeper whose side of the difference is documented.
	CandidateOnlyIfDeclared bool
}

// side is one server's run of a scenario.
type side struct {
	lines  []string
	failed []string
	used   Need
	words  []string
}

// runOn runs sc against one target and returns its transcript.
func runOn(sc *Scenario, t *Target, super string, reaper time.Duration, tolerant bool) side {
	tr := NewTranscript()
	if tolerant {
		tr.Tolerant()
	}
	s := &S{T: tr, Addrs: t.Addrs, Addr: t.Addrs[0], Root: sc.Root(), Server: t.Name,
		nodes: newPlacement(len(t.Addrs)), super: super, reaper: reaper}
	// The scenario's root is made, and a leftover of an interrupted run
	// removed, by a setup session outside the transcript.
	if err := prepareRoot(s.Addr, s.Root, super); err != nil {
		s.Failf("setup of %s: %v", s.Root, err)
	}
	s.nodes.did(0)
	run(s, sc)
	s.closeAll()
	for _, p := range append(s.extra, s.Root) {
		removeTree(s.Addr, p, super)
	}
	return side{lines: s.T.Lines(), failed: s.failed, used: s.used, words: s.words}
}

// run runs the scenario; a panic (a scenario using a client that did not
// connect) fails it instead of the whole process, whose servers would
// outlive it.
func run(s *S, sc *Scenario) {
	defer func() {
		if r := recover(); r != nil {
			s.Failf("scenario panicked: %v", r)
		}
	}()
	sc.Run(s)
}

// teardownSession connects outside any transcript, as the super user when
// one is known (a scenario's nodes may forbid deleting their children).
func teardownSession(addr, super string) (*Client, error) {
	c, _, err := Connect(addr, "teardown", NewTranscript(), DialOptions{})
	if err != nil {
		return nil, err
	}
	if super != "" {
		_, _ = c.Call(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte(super)})
	}
	return c, nil
}

// prepareRoot removes what an interrupted run left under root and
// creates root afresh.
func prepareRoot(addr, root, super string) error {
	c, err := teardownSession(addr, super)
	if err != nil {
		return err
	}
	defer c.Close()
	deleteTree(c, root)
	r, err := c.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: root, ACL: zkproto.OpenACLUnsafe()})
	c.EndSession(2 * time.Second)
	if err != nil {
		return err
	}
	if r.Header.Err != zkproto.ErrOK {
		return fmt.Errorf("create: %s", r.Header.Err.Name())
	}
	return nil
}

// removeTree deletes path and everything under it, outside any transcript.
func removeTree(addr, path, super string) {
	c, err := teardownSession(addr, super)
	if err != nil {
		return
	}
	defer c.Close()
	deleteTree(c, path)
	c.EndSession(2 * time.Second)
}

// deleteTree deletes path and its descendants through c (nothing when
// path does not exist).
func deleteTree(c *Client, path string) {
	r, err := c.Call(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: path})
	if err != nil || r.Header.Err == zkproto.ErrNoNode {
		return
	}
	if ch, ok := r.Body.(*zkproto.GetChildrenResponse); ok {
		for _, name := range ch.Children {
			deleteTree(c, path+"/"+name)
		}
	}
	_, _ = c.Call(zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: -1})
}

// CompareOne runs sc against ref and cand and judges the transcripts.
func CompareOne(sc *Scenario, ref, cand *Target, mode Mode) Result {
	res := Result{ID: sc.ID(), Area: sc.Area, Name: sc.Name, First: -1}
	start := time.Now()
	super := ref.Settings.Super
	reaper := max(ref.Settings.Reaper, cand.Settings.Reaper)
	if sc.Differs != "" && mode.CandidateOnlyIfDeclared {
		// The reference does not run, so it cannot be harmed: only the
		// candidate's safety counts.
		if why := sc.unmet(ref, cand, cand); why != "" {
			res.Status, res.Reason = Skipped, why
			return res
		}
		got := runOn(sc, cand, super, reaper, mode.Tolerant)
		res.Seconds = time.Since(start).Seconds()
		res.Used, res.Words, res.Candidate = got.used, got.words, got.lines
		switch {
		case len(got.failed) > 0:
			res.Status, res.Reason = Failed, cand.Name+": "+strings.Join(got.failed, "; ")
		case sc.Check == nil:
			res.Status, res.Reason = Failed, "declared difference without a Check"
		default:
			if err := sc.Check(got.lines); err != nil {
				res.Status, res.Reason = Differs, fmt.Sprintf("not the documented difference (%s): %v", sc.Differs, err)
			} else {
				res.Status, res.Reason = Documented, sc.Differs
			}
		}
		return res
	}
	if why := sc.Unmet(ref, cand); why != "" {
		res.Status, res.Reason = Skipped, why
		return res
	}
	var want, got side
	if mode.Together {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); want = runOn(sc, ref, super, reaper, mode.Tolerant) }()
		got = runOn(sc, cand, super, reaper, mode.Tolerant)
		wg.Wait()
	} else {
		want = runOn(sc, ref, super, reaper, mode.Tolerant)
		got = runOn(sc, cand, super, reaper, mode.Tolerant)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Used = want.used | got.used
	res.Words = mergeWords(want.words, got.words)
	res.First = firstDifference(want.lines, got.lines)
	keep := func() { res.Reference, res.Candidate = want.lines, got.lines }
	var failed []string
	for _, f := range want.failed {
		failed = append(failed, ref.Name+": "+f)
	}
	for _, f := range got.failed {
		failed = append(failed, cand.Name+": "+f)
	}
	switch {
	case len(failed) > 0:
		res.Status, res.Reason = Failed, strings.Join(failed, "; ")
		keep()
	case res.First < 0:
		res.Status = Equal
		// A Check on a matching scenario guards against both transcripts
		// being equally empty of what the scenario is about. A declared
		// difference's Check describes the candidate's deliberate answer,
		// which the reference then shares.
		if sc.Check != nil && sc.Differs == "" {
			if err := sc.Check(want.lines); err != nil {
				res.Status, res.Reason = Failed, "both transcripts fail the scenario's check: "+err.Error()
				keep()
			}
		}
	default:
		keep()
		res.Status = Differs
		if sc.Differs != "" {
			if sc.Check == nil {
				res.Status, res.Reason = Failed, "declared difference without a Check"
			} else if err := sc.Check(got.lines); err != nil {
				res.Reason = fmt.Sprintf("not the documented difference (%s): %v", sc.Differs, err)
			} else {
				res.Status, res.Reason = Documented, sc.Differs
			}
		}
	}
	return res
}

func mergeWords(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// firstDifference is the index of the first line where a and b differ
// (one running out counts), -1 when they are equal.
func firstDifference(a, b []string) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

// Options shape a run of many scenarios.
type Options struct {
	// Parallel is how many scenarios run at once (at most 1: one at a
	// time). Scenarios that need fresh servers run first, alone; Serial
	// and NeedExclusive ones run while no other does.
	Parallel int
	// Tolerant forces tolerant transcripts (see Transcript). They are used
	// anyway with Parallel above 1 or a server not known to be exclusive.
	Tolerant bool
	// Sequential runs a scenario's reference side, then its candidate
	// side (default: both at once).
	Sequential bool
	// BeforeEach runs before each scenario (e.g. moving a cluster's
	// leader back); an error fails the scenario.
	BeforeEach func(sc *Scenario) error
	// Done is called after each scenario (from the goroutine that ran it;
	// calls do not overlap).
	Done func(r Result)
}

// ModeFor is the mode Compare runs scenarios in for o against ref and cand.
func ModeFor(o Options, ref, cand *Target) Mode {
	exclusive := ref.Settings.Exclusive && cand.Settings.Exclusive
	return Mode{Tolerant: o.Tolerant || o.Parallel > 1 || !exclusive, Together: !o.Sequential}
}

// Compare runs scenarios against ref and cand and returns their results
// in the order of scenarios. A cancelled ctx skips what has not started.
func Compare(ctx context.Context, scenarios []*Scenario, ref, cand *Target, o Options) []Result {
	mode := ModeFor(o, ref, cand)
	results := make([]Result, len(scenarios))
	var doneMu sync.Mutex
	one := func(i int) {
		sc := scenarios[i]
		var r Result
		switch {
		case ctx.Err() != nil:
			r = Result{ID: sc.ID(), Area: sc.Area, Name: sc.Name, First: -1, Status: Skipped, Reason: "interrupted"}
		case o.BeforeEach != nil && sc.Unmet(ref, cand) == "":
			if err := o.BeforeEach(sc); err != nil {
				r = Result{ID: sc.ID(), Area: sc.Area, Name: sc.Name, First: -1, Status: Failed, Reason: err.Error()}
				break
			}
			r = CompareOne(sc, ref, cand, mode)
		default:
			r = CompareOne(sc, ref, cand, mode)
		}
		results[i] = r
		if o.Done != nil {
			doneMu.Lock()
			o.Done(r)
			doneMu.Unlock()
		}
	}
	// Fresh scenarios first, one at a time, before anything else writes.
	var rest []int
	for i, sc := range scenarios {
		if sc.Needs&NeedFresh != 0 {
			one(i)
		} else {
			rest = append(rest, i)
		}
	}
	workers := max(o.Parallel, 1)
	var gate sync.RWMutex // held for writing by a scenario that must run alone
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if alone(scenarios[i]) {
					gate.Lock()
					one(i)
					gate.Unlock()
				} else {
					gate.RLock()
					one(i)
					gate.RUnlock()
				}
			}
		}()
	}
	for _, i := range rest {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// alone reports whether sc must run while no other scenario does.
func alone(sc *Scenario) bool {
	return sc.Serial || sc.Needs&(NeedExclusive|NeedFresh) != 0
}

// Diff renders the two transcripts side by side from two steps before
// their first difference, at most limit steps (0: to the end), each step
// as the reference's line over the candidate's, "!" marking those that
// differ.
func Diff(want, got []string, refName, candName string, limit int) string {
	first := firstDifference(want, got)
	if first < 0 {
		return ""
	}
	w := max(len(refName), len(candName)) + 1
	var b strings.Builder
	n := max(len(want), len(got))
	from := max(first-2, 0)
	to := n
	if limit > 0 {
		to = min(n, from+limit)
	}
	line := func(ls []string, i int) string {
		if i < len(ls) {
			return ls[i]
		}
		return "(nothing: the transcript ended)"
	}
	for i := from; i < to; i++ {
		a, c := line(want, i), line(got, i)
		mark := " "
		if i >= len(want) || i >= len(got) || a != c {
			mark = "!"
		}
		if mark == " " {
			fmt.Fprintf(&b, "  %4d   %-*s  %s\n", i+1, w, "both:", a)
			continue
		}
		fmt.Fprintf(&b, "%s %4d   %-*s  %s\n", mark, i+1, w, refName+":", a)
		fmt.Fprintf(&b, "         %-*s  %s\n", w, candName+":", c)
	}
	if to < n {
		fmt.Fprintf(&b, "         … %d more steps\n", n-to)
	}
	return b.String()
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
