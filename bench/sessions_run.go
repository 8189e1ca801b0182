package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// sessions runs the sessions workload (see sessions.go) and returns the
// pings and resumes it measured.
func (r *runner) sessions() ([]*connStats, *SessionsResult, error) {
	cfg := r.cfg
	res := &SessionsResult{Sessions: cfg.Connections, StormAddr: cfg.StormAddr}
	perNode := len(cfg.ServerPIDs) == len(cfg.Addrs)
	rssBefore := make([]int64, len(cfg.ServerPIDs))
	for i, pid := range cfg.ServerPIDs {
		rssBefore[i], _ = readRSS(pid)
	}

	per := sessionsPerProcess()
	var shares []shareHandle
	defer func() {
		for _, s := range shares {
			s.finish()
		}
	}()
	share := func(first, count int) sessionsShare {
		return sessionsShare{Addrs: cfg.Addrs, First: first, Count: count, SessionTimeout: cfg.SessionTimeout,
			Timeout: cfg.Timeout, StormAddr: cfg.StormAddr, StormWait: cfg.StormWait, ReconnectJitter: cfg.ReconnectJitter}
	}
	start := time.Now()
	if cfg.Connections <= per {
		shares = append(shares, startLocalShare(share(0, cfg.Connections)))
	} else {
		if len(cfg.ChildCommand) == 0 {
			return nil, nil, fmt.Errorf("%d sessions need more open files than this process may have (%d); "+
				"run it from `zkbridge bench`, which splits them over processes", cfg.Connections, per)
		}
		n := (cfg.Connections + per - 1) / per
		size := (cfg.Connections + n - 1) / n
		for first := 0; first < cfg.Connections; first += size {
			c, err := startChildShare(cfg.ChildCommand, share(first, min(size, cfg.Connections-first)))
			if err != nil {
				return nil, nil, err
			}
			shares = append(shares, c)
		}
	}
	res.Processes = len(shares)
	r.say("sessions: opening %d sessions over %d servers from %d process(es)", cfg.Connections, len(cfg.Addrs), len(shares))
	for _, s := range shares {
		if err := s.ready(); err != nil {
			return nil, nil, fmt.Errorf("opening sessions: %w", err)
		}
	}
	res.OpenS = time.Since(start).Seconds()
	r.completed.Add(int64(cfg.Connections))
	r.say("sessions: %d open after %.1f s; settling for %v", cfg.Connections, res.OpenS, cfg.Warmup)
	if !r.sleep(cfg.Warmup) {
		return nil, nil, r.ctx.Err()
	}
	for i, pid := range cfg.ServerPIDs {
		after, err := readRSS(pid)
		if err != nil {
			return nil, nil, fmt.Errorf("server pid %d: %w", pid, err)
		}
		ns := NodeSessions{PID: pid, RSSBeforeMB: float64(rssBefore[i]) / 1e6, RSSAfterMB: float64(after) / 1e6}
		ns.Sessions = cfg.Connections
		if perNode {
			ns.Addr = cfg.Addrs[i]
			ns.Sessions = cfg.Connections / len(cfg.Addrs)
			if i < cfg.Connections%len(cfg.Addrs) {
				ns.Sessions++
			}
		}
		if ns.Sessions > 0 {
			ns.RSSPerSessionKB = float64(after-rssBefore[i]) / 1e3 / float64(ns.Sessions)
		}
		res.PerNode = append(res.PerNode, ns)
	}
	if err := r.hook("held"); err != nil {
		return nil, nil, err
	}
	r.measureFrom = time.Now()
	for _, s := range shares {
		if err := s.command("measure"); err != nil {
			return nil, nil, err
		}
	}
	r.say("sessions: measuring pings for %v", cfg.Duration)
	r.sleep(cfg.Duration)
	measuredUntil := time.Now()
	for _, s := range shares {
		if err := s.command("storm"); err != nil {
			return nil, nil, err
		}
	}
	var killAt time.Time
	if cfg.StormAddr != "" {
		time.Sleep(200 * time.Millisecond) // every share has marked the sessions on StormAddr
		r.say("sessions: storm: the hook stops the server at %s", cfg.StormAddr)
		killAt = time.Now()
		if err := r.hook("storm"); err != nil {
			return nil, nil, err
		}
		res.StormKilled = true
	}
	var ping, resume connStats
	var lastResumed int64
	for _, s := range shares {
		rep, err := s.result()
		if err != nil {
			return nil, nil, err
		}
		ping.ops[OpPing].hist.Merge(&rep.Pings)
		ping.ops[OpPing].ok += int64(rep.Pings.Count())
		ping.ops[OpPing].failN("PingUnanswered", rep.PingTimeouts)
		resume.ops[OpResume].hist.Merge(&rep.Resumes)
		resume.ops[OpResume].ok += int64(rep.Resumed)
		resume.ops[OpResume].failN("SessionExpired", int64(rep.Expired))
		resume.ops[OpResume].failN("NotResumed", int64(rep.Unresolved))
		res.LostBeforeStorm += rep.LostBefore
		res.ExpiredBeforeStorm += rep.ExpiredBefore
		res.Lost += rep.Lost
		res.Resumed += rep.Resumed
		res.Expired += rep.Expired
		res.Unresolved += rep.Unresolved
		lastResumed = max(lastResumed, rep.LastResumedUnixN)
		res.IntervalS = rep.Interval
	}
	if cfg.StormAddr != "" && lastResumed > 0 {
		res.StormS = time.Unix(0, lastResumed).Sub(killAt).Seconds()
	}
	ping.last = measuredUntil
	return []*connStats{&ping, &resume}, res, nil
}

// say prints a progress line, if progress is on.
func (r *runner) say(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}

// sleep waits d or until the run is cancelled; it reports whether the
// whole time passed.
func (r *runner) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// hook runs Config.Hook with the phase as its last argument (and in
// ZKBRIDGE_BENCH_PHASE), bounded by Timeout, and waits for it: the caller's
// moment to measure the servers (memory after a GC) or act on them (stop
// one). No hook: nothing to do.
func (r *runner) hook(phase string) error {
	if r.cfg.testHook != nil {
		return r.cfg.testHook(phase)
	}
	if r.cfg.Hook == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, max(r.cfg.Timeout, time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", r.cfg.Hook+" "+phase)
	cmd.Env = append(cmd.Environ(), "ZKBRIDGE_BENCH_PHASE="+phase)
	out, err := cmd.CombinedOutput()
	if len(out) > 0 && r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "hook %s: %s\n", phase, strings.TrimSpace(string(out)))
	}
	if err != nil {
		return fmt.Errorf("hook %q %s: %w", r.cfg.Hook, phase, err)
	}
	return nil
}
