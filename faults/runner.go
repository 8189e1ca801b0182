package faults

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Nemesis is one fault: Inject starts it against a running cluster and
// returns the function that ends it (restart, resume, heal).
type Nemesis struct {
	Name   string
	Hold   time.Duration // how long the fault lasts
	Inject func(c Cluster) (end func() error, err error)
	// Needs says what the cluster must offer (isolate, restart, access to
	// a stopped node's files).
	NeedsIsolate, NeedsRestart, NeedsDisk bool
	// NeedsTmpfs: node 2's data on a tmpfs of its own (root only).
	NeedsTmpfs bool
	// NeedsClock: a node's wall clock is skewed (zkbridge's wallclock).
	NeedsClock bool
	// SessionsSurvive: no node is unreachable during the fault, so no
	// client's session may expire.
	SessionsSurvive bool
	// NoFault: nothing is broken (load only); the checkers' bounds that
	// allow for a fault do not apply.
	NoFault bool
	// Long: only in the long run (make chaos), to keep the short one short.
	Long bool
	// Rounds, when set, caps the faults per run (a slow power cycle takes
	// minutes each).
	Rounds int
}

// killAll kills every node of c at once (a power cut).
func killAll(c Cluster) error {
	for i := range c.Addrs() {
		if err := c.Kill(i); err != nil {
			return err
		}
	}
	return nil
}

func pick(c Cluster, leader bool) (int, error) {
	l, err := c.Leader(10 * time.Second)
	if err != nil || leader {
		return l, err
	}
	return (l + 1 + rand.IntN(len(c.Addrs())-1)) % len(c.Addrs()), nil
}

// diskNode picks the leader or a follower of a zkbridge cluster for a
// disk fault; other systems have none to inject.
func diskNode(c Cluster, leader bool) (*Zkbridge, int, error) {
	z, ok := c.(*Zkbridge)
	if !ok {
		return nil, 0, fmt.Errorf("%s has no disk faults", c.Name())
	}
	i, err := pick(c, leader)
	return z, i, err
}

