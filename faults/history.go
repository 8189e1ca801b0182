package faults

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Outcome of one operation as its client saw it.
type Outcome int

const (
	OK      Outcome = iota // acknowledged
	Failed                 // definitely not applied (e.g. BadVersion)
	Unknown                // ConnectionLoss, timeout: may or may not have applied
)

// Op is one recorded operation.
type Op struct {
	Client   int
	Workload string
	Kind     string // read, write, cas, create, incr
	Key      string
	Value    int64
	Expect   int32 // cas: the version expected
	Call     time.Time
	Return   time.Time
	Outcome  Outcome
	OutValue int64 // read: the value read
	Version  int32 // the version read or written
	Path     string
	Server   string // register, set, counter: the address the client was connected to at the return
	Err      string // register: the error of an operation that failed or whose outcome is unknown
}

// History collects the operations of a run, from many goroutines, and
// when the nemesis struck.
type History struct {
	mu         sync.Mutex
	ops        []Op
	faults     [][2]time.Time // [injected, ended]
	faultSince time.Time      // a fault under way (FaultBegins), not yet in faults
}

// AddFault records a fault from start to end (its restart, resume, heal).
func (h *History) AddFault(start, end time.Time) {
	h.mu.Lock()
	h.faults = append(h.faults, [2]time.Time{start, end})
	h.faultSince = time.Time{}
	h.mu.Unlock()
}

// FaultBegins notes a fault under way since start until its AddFault: the
// checkers that wait "from the last fault" keep waiting while it lasts (a
// slow power cycle restarts nodes for minutes before the fault ends).
func (h *History) FaultBegins(start time.Time) {
	h.mu.Lock()
	h.faultSince = start
	h.mu.Unlock()
}

// LastFaultBefore returns the end of the last fault injected before t
// (zero if none; t itself while a fault injected before t is under way).
func (h *History) LastFaultBefore(t time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.faultSince.IsZero() && h.faultSince.Before(t) {
		return t
	}
	var last time.Time
	for _, f := range h.faults {
		if f[0].Before(t) && f[1].After(last) {
			last = f[1]
		}
	}
	return last
}

// FaultDuring reports whether a fault was under way at some time in
// [from, to].
func (h *History) FaultDuring(from, to time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.faults {
		if !f[0].After(to) && !f[1].Before(from) {
			return true
		}
	}
	return false
}

func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns a copy of the operations of workload w (all if empty).
func (h *History) Ops(w string) []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Op
	for _, op := range h.ops {
		if w == "" || op.Workload == w {
			out = append(out, op)
		}
	}
	return out
}

// pinnedClients is the first client ID of the writers pinned to one node
// each (Run): IDs below it are the workloads' clients, which may move.
const pinnedClients = 3000

// WriteGap is the longest time between consecutive acknowledged writes
// (of any client and workload) within [from, to], counting from from and
// up to to: the write unavailability around a fault.
func (h *History) WriteGap(from, to time.Time) time.Duration {
	start, end := h.WriteGapSpan(from, to)
	return end.Sub(start)
}

// WriteGapSpan is where WriteGap's longest gap lies: the acknowledgement
// (or from) it starts after and the one (or to) that ends it, so a round's
// gap can be placed in the nodes' logs.
func (h *History) WriteGapSpan(from, to time.Time) (start, end time.Time) {
	var acks []time.Time
	for _, op := range h.Ops("") {
		if op.Kind != "read" && op.Outcome == OK && !op.Return.Before(from) && !op.Return.After(to) {
			acks = append(acks, op.Return)
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
	acks = append(acks, to)
	prev := from
	start, end = from, from
	for _, t := range acks {
		if t.Sub(prev) > end.Sub(start) {
			start, end = prev, t
		}
		prev = t
	}
	return start, end
}

// WritersOn counts, per server address, the register, set and counter
// clients whose last operation before at returned from that server: where
// the writers were when a write gap began (all of them on a paused node
// wait for their library's timeout together).
func (h *History) WritersOn(at time.Time) map[string]int {
	last := map[int]Op{}
	for _, op := range h.Ops("") {
		if op.Server == "" || op.Return.After(at) {
			continue
		}
		if prev, ok := last[op.Client]; !ok || op.Return.After(prev.Return) {
			last[op.Client] = op
		}
	}
	on := map[string]int{}
	for _, op := range last {
		on[op.Server]++
	}
	return on
}

// ClientStall is the longest time one client waited between two of its
// acknowledged operations (or from from / to to) within [from, to]. The
// sessions workload's clients are left out: each of their rounds waits for
// a session to close and its watch to fire by design; so are the ttl
// workload's, each held to one node, the set writers pinned to one node
// (pinnedClients on), and the leases workload's, which hold a lease for
// seconds between operations.
func (h *History) ClientStall(from, to time.Time) time.Duration {
	by := map[int][]time.Time{}
	for _, op := range h.Ops("") {
		if op.Workload == "sessions" || op.Workload == "ttl" || op.Workload == "leases" || op.Client >= pinnedClients {
			continue // pinned writers cannot move: their node's downtime is no stall of a client that could
		}
		if op.Outcome == OK && !op.Return.Before(from) && !op.Return.After(to) {
			key := op.Client
			by[key] = append(by[key], op.Return)
		}
	}
	worst := time.Duration(0)
	for _, acks := range by {
		sort.Slice(acks, func(i, j int) bool { return acks[i].Before(acks[j]) })
		prev := from
		for _, t := range acks {
			worst = max(worst, t.Sub(prev))
			prev = t
		}
		worst = max(worst, to.Sub(prev))
	}
	return worst
}

// violationLog collects a workload checker's violations. Its mutex also
// guards the state of the workload that embeds it, which its clients
// record and its Check reads (violateLocked is for code holding it).
type violationLog struct {
	mu         sync.Mutex
	violations []string
}

func (v *violationLog) violate(format string, args ...any) {
	v.mu.Lock()
	v.violateLocked(format, args...)
	v.mu.Unlock()
}

func (v *violationLog) violateLocked(format string, args ...any) {
	v.violations = append(v.violations, fmt.Sprintf(format, args...))
}

// list returns a copy of the violations so far.
func (v *violationLog) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.violations...)
}
