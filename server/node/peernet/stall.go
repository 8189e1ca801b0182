package peernet

import (
	"time"
)

// A node that was paused (SIGSTOP, a VM stall, a long GC or swap storm)
// finds its incoming peer connections full of what the others sent
// meanwhile: seconds of heartbeats and Replicate messages, thousands of
// them. Read in one go they overflowed dragonboat's receive queue (1024
// messages; "dropped an incoming message"), and the answers to them
// flooded the leader's, which then dropped its healthy followers'
// messages and forwarded proposals: another node's election followed
// (issue 34, defect 2). Everything in that backlog is stale, so a
// transport that notices its process did not run for stallThreshold
// closes its incoming connections, which discards their unread bytes.
// The senders' next write fails, dragonboat marks the node unreachable
// (the leader stops streaming to it and probes it), and the node is
// caught up from its log position as after a reconnect.
//
// The watcher alone was not enough: at SIGCONT every goroutine is runnable
// at once, and the connection readers often ran before the watcher's
// overdue tick, handing dragonboat part of the backlog first (one make test
// run in four still saw 802 "dropped an incoming message" after a resume).
// So the readers check too (stale): while the watcher has not run for
// stallThreshold, a frame read is backlog, and its connection is closed
// without delivering it.
//
// lastRun is the last time the process was seen running: the watcher's
// tick, or a reader that read a frame and found it fresh (not stale). A
// stall is measured from it. The readers' marks come with every heartbeat
// (one per Raft tick from each peer), so the watcher ticks only every
// stallCheckEvery: a stall of stallThreshold is caught as before (nothing
// marks lastRun during it), and what can be mistaken for one is, with
// peer traffic, no longer than before (500 ms less the time since the last
// frame or tick). It ticked every 20 ms, an idle node's most frequent
// wake-up after Raft's own (issue 36, the fixed CPU per round).
const (
	stallCheckEvery = 100 * time.Millisecond
	stallThreshold  = 500 * time.Millisecond
)

// processStart anchors lastRun on the monotonic clock.
var processStart = time.Now()

// watchStalls runs until stop closes.
func (t *Transport) watchStalls(stop <-chan struct{}) {
	tick := time.NewTicker(stallCheckEvery)
	defer tick.Stop()
	t.lastRun.Store(int64(time.Since(processStart)))
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Since(processStart)
		gap := now - time.Duration(t.lastRun.Load())
		if gap < stallThreshold {
			t.lastRun.Store(int64(now))
			continue
		}
		n := t.closeIncoming()
		// Only now: a reader of a connection not yet closed still
		// discards what it reads (stale).
		t.lastRun.Store(int64(time.Since(processStart)))
		t.stalls.Add(1)
		t.log.Warn().Dur("stalled", gap).Int("connections", n).
			Msg("this node did not run for a while (paused or starved); closed its incoming peer connections to discard their stale backlog")
	}
}

// stale reports whether the process was not seen running (lastRun) for
// stallThreshold: it was just resumed (or starved) and the watcher has not
// had its turn yet, so what a reader reads now is backlog. A fresh read
// marks lastRun: the process runs.
func (t *Transport) stale() bool {
	now := int64(time.Since(processStart))
	last := t.lastRun.Load()
	if last == 0 {
		return false // no watcher (tests)
	}
	if time.Duration(now-last) >= stallThreshold {
		return true
	}
	if now > last {
		t.lastRun.CompareAndSwap(last, now) // lost to a newer mark: fine
	}
	return false
}

// closeIncoming closes every incoming connection; their readers end.
func (t *Transport) closeIncoming() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		_ = c.Close()
	}
	return len(t.conns)
}

// Stalls returns how many stalls the transport noticed.
func (t *Transport) Stalls() int64 { return t.stalls.Load() }
