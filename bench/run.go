package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// errEventTimeout names, in a result's errors, watch events that did not
// arrive within the timeout.
const errEventTimeout = "EventTimeout"

// opStats is what one connection measured for one op. Only the
// connection's reader goroutine (or the watch loop) writes it.
type opStats struct {
	ok   int64
	errs map[string]int64
	hist Histogram
}

func (s *opStats) fail(code string) { s.failN(code, 1) }

func (s *opStats) failN(code string, n int64) {
	if n <= 0 {
		return
	}
	if s.errs == nil {
		s.errs = map[string]int64{}
	}
	s.errs[code] += n
}

type connStats struct {
	ops  [numOps]opStats
	last time.Time // latest measured reply
}

// runner holds one run's shared state.
type runner struct {
	cfg     Config
	ctx     context.Context
	nonce   string // distinguishes this run's created nodes from any earlier run's
	payload []byte
	keys    []string // Keyspace nodes, Fanout per directory
	dirs    []string
	created []string // nodes setup created, parents first (cleanup deletes them)

	measureFrom time.Time
	stopAt      time.Time    // duration mode
	issued      atomic.Int64 // measured ops issued (count mode)
	completed   atomic.Int64 // every completion, warm-up included (progress)
	failed      atomic.Int64 // every error, warm-up included (progress)
	events      atomic.Int64 // watch events received in measured rounds

	// onSent, if set, hears of every setData a worker sends (the
	// recursive workload matches events to them).
	onSent func(path string, at time.Time, measured bool)
}

func (r *runner) path(rel string) string { return r.cfg.Root + rel }

// more reports whether another op should be issued and whether it is
// measured (issued after the warm-up).
func (r *runner) more() (ok, measured bool) {
	if r.ctx.Err() != nil {
		return false, false
	}
	now := time.Now()
	if now.Before(r.measureFrom) {
		return true, false
	}
	if r.cfg.Ops > 0 {
		return r.issued.Add(1) <= r.cfg.Ops, true
	}
	return now.Before(r.stopAt), true
}

// Run runs the configured workload against cfg.Addrs and returns what it
// measured. Cancelling ctx ends the measurement early; the result then
// covers what ran. Errors are returned for settings that cannot work, for
// servers that cannot be reached, and for a setup that fails.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, ctx: ctx, payload: make([]byte, cfg.Payload),
		nonce: strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36*36*36), 36)}
	for i := range r.payload {
		r.payload[i] = byte('a' + i%26)
	}
	if len(cfg.ServerPIDs) > 0 {
		if _, err := sampleProcs(cfg.ServerPIDs); err != nil {
			return nil, fmt.Errorf("server pids: %w", err)
		}
	}
	if err := r.setup(); err != nil {
		r.cleanup(nil)
		return nil, err
	}

	var (
		stats []*connStats
		res   *Result
		err   error
	)
	r.measureFrom = time.Now().Add(cfg.Warmup)
	r.stopAt = r.measureFrom.Add(cfg.Duration)
	var usage *usageSampler
	if cfg.Workload != "sessions" { // it reads the pids for memory, and a storm stops one
		usage = startUsage(cfg.ServerPIDs, r.measureFrom)
	}
	defer usage.abandon()
	stopProgress := r.progress()
	var workers []*worker
	var sessions *SessionsResult
	var watches *WatchesResult
	switch cfg.Workload {
	case "watch":
		stats, err = r.watch()
	case "connect", "churn":
		stats, err = r.connect()
	case "sessions":
		stats, sessions, err = r.sessions()
	case "watches":
		stats, watches, err = r.watches()
	case "recursive":
		stats, err = r.recursive()
	default:
		workers, err = r.load()
		for _, w := range workers {
			stats = append(stats, &w.stats)
		}
	}
	stopProgress()
	if err == nil {
		res = r.result(stats)
		res.Sessions, res.Watches = sessions, watches
		res.Server, err = usage.finish(res.Ops)
	}
	var leftovers []string
	for _, w := range workers {
		leftovers = append(leftovers, w.created...)
	}
	r.cleanup(leftovers)
	return res, err
}