// Nemeses returns the suite's faults; pause holds a paused node for hold,
// longer than an election timeout; the slow power cycle restarts the nodes
// one at a time, cycleGap to 1.5 × cycleGap apart.
func Nemeses(hold, cycleGap time.Duration) []Nemesis {
	kill := func(leader bool) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			i, err := pick(c, leader)
			if err != nil {
				return nil, err
			}
			if err := c.Kill(i); err != nil {
				return nil, err
			}
			return func() error { return c.Restart(i) }, nil
		}
	}
	pause := func(leader bool) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			i, err := pick(c, leader)
			if err != nil {
				return nil, err
			}
			if err := c.Pause(i); err != nil {
				return nil, err
			}
			return func() error { return c.Resume(i) }, nil
		}
	}
	isolate := func(c Cluster) (func() error, error) {
		i, err := pick(c, true)
		if err != nil {
			return nil, err
		}
		if err := c.Isolate(i); err != nil {
			return nil, err
		}
		return c.Heal, nil
	}
	// isolateFollower puts a follower in the minority; bridge cuts the
	// leader from one follower only, the third node talking to both.
	isolateFollower := func(c Cluster) (func() error, error) {
		i, err := pick(c, false)
		if err != nil {
			return nil, err
		}
		if err := c.Isolate(i); err != nil {
			return nil, err
		}
		return c.Heal, nil
	}
	bridge := func(c Cluster) (func() error, error) {
		z, ok := c.(interface{ CutLinks(pairs ...[2]int) error })
		if !ok {
			return nil, fmt.Errorf("%s cannot be partitioned link by link", c.Name())
		}
		l, err := pick(c, true)
		if err != nil {
			return nil, err
		}
		f := (l + 1 + rand.IntN(len(c.Addrs())-1)) % len(c.Addrs())
		if err := z.CutLinks([2]int{l, f}); err != nil {
			return nil, err
		}
		return c.Heal, nil
	}
	// tear kills a follower, damages its disk with damage and restarts it.
	tear := func(damage func(z *Zkbridge, i int) (string, error)) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			z, i, err := diskNode(c, false)
			if err != nil {
				return nil, err
			}
			if err := c.Kill(i); err != nil {
				return nil, err
			}
			if _, err := damage(z, i); err != nil {
				return nil, err
			}
			return func() error { return c.Restart(i) }, nil
		}
	}
	// tornWrite kills a follower in the middle of a Raft log write and
	// tears that write (see CrashMidWrite); restarted, it must serve.
	tornWrite := func(c Cluster) (func() error, error) {
		z, i, err := diskNode(c, false)
		if err != nil {
			return nil, err
		}
		if _, err := z.CrashMidWrite(i); err != nil {
			return nil, err
		}
		return func() error { return c.Restart(i) }, nil
	}
	// garble kills a follower and writes junk at its Raft log's tail. A
	// record that fails its checksum may be an acknowledged entry, so the
	// node must refuse to start (as etcd's WAL and ZooKeeper's txn log
	// do) rather than cut it, or come up serving its peers' state (the
	// replica check). Once it refused, the intact file is put back.
	garble := func(c Cluster) (func() error, error) {
		z, i, err := diskNode(c, false)
		if err != nil {
			return nil, err
		}
		if err := c.Kill(i); err != nil {
			return nil, err
		}
		path, before, err := z.GarbleRaftLog(i)
		if err != nil {
			return nil, err
		}
		if err := c.Restart(i); err != nil {
			return nil, err
		}
		return func() error {
			if !z.WaitExit(i, 10*time.Second) {
				return nil // it runs: the replica check decides
			}
			// It refused in one line naming the file, not with a panic.
			if out := z.Output(i); !strings.Contains(out, "refuses to start") || strings.Contains(out, "goroutine ") {
				return fmt.Errorf("node %d stopped on its garbled Raft log without its one-line refusal: %s", z.nodes[i].id, z.lastProblem(i))
			}
			if err := os.WriteFile(path, before, 0o640); err != nil {
				return err
			}
			return c.Restart(i)
		}, nil
	}
	// damage kills a follower and damages a state machine file or its
	// newest Raft snapshot file (DamageState); restarted, it must refuse in
	// one line, or serve its peers' state (the replica check). Once it
	// refused, its state is put back.
	damage := func(c Cluster) (func() error, error) {
		z, i, err := diskNode(c, false)
		if err != nil {
			return nil, err
		}
		if err := c.Kill(i); err != nil {
			return nil, err
		}
		what, restore, err := z.DamageState(i)
		if err != nil {
			return nil, err
		}
		if err := c.Restart(i); err != nil {
			return nil, err
		}
		return func() error {
			if !z.WaitExit(i, 10*time.Second) {
				z.notes = append(z.notes, fmt.Sprintf("node %d served after its %s was damaged", z.nodes[i].id, what))
				return nil // it runs: the replica check decides
			}
			if out := z.Output(i); !strings.Contains(out, "refuses to start") || strings.Contains(out, "goroutine ") {
				return fmt.Errorf("node %d stopped on its damaged %s without its one-line refusal: %s", z.nodes[i].id, what, z.lastProblem(i))
			}
			z.notes = append(z.notes, fmt.Sprintf("node %d refused to start on its damaged %s: %s", z.nodes[i].id, what, z.lastProblem(i)))
			if err := restore(); err != nil {
				return err
			}
			return c.Restart(i)
		}, nil
	}
	// slow delays every log sync of the leader or a follower by 200 ms
	// (a disk or volume that became slow).
	slow := func(leader bool) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			z, i, err := diskNode(c, leader)
			if err != nil {
				return nil, err
			}
			if err := z.SlowDisk(i, 200*time.Millisecond); err != nil {
				return nil, err
			}
			return func() error { return z.SlowDisk(i, 0) }, nil
		}
	}
	// full fills the tmpfs that holds node 2's data (StartZkbridgeTmpfs)
	// for the hold, then frees it. A node that died of it is restarted, as
	// its supervisor would.
	full := func(c Cluster) (func() error, error) {
		z, ok := c.(*Zkbridge)
		if !ok || len(z.tmpfs) == 0 {
			return nil, fmt.Errorf("%s has no tmpfs node", c.Name())
		}
		const victim = 1
		if err := z.FillDisk(victim); err != nil {
			return nil, err
		}
		return func() error {
			if err := z.FreeDisk(victim); err != nil {
				return err
			}
			// zkbridge waits out ENOSPC (package diskfull); a node that
			// died of it anyway (a failed sync still stops it) is counted
			// and fails the round, and is restarted as a supervisor would.
			if z.WaitExit(victim, 2*time.Second) {
				z.crashedOnFullDisk++
				z.fullDiskExit = z.lastProblem(victim)
				return z.Restart(victim)
			}
			return nil
		}, nil
	}
	// jump sets the leader's or a follower's wall clock ahead (sign 1) or
	// behind (-1) by seconds to minutes for the hold, then back in step:
	// its stamps (mtime) jump, and a leader's clock would decide TTLs if
	// wall time did.
	jump := func(leader bool, sign int) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			z, ok := c.(*Zkbridge)
			if !ok {
				return nil, fmt.Errorf("%s has no skewable clock", c.Name())
			}
			i, err := pick(c, leader)
			if err != nil {
				return nil, err
			}
			sizes := []time.Duration{7 * time.Second, 90 * time.Second, 5 * time.Minute}
			if err := z.SkewClock(i, time.Duration(sign)*sizes[rand.IntN(len(sizes))]); err != nil {
				return nil, err
			}
			return func() error { return z.SkewClock(i, 0) }, nil
		}
	}
	// powerCycle kills every node at once and starts them again one by
	// one in random order, apart by up to a second.
	powerCycle := func(c Cluster) (func() error, error) {
		n := len(c.Addrs())
		if err := killAll(c); err != nil {
			return nil, err
		}
		return func() error {
			for _, i := range rand.Perm(n) {
				if err := c.Restart(i); err != nil {
					return err
				}
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
			}
			return nil
		}, nil
	}
	// powerCycleSlow kills every node at once and starts them again one
	// at a time, cycleGap or more apart (a minute in the long run):
	// the first waits alone, without a quorum; it must stay up (not exit
	// for want of a quorum) and the cluster serve once two are back.
	powerCycleSlow := func(c Cluster) (func() error, error) {
		n := len(c.Addrs())
		if err := killAll(c); err != nil {
			return nil, err
		}
		return func() error {
			var started []int
			for k, i := range rand.Perm(n) {
				if k > 0 {
					time.Sleep(cycleGap + time.Duration(rand.Int64N(int64(cycleGap/2))))
				}
				if z, ok := c.(*Zkbridge); ok {
					for _, j := range started {
						if z.WaitExit(j, 10*time.Millisecond) {
							return fmt.Errorf("node %d exited while it waited for its peers after a power cycle: %s", z.nodes[j].id, z.lastProblem(j))
						}
					}
				}
				if err := c.Restart(i); err != nil {
					return err
				}
				// When each came back (UTC, as the nodes log): the write
				// gap's end less the second restart is how soon a quorum
				// served.
				fmt.Printf("%s power-cycle-slow: node %d restarted at %s (%d of %d)\n", c.Name(), i+1, time.Now().UTC().Format("15:04:05.000"), k+1, n)
				started = append(started, i)
			}
			return nil
		}, nil
	}
	none := func(Cluster) (func() error, error) { return func() error { return nil }, nil }
	// both strikes with a and then b at once, and ends them in reverse.
	both := func(a, b func(Cluster) (func() error, error)) func(Cluster) (func() error, error) {
		return func(c Cluster) (func() error, error) {
			endA, err := a(c)
			if err != nil {
				return nil, err
			}
			endB, err := b(c)
			if err != nil {
				return nil, errors.Join(err, endA())
			}
			return func() error { return errors.Join(endB(), endA()) }, nil
		}
	}
	// mixed picks one of the single faults at random each round.
	singles := []func(Cluster) (func() error, error){kill(true), kill(false), pause(true), pause(false), isolate, isolateFollower, bridge, slow(true)}
	mixed := func(c Cluster) (func() error, error) { return singles[rand.IntN(len(singles))](c) }
	return []Nemesis{
		{Name: "none", Hold: hold, Inject: none, Long: true, NoFault: true, SessionsSurvive: true},
		{Name: "kill-leader", Hold: hold, Inject: kill(true), NeedsRestart: true},
		{Name: "kill-follower", Hold: hold, Inject: kill(false), NeedsRestart: true},
		{Name: "pause-leader", Hold: hold, Inject: pause(true)},
		{Name: "pause-follower", Hold: hold, Inject: pause(false)},
		{Name: "isolate-leader", Hold: hold, Inject: isolate, NeedsIsolate: true},
		{Name: "isolate-follower", Hold: hold, Inject: isolateFollower, NeedsIsolate: true},
		{Name: "bridge", Hold: hold, Inject: bridge, NeedsIsolate: true},
		{Name: "slow-disk-leader", Hold: hold, Inject: slow(true), NeedsDisk: true},
		{Name: "slow-disk-follower", Hold: hold, Inject: slow(false), NeedsDisk: true, Long: true},
		{Name: "torn-raft-log", Hold: hold, Inject: tornWrite, NeedsDisk: true},
		{Name: "garbled-raft-log", Hold: hold, Inject: garble, NeedsDisk: true},
		{Name: "corrupt-snapshot", Hold: hold, Inject: damage, NeedsDisk: true},
		{Name: "torn-state-flush", Hold: hold, Inject: tear((*Zkbridge).UnfinishedStateFlush), NeedsDisk: true, Long: true},
		{Name: "clock-leader-ahead", Hold: hold, Inject: jump(true, 1), NeedsClock: true, SessionsSurvive: true},
		{Name: "clock-follower-behind", Hold: hold, Inject: jump(false, -1), NeedsClock: true, SessionsSurvive: true},
		{Name: "clock-leader-behind", Hold: hold, Inject: jump(true, -1), NeedsClock: true, SessionsSurvive: true, Long: true},
		{Name: "clock-follower-ahead", Hold: hold, Inject: jump(false, 1), NeedsClock: true, SessionsSurvive: true, Long: true},
		{Name: "power-cycle", Hold: hold, Inject: powerCycle, NeedsRestart: true, NeedsDisk: true},
		{Name: "power-cycle-slow", Hold: hold, Inject: powerCycleSlow, NeedsRestart: true, NeedsDisk: true, Rounds: 1},
		{Name: "slow-leader+pause-follower", Hold: hold, Inject: both(slow(true), pause(false)), NeedsDisk: true, Long: true},
		{Name: "kill-follower+bridge", Hold: hold, Inject: both(kill(false), bridge), NeedsRestart: true, NeedsIsolate: true, Long: true},
		{Name: "mixed", Hold: hold, Inject: mixed, NeedsRestart: true, NeedsIsolate: true, NeedsDisk: true, Long: true},
		{Name: "disk-full", Hold: hold, Inject: full, NeedsDisk: true, NeedsTmpfs: true},
	}
}

