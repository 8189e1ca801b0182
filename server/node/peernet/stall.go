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
const (
	stallCheckEvery = 20 * time.Millisecond
	stallThreshold  = 500 * time.Millisecond
)

// watchStalls runs until stop closes.
func (t *Transport) watchStalls(stop <-chan struct{}) {
	tick := time.NewTicker(stallCheckEvery)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		gap := now.Sub(last)
		last = now
		if gap < stallThreshold {
			continue
		}
		n := t.closeIncoming()
		t.stalls.Add(1)
		t.log.Warn().Dur("stalled", gap).Int("connections", n).
			Msg("this node did not run for a while (paused or starved); closed its incoming peer connections to discard their stale backlog")
	}
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