// dialAll opens n sessions spread over the servers round-robin.
func (r *runner) dialAll(n, outstanding int, onEvent func(int) func(zkproto.WatcherEvent, time.Time)) ([]*conn, error) {
	conns := make([]*conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// A few dials at a time: a burst of hundreds of handshakes is not the
	// load being measured.
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var ev func(zkproto.WatcherEvent, time.Time)
			if onEvent != nil {
				ev = onEvent(i)
			}
			conns[i], errs[i] = dial(r.cfg.TLS, r.cfg.Addrs[i%len(r.cfg.Addrs)], outstanding, r.cfg.SessionTimeout, r.cfg.Timeout, ev)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connection %d: %w", i+1, err)
		}
	}
	return conns, nil
}

func closeAll(conns []*conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.close() }()
		}
	}
	wg.Wait()
}

// needsKeys reports whether the workload reads or writes the keyspace.
func (r *runner) needsKeys() bool {
	switch r.cfg.Workload {
	case "create", "watch", "connect", "churn", "sessions":
		return false
	}
	return true
}

// setup creates the root, the directory creates go to, the keyspace (or
// the watched node), pipelined, level by level. Nodes that already exist
// are used as they are and left in place afterwards.
func (r *runner) setup() error {
	c, err := dial(r.cfg.TLS, r.cfg.Addrs[0], setupWindow(r.cfg.Payload), r.cfg.SessionTimeout, r.cfg.Timeout, nil)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer c.close()
	levels := [][]string{{r.cfg.Root}, {r.path("/c"), r.path("/w")}}
	if r.needsKeys() {
		for d := 0; d*r.cfg.Fanout < r.cfg.Keyspace; d++ {
			r.dirs = append(r.dirs, r.path("/d"+strconv.Itoa(d)))
		}
		for i := range r.cfg.Keyspace {
			r.keys = append(r.keys, r.dirs[i/r.cfg.Fanout]+"/k"+strconv.Itoa(i))
		}
		levels = append(levels, r.dirs, r.keys)
	}
	for li, level := range levels {
		var mu sync.Mutex
		var firstErr error
		var made []string
		req := zkproto.CreateRequest{ACL: zkproto.OpenACLUnsafe()}
		for _, p := range level {
			req.Path, req.Data = p, nil
			if li == len(levels)-1 && r.needsKeys() {
				req.Data = r.payload
			}
			err := c.send(zkproto.OpCreate, &req, &call{path: p, done: func(cl *call, rp *reply) {
				mu.Lock()
				defer mu.Unlock()
				switch rp.hdr.Err {
				case zkproto.ErrOK:
					made = append(made, cl.path)
				case zkproto.ErrNodeExists:
				default:
					if firstErr == nil {
						firstErr = fmt.Errorf("setup: create %s: %s", cl.path, rp.hdr.Err.Name())
					}
				}
			}})
			if err != nil {
				return fmt.Errorf("setup: create %s: %w", p, err)
			}
		}
		c.wait(r.cfg.Timeout)
		r.created = append(r.created, made...)
		if firstErr != nil {
			return firstErr
		}
	}
	return nil
}

// setupWindow is how many creates setup pipelines: 256, or fewer with
// large values so that at most setupBytes are in flight, as a client
// loading large values would (256 creates of 1 MB are 256 MB in flight,
// which zkbridge refuses past its in-memory Raft log bound of 256 MB,
// docs/performance.md).
func setupWindow(payload int) int {
	return max(1, min(256, setupBytes/max(payload, 1)))
}

const setupBytes = 32 << 20