// Workloads returns the suite's workloads.
func Workloads() []Workload {
	return []Workload{registers{keys: 3}, set{}, counter{}, &sessions{}, &ttlNodes{}, &leases{}}
}

// zkbridgeTick is the tick of the clusters the suite starts (the server's
// default).
const zkbridgeTick = 2 * time.Second

// zkbridgeTTLLate bounds how long after the later of its last write and
// the last fault a zkbridge TTL node may stay: its TTL, the leader's
// first sighting and its next pass (1 s each, --reaper-interval 1s), an
// election after the fault (a power cycle's last restart), the client's
// poll, and room for a loaded host.
const zkbridgeTTLLate = workloadTTL + 8*time.Second

// Config shapes one run.
type Config struct {
	Clients   int           // per workload
	Warmup    time.Duration // load before the first fault
	Cooldown  time.Duration // load after a fault ended
	Rounds    int           // faults per nemesis
	Artifacts string        // where failing histories' visualisations go
	Log       io.Writer     // progress lines
}

// Row is one line of the result table.
type Row struct {
	System, Workload, Nemesis string
	Ops, OK, Unknown, Failed  int
	Violations                []string
	WriteGaps, ClientStalls   []time.Duration
	Elections, Drops          int // zkbridge: leader changes and dropped messages over the run
}

