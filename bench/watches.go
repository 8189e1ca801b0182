package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// WatchesResult is what the watches workload measured.
type WatchesResult struct {
	Watches  int     `json:"watches"`  // one-shot watches set
	Paths    int     `json:"paths"`    // distinct nodes watched
	Sessions int     `json:"sessions"` // sessions setting them
	ArmS     float64 `json:"arm_s"`    // time to set them all (pipelined getData with watch)
	// RSS of the server processes (ServerPIDs, summed) with the sessions
	// open, before and after the watches were set; bytes per watch is the
	// growth over the watches.
	RSSBeforeMB   float64 `json:"rss_before_mb,omitempty"`
	RSSAfterMB    float64 `json:"rss_after_mb,omitempty"`
	BytesPerWatch float64 `json:"rss_bytes_per_watch,omitempty"`
}

// watches runs the mass-watch workload: Connections sessions set Watches
// one-shot data watches (getData with watch) over the Keyspace nodes,
// session i on a run of consecutive nodes from i·Keyspace/Connections, so
// that each node is watched by about Watches/Keyspace sessions. The unit
// is a watch set (its latency the getData's); the result also says what
// the servers' RSS grew by per watch. The hook's "armed" phase runs with
// every watch in place.
func (r *runner) watches() ([]*connStats, *WatchesResult, error) {
	cfg := r.cfg
	conns, err := r.dialAll(cfg.Connections, cfg.Outstanding, nil)
	if err != nil {
		return nil, nil, err
	}
	defer closeAll(conns)
	res := &WatchesResult{Watches: cfg.Watches, Sessions: cfg.Connections}
	rss := func() (int64, error) {
		var sum int64
		for _, pid := range cfg.ServerPIDs {
			v, err := readRSS(pid)
			if err != nil {
				return 0, fmt.Errorf("server pid %d: %w", pid, err)
			}
			sum += v
		}
		return sum, nil
	}
	before, err := rss()
	if err != nil {
		return nil, nil, err
	}
	if err := r.hook("before"); err != nil {
		return nil, nil, err
	}
	r.measureFrom = time.Now()
	stride := max(len(r.keys)/cfg.Connections, 1)
	stats := make([]*connStats, len(conns))
	watched := make([]bool, len(r.keys))
	var wg sync.WaitGroup
	for i, c := range conns {
		n := cfg.Watches / cfg.Connections
		if i < cfg.Watches%cfg.Connections {
			n++
		}
		st := &connStats{}
		stats[i] = st
		from := i * stride
		for j := range n {
			watched[(from+j)%len(r.keys)] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := zkproto.GetDataRequest{Watch: true}
			done := func(cl *call, rp *reply) {
				r.completed.Add(1)
				s := &st.ops[OpArm]
				if rp.err == nil {
					s.hist.Record(rp.at.Sub(cl.start))
				}
				if rp.hdr.Err == zkproto.ErrOK {
					s.ok++
				} else {
					r.failed.Add(1)
					s.fail(rp.hdr.Err.Name())
				}
				if rp.at.After(st.last) {
					st.last = rp.at
				}
			}
			for j := range n {
				if r.ctx.Err() != nil {
					break
				}
				req.Path = r.keys[(from+j)%len(r.keys)]
				if c.send(zkproto.OpGetData, &req, &call{op: OpArm, measured: true, done: done}) != nil {
					break
				}
			}
			c.wait(cfg.Timeout)
		}()
	}
	wg.Wait()
	for _, w := range watched {
		if w {
			res.Paths++
		}
	}
	res.ArmS = time.Since(r.measureFrom).Seconds()
	r.say("watches: %d set in %.1f s; settling for %v", cfg.Watches, res.ArmS, cfg.Warmup)
	if !r.sleep(cfg.Warmup) {
		return stats, res, nil
	}
	after, err := rss()
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.ServerPIDs) > 0 {
		res.RSSBeforeMB, res.RSSAfterMB = float64(before)/1e6, float64(after)/1e6
		res.BytesPerWatch = float64(after-before) / float64(cfg.Watches)
	}
	if err := r.hook("armed"); err != nil {
		return nil, nil, err
	}
	return stats, res, nil
}

// recursive runs the persistent-recursive-watch workload: one more session
// adds a persistent recursive watch on /, and the set workload runs
// (paced by Rate); every setData's event is matched to it by path and its
// delivery timed from the setData's send to the event's arrival. Events
// that do not arrive within Timeout after the load count as errors.
func (r *runner) recursive() ([]*connStats, error) {
	type sent struct {
		at       time.Time
		measured bool
	}
	var (
		mu      sync.Mutex
		pending = map[string][]sent{}
		st      connStats
		left    int
		drained = make(chan struct{}, 1)
	)
	onEvent := func(ev zkproto.WatcherEvent, at time.Time) {
		if ev.Type != zkproto.EventNodeDataChanged {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		q := pending[ev.Path]
		if len(q) == 0 {
			return
		}
		s := q[0]
		if len(q) == 1 {
			delete(pending, ev.Path)
		} else {
			pending[ev.Path] = q[1:]
		}
		left--
		if s.measured {
			st.ops[OpEvent].ok++
			st.ops[OpEvent].hist.Record(at.Sub(s.at))
			if at.After(st.last) {
				st.last = at
			}
		}
		if left == 0 {
			select {
			case drained <- struct{}{}:
			default:
			}
		}
	}
	watcher, err := dial(r.cfg.TLS, r.cfg.Addrs[len(r.cfg.Addrs)-1], 2, r.cfg.SessionTimeout, r.cfg.Timeout, onEvent)
	if err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	defer watcher.close()
	var addErr zkproto.ErrCode
	req := zkproto.AddWatchRequest{Path: "/", Mode: zkproto.AddWatchPersistentRecursive}
	if err := watcher.send(zkproto.OpAddWatch, &req, &call{done: func(_ *call, rp *reply) { addErr = rp.hdr.Err }}); err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	watcher.wait(r.cfg.Timeout)
	if addErr != zkproto.ErrOK {
		return nil, fmt.Errorf("addWatch / persistent recursive: %s", addErr.Name())
	}
	r.onSent = func(path string, at time.Time, measured bool) {
		mu.Lock()
		pending[path] = append(pending[path], sent{at, measured})
		left++
		mu.Unlock()
	}
	workers, err := r.load()
	var stats []*connStats
	for _, w := range workers {
		stats = append(stats, &w.stats)
	}
	if err != nil {
		return stats, err
	}
	mu.Lock()
	waiting := left
	mu.Unlock()
	if waiting > 0 {
		t := time.NewTimer(r.cfg.Timeout)
		select {
		case <-drained:
		case <-t.C:
		case <-r.ctx.Done():
		}
		t.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, q := range pending {
		for _, s := range q {
			if s.measured {
				st.ops[OpEvent].fail(errEventTimeout)
			}
		}
	}
	r.onSent = nil
	return append(stats, &st), nil
}