// cleanup deletes, if configured, the nodes the workers left (children
// first) and then those setup created, deepest level first.
func (r *runner) cleanup(leftovers []string) {
	if !r.cfg.Cleanup || (len(leftovers) == 0 && len(r.created) == 0) {
		return
	}
	c, err := dial(r.cfg.TLS, r.cfg.Addrs[0], 256, r.cfg.SessionTimeout, r.cfg.Timeout, nil)
	if err != nil {
		return
	}
	defer c.close()
	if r.cfg.Progress != nil && len(leftovers)+len(r.created) > 10000 {
		fmt.Fprintf(r.cfg.Progress, "cleanup: deleting %d nodes\n", len(leftovers)+len(r.created))
	}
	del := func(paths []string) {
		req := zkproto.DeleteRequest{Version: -1}
		for _, p := range paths {
			req.Path = p
			if c.send(zkproto.OpDelete, &req, &call{done: func(*call, *reply) {}}) != nil {
				return
			}
		}
		c.wait(r.cfg.Timeout)
	}
	del(leftovers)
	// r.created is parents first; delete by depth, deepest first, so each
	// batch can be pipelined.
	byDepth := map[int][]string{}
	maxDepth := 0
	for _, p := range r.created {
		d := depth(p)
		byDepth[d] = append(byDepth[d], p)
		maxDepth = max(maxDepth, d)
	}
	for d := maxDepth; d > 0; d-- {
		del(byDepth[d])
	}
}

func depth(p string) int {
	n := 0
	for i := range len(p) {
		if p[i] == '/' {
			n++
		}
	}
	return n
}

// worker drives one connection of a request/reply workload.
type worker struct {
	r     *runner
	id    int
	c     *conn
	rng   *rand.Rand
	seq   int
	stats connStats

	mu      sync.Mutex
	created []string // nodes this connection created and has not deleted
}