// Run drives every workload against c while nemesis n strikes cfg.Rounds
// times, reads the final state, stops c (Close) and checks the histories.
// It returns one row per workload.
func Run(c Cluster, n Nemesis, cfg Config) ([]Row, error) {
	var h History
	stop := make(chan struct{})
	var wg sync.WaitGroup
	setup, err := dialClient(1000, c.Addrs())
	if err != nil {
		return nil, err
	}
	defer setup.close()
	ws := Workloads()
	for _, w := range ws {
		z, isZkbridge := c.(*Zkbridge)
		switch w := w.(type) {
		case *ttlNodes:
			if isZkbridge {
				w.lateBound = zkbridgeTTLLate
			}
		case *leases:
			if isZkbridge {
				w.addrs, w.tick = z.NativeAddrs(), zkbridgeTick
			}
		}
		if err := w.Setup(setup.conn); err != nil {
			return nil, fmt.Errorf("%s setup: %w", w.Name(), err)
		}
	}
	// zkbridge's change feed is checked against the set workload.
	var feed *feedCheck
	if z, ok := c.(*Zkbridge); ok {
		if feed, err = startFeed(z.NativeAddrs()); err != nil {
			return nil, err
		}
	}
	for k, w := range ws {
		if err := runClients(w, c.Addrs(), k*cfg.Clients, cfg.Clients, &h, stop, &wg); err != nil {
			close(stop)
			wg.Wait()
			return nil, err
		}
		// One more set writer pinned to each node (it knows no other
		// address), so that some writer is always on every live node: the
		// write gap then measures the cluster, not where the client
		// library's failover happened to gather the other writers (all of
		// them on a paused node wait out their library's timeout however
		// soon the cluster writes again; their stall is ClientStall's).
		if w.Name() == "set" {
			for i, a := range c.Addrs() {
				if err := runClients(w, []string{a}, pinnedClients+i, 1, &h, stop, &wg); err != nil {
					close(stop)
					wg.Wait()
					return nil, err
				}
			}
		}
	}
	var gaps, stalls []time.Duration
	var runErr error
	expiries.reset()
	time.Sleep(cfg.Warmup)
	rounds := cfg.Rounds
	if n.Rounds > 0 && n.Rounds < rounds {
		rounds = n.Rounds
	}
	for r := 0; r < rounds && runErr == nil; r++ {
		start := time.Now()
		if !n.NoFault {
			h.FaultBegins(start)
		}
		end, err := n.Inject(c)
		if err != nil {
			runErr = fmt.Errorf("%s: inject: %w", n.Name, err)
			break
		}
		time.Sleep(n.Hold)
		if err := end(); err != nil {
			runErr = fmt.Errorf("%s: end: %w", n.Name, err)
			break
		}
		if !n.NoFault {
			h.AddFault(start, time.Now())
		}
		time.Sleep(cfg.Cooldown)
		gapStart, gapEnd := h.WriteGapSpan(start, time.Now())
		gaps = append(gaps, gapEnd.Sub(gapStart))
		stalls = append(stalls, h.ClientStall(start, time.Now()))
		if cfg.Log != nil {
			// The fault's start and the gap's ends in wall-clock time
			// (UTC, as the nodes log) place a round in the node logs.
			fmt.Fprintf(cfg.Log, "%s %s round %d: write gap %v (%s to %s; fault at %s), longest client stall %v\n", c.Name(), n.Name, r+1, gaps[len(gaps)-1].Round(time.Millisecond),
				gapStart.UTC().Format("15:04:05.000"), gapEnd.UTC().Format("15:04:05.000"), start.UTC().Format("15:04:05.000"), stalls[len(stalls)-1].Round(time.Millisecond))
			if gapEnd.Sub(gapStart) > 500*time.Millisecond {
				// Where the writers were: a gap that only the clients of
				// the faulted node saw is their library's timeout.
				on := h.WritersOn(gapStart)
				var where []string
				for i, a := range c.Addrs() {
					where = append(where, fmt.Sprintf("node %d: %d", i+1, on[a]))
				}
				fmt.Fprintf(cfg.Log, "%s %s round %d: register, set and counter clients by node at the gap's start: %s\n", c.Name(), n.Name, r+1, strings.Join(where, ", "))
			}
		}
	}
	close(stop)
	wg.Wait()
	if runErr != nil {
		return nil, runErr
	}
	// Check on a fresh session, after a sync, so the reads see every write.
	check, err := dialClient(2000, c.Addrs())
	if err != nil {
		return nil, err
	}
	defer check.close()
	for _, p := range []string{"/set", "/counter", "/reg0"} {
		_, _ = check.conn.Sync(p)
	}
	var rows []Row
	for _, w := range ws {
		row := Row{System: c.Name(), Workload: w.Name(), Nemesis: n.Name, WriteGaps: gaps, ClientStalls: stalls}
		for _, op := range h.Ops(w.Name()) {
			row.Ops++
			switch op.Outcome {
			case OK:
				row.OK++
			case Unknown:
				row.Unknown++
			case Failed:
				row.Failed++
			}
		}
		if cfg.Log != nil && row.Unknown > 0 && w.Name() == "register" {
			fmt.Fprintf(cfg.Log, "%s %s: register operations of unknown outcome by error: %s\n", c.Name(), n.Name, unknownCauses(h.Ops(w.Name())))
		}
		row.Violations = w.Check(check.conn, &h, cfg.Artifacts)
		rows = append(rows, row)
	}
	rows = append(rows, Row{System: c.Name(), Workload: "replicas", Nemesis: n.Name, Violations: checkReplicas(c.Addrs(), c.Down)})
	if feed != nil {
		rows = append(rows, Row{System: c.Name(), Workload: "feed", Nemesis: n.Name, Violations: feed.check(check.conn, &h)})
	}
	if n.SessionsSurvive {
		row := Row{System: c.Name(), Workload: "expiry", Nemesis: n.Name}
		for _, e := range expiries.take() {
			row.Violations = append(row.Violations, fmt.Sprintf("expiry: client %d's session 0x%x expired at %s though every node was reachable", e.client, e.session, e.at.Format("15:04:05.000")))
		}
		rows = append(rows, row)
	}
	check.close()
	c.Close()
	for i, w := range ws {
		if hc, ok := w.(historyChecker); ok {
			rows[i].Violations = append(rows[i].Violations, hc.CheckHistory(&h, cfg.Artifacts)...)
		}
	}
	return rows, nil
}