// load runs a request/reply workload on Connections sessions.
func (r *runner) load() ([]*worker, error) {
	conns, err := r.dialAll(r.cfg.Connections, r.cfg.Outstanding, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	workers := make([]*worker, len(conns))
	seed := uint64(time.Now().UnixNano())
	var wg sync.WaitGroup
	for i, c := range conns {
		w := &worker{r: r, id: i, c: c, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		workers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	wg.Wait()
	live := 0
	for _, c := range conns {
		if !c.isClosed() {
			live++
		}
	}
	if live == 0 {
		return workers, fmt.Errorf("every connection failed (first: %v)", conns[0].err)
	}
	return workers, nil
}

// fixedOp maps a single-op workload to its op.
var fixedOp = map[string]Op{"create": OpCreate, "set": OpSet, "get": OpGet, "exists": OpExists, "list": OpList, "multi": OpMulti,
	"recursive": OpSet}

func (w *worker) run() {
	r := w.r
	fixed, isFixed := fixedOp[r.cfg.Workload]
	total := r.cfg.Mix.total()
	var (
		create = zkproto.CreateRequest{Data: r.payload, ACL: zkproto.OpenACLUnsafe()}
		del    = zkproto.DeleteRequest{Version: -1}
		set    = zkproto.SetDataRequest{Data: r.payload, Version: -1}
		get    zkproto.GetDataRequest
		exists zkproto.ExistsRequest
		list   zkproto.GetChildrenRequest
		multi  zkproto.MultiRequest
		sets   = make([]zkproto.SetDataRequest, r.cfg.MultiOps)
	)
	for i := range sets {
		sets[i] = zkproto.SetDataRequest{Data: r.payload, Version: -1}
		multi.Ops = append(multi.Ops, zkproto.MultiOp{Type: zkproto.OpSetData, Request: &sets[i]})
	}
	prefix := r.path("/c/") + r.nonce + "-" + strconv.Itoa(w.id) + "-"
	pace := w.pacer()
	for {
		if !pace() {
			break
		}
		ok, measured := r.more()
		if !ok {
			break
		}
		op := fixed
		if !isFixed {
			op = r.cfg.Mix.pick(w.rng.IntN(total))
		}
		if op == OpDelete {
			w.mu.Lock()
			if n := len(w.created); n > 0 {
				del.Path = w.created[n-1]
				w.created = w.created[:n-1]
			} else {
				op = OpCreate // nothing of ours to delete yet
			}
			w.mu.Unlock()
		}
		cl := &call{op: op, measured: measured, done: w.done}
		var code zkproto.OpCode
		var req zkproto.Record
		switch op {
		case OpCreate:
			w.seq++
			create.Path = prefix + strconv.Itoa(w.seq)
			code, req = zkproto.OpCreate, &create
			cl.path = create.Path
		case OpDelete:
			code, req = zkproto.OpDelete, &del
		case OpSet:
			set.Path = w.key()
			code, req = zkproto.OpSetData, &set
		case OpGet:
			get.Path = w.key()
			code, req = zkproto.OpGetData, &get
		case OpExists:
			exists.Path = w.key()
			code, req = zkproto.OpExists, &exists
		case OpList:
			list.Path = r.dirs[w.rng.IntN(len(r.dirs))]
			code, req = zkproto.OpGetChildren, &list
		case OpMulti:
			// Distinct keys: a run of consecutive ones from a random start.
			first := w.rng.IntN(len(r.keys))
			for i := range sets {
				sets[i].Path = r.keys[(first+i)%len(r.keys)]
			}
			code, req = zkproto.OpMulti, &multi
		}
		if w.c.send(code, req, cl) != nil {
			break
		}
		if op == OpSet && r.onSent != nil {
			r.onSent(set.Path, cl.start, measured)
		}
	}
	w.c.wait(r.cfg.Timeout)
}

// pacer returns what worker w calls before each request: with a rate
// set, it waits for the request's turn (each connection sends every
// Connections/Rate, the connections' turns spread over that interval) and
// reports false if the run is cancelled or the connection fails
// meanwhile. Before it waits it flushes the requests buffered so far,
// which would otherwise go out only when the connection's window is full.
// A connection that falls behind (its replies came late) sends its missed
// turns at once, so the rate is kept whenever the server keeps up on
// average; latency is timed from the send.
func (w *worker) pacer() func() bool {
	r := w.r
	if r.cfg.Rate <= 0 {
		return func() bool { return true }
	}
	every := time.Duration(float64(time.Second) * float64(r.cfg.Connections) / r.cfg.Rate)
	next := time.Now().Add(every * time.Duration(w.id) / time.Duration(r.cfg.Connections))
	timer := time.NewTimer(0)
	<-timer.C
	return func() bool {
		wait := time.Until(next)
		next = next.Add(every)
		if wait <= 0 {
			return r.ctx.Err() == nil
		}
		if w.c.flush() != nil {
			return false
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
			return true
		case <-r.ctx.Done():
			timer.Stop()
			return false
		}
	}
}

// deletes reports whether the workload deletes nodes its connections
// created (so they must be remembered even without cleanup).
func (r *runner) deletes() bool { return r.cfg.Workload == "mixed" && r.cfg.Mix[OpDelete] > 0 }

func (w *worker) key() string { return w.r.keys[w.rng.IntN(len(w.r.keys))] }

// done runs in the connection's reader for every reply.
func (w *worker) done(cl *call, rp *reply) {
	r := w.r
	r.completed.Add(1)
	code := rp.hdr.Err
	if code == zkproto.ErrOK && cl.op == OpMulti {
		var resp zkproto.MultiResponse
		if err := zkproto.Unmarshal(rp.body, &resp); err != nil {
			code = zkproto.ErrMarshallingError
		} else {
			code = resp.FirstError()
		}
	}
	if code == zkproto.ErrOK && cl.op == OpCreate && (r.cfg.Cleanup || r.deletes()) {
		w.mu.Lock()
		w.created = append(w.created, cl.path)
		w.mu.Unlock()
	}
	if code != zkproto.ErrOK {
		r.failed.Add(1)
	}
	if !cl.measured {
		return
	}
	st := &w.stats.ops[cl.op]
	if rp.err == nil { // the server answered: its latency counts, errors too
		st.hist.Record(rp.at.Sub(cl.start))
	}
	if code == zkproto.ErrOK {
		st.ok++
	} else {
		st.fail(code.Name())
	}
	if rp.at.After(w.stats.last) {
		w.stats.last = rp.at
	}
}