// PrintTable writes the result table: one line per system, workload and
// nemesis, summed over its runs (a long run repeats each nemesis).
func PrintTable(w io.Writer, rows []Row) {
	type key struct{ sys, wl, nem string }
	type sum struct{ runs, ops, ok, unknown, failed, violations int }
	sums := map[key]*sum{}
	var order []key
	for _, r := range rows {
		k := key{r.System, r.Workload, r.Nemesis}
		s := sums[k]
		if s == nil {
			s = &sum{}
			sums[k] = s
			order = append(order, k)
		}
		s.runs++
		s.ops += r.Ops
		s.ok += r.OK
		s.unknown += r.Unknown
		s.failed += r.Failed
		s.violations += len(r.Violations)
	}
	fmt.Fprintf(w, "%-10s %-9s %-26s %4s %7s %7s %7s %7s %10s\n", "system", "workload", "nemesis", "runs", "ops", "ok", "indet", "failed", "violations")
	for _, k := range order {
		s := sums[k]
		fmt.Fprintf(w, "%-10s %-9s %-26s %4d %7d %7d %7d %7d %10d\n", k.sys, k.wl, k.nem, s.runs, s.ops, s.ok, s.unknown, s.failed, s.violations)
	}
	for _, r := range rows {
		for _, v := range r.Violations {
			fmt.Fprintf(w, "VIOLATION %s %s %s: %s\n", r.System, r.Workload, r.Nemesis, v)
		}
	}
}

// Summary is the unavailability of one system under one nemesis.
type Summary struct {
	System, Nemesis       string
	GapMedian, GapMax     time.Duration
	StallMedian, StallMax time.Duration
	Rounds                int
	Elections, Drops      int // zkbridge only: leader changes, dropped messages
}

func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[len(s)-1]
}

// Summarize folds rows (one per workload, each carrying the run's gaps)
// into one line per system and nemesis.
func Summarize(rows []Row) []Summary {
	type key struct{ sys, nem string }
	gaps, stalls := map[key][]time.Duration{}, map[key][]time.Duration{}
	counts := map[key][2]int{}
	var order []key
	seen := map[key]bool{}
	for _, r := range rows {
		if r.Workload != "register" {
			continue // every workload's row carries the same run's numbers
		}
		k := key{r.System, r.Nemesis}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
		counts[k] = [2]int{counts[k][0] + r.Elections, counts[k][1] + r.Drops}
		gaps[k] = append(gaps[k], r.WriteGaps...)
		stalls[k] = append(stalls[k], r.ClientStalls...)
	}
	var out []Summary
	for _, k := range order {
		s := Summary{System: k.sys, Nemesis: k.nem, Rounds: len(gaps[k]), Elections: counts[k][0], Drops: counts[k][1]}
		s.GapMedian, s.GapMax = medianMax(gaps[k])
		s.StallMedian, s.StallMax = medianMax(stalls[k])
		out = append(out, s)
	}
	return out
}

// PrintSummary writes the unavailability table.
func PrintSummary(w io.Writer, sums []Summary) {
	fmt.Fprintf(w, "%-10s %-26s %6s %12s %12s %14s %14s %9s %7s\n", "system", "nemesis", "rounds", "gap median", "gap max", "stall median", "stall max", "elections", "drops")
	for _, s := range sums {
		el, dr := "-", "-"
		if s.System == "zkbridge" {
			el, dr = fmt.Sprint(s.Elections), fmt.Sprint(s.Drops)
		}
		fmt.Fprintf(w, "%-10s %-26s %6d %12v %12v %14v %14v %9s %7s\n", s.System, s.Nemesis, s.Rounds,
			s.GapMedian.Round(time.Millisecond), s.GapMax.Round(time.Millisecond), s.StallMedian.Round(time.Millisecond), s.StallMax.Round(time.Millisecond), el, dr)
	}
}

// unknownCauses counts the operations of unknown outcome by their error,
// most frequent first ("connection closed: 7, ...").
func unknownCauses(ops []Op) string {
	count := map[string]int{}
	for _, op := range ops {
		if op.Outcome == Unknown {
			count[op.Err]++
		}
	}
	causes := make([]string, 0, len(count))
	for e := range count {
		causes = append(causes, e)
	}
	sort.Slice(causes, func(i, j int) bool {
		if count[causes[i]] != count[causes[j]] {
			return count[causes[i]] > count[causes[j]]
		}
		return causes[i] < causes[j]
	})
	out := make([]string, len(causes))
	for i, e := range causes {
		out[i] = fmt.Sprintf("%s: %d", e, count[e])
	}
	return strings.Join(out, ", ")
}
