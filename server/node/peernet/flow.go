package peernet

import (
	"sync"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"
)

// Flow control towards a slow peer.
//
// dragonboat's leader sends a follower one Replicate per proposal batch
// and another (often empty, to carry the commit index) each time the
// commit index moves, plus a Heartbeat per tick and per ReadIndex batch:
// about 3,000 messages a second per follower under the fault suite's
// load, however fast the follower consumes them (a follower in its
// replicate state has no in-flight limit). The follower's step worker
// takes them from a receive queue of 1024 messages between its log
// saves; when a save takes 200 ms (a slow disk) or the step worker is
// starved, more than 1024 arrive in between and dragonboat drops the rest
// ("dropped an incoming message": 12,420 in one slow-disk-follower run).
// Dropped Replicates then fail the follower's log match, the leader falls
// back to probing, and dropped heartbeats and answers on a leader can
// cost an election.
//
// Every Replicate and Heartbeat a follower takes from its queue is
// answered with exactly one ReplicateResp or HeartbeatResp, so the sender
// knows how many of its messages a peer replica has not yet consumed: sent
// minus answered. Once that reaches flowLimit, further Replicates and
// Heartbeats for that replica are held here and merged: a Replicate whose
// entries follow on from the held one's (same term) is appended to it, and
// held heartbeats become one (the newest ReadIndex context, which confirms
// the earlier ones, and the highest commit). Held Replicates go out
// (merged: a handful of messages instead of hundreds) once the peer has
// answered down to flowResume; the merged heartbeat goes out every
// flowHeartbeatEvery, so the peer keeps hearing its leader between its
// ticks. An answer that never comes (the peer dropped or lost the
// messages, a partition, a restart) must not hold messages forever: once
// Replicates have been held for flowRelease, or nothing was answered for
// that long, the count starts again from zero, and a connection that is
// lost or replaced starts it from zero too. Both are needed: after a
// partition heals, the lost messages are never answered while the merged
// heartbeats are, one for one, so the count neither falls to flowResume
// nor goes flowRelease without an answer, and the held Replicates would
// wait for ever (the isolated follower never caught up: issue 34, found 12).
const (
	flowLimit          = 256
	flowResume         = flowLimit / 2
	flowHeartbeatEvery = 20 * time.Millisecond
	flowRelease        = 300 * time.Millisecond
	// flowMergeBytes bounds one merged Replicate's entries.
	flowMergeBytes = 4 << 20
)

// flowKey names one replica of one shard at a peer.
type flowKey struct{ shard, replica uint64 }

// flowControlled: the message types a peer answers one for one.
func flowControlled(t raftpb.MessageType) bool {
	return t == raftpb.Replicate || t == raftpb.Heartbeat
}

// isAnswer: the answers to flowControlled messages.
func isAnswer(t raftpb.MessageType) bool {
	return t == raftpb.ReplicateResp || t == raftpb.HeartbeatResp
}

// flowState is what a transport knows of one peer replica.
type flowState struct {
	outstanding int       // sent and not yet answered
	lastAnswer  time.Time // or when counting (re)started
	heldSince   time.Time // when admit first refused a message; zero while none is held
	conn        *batchConn
}

// flows tracks every peer replica this transport sends to.
type flows struct {
	mu sync.Mutex
	by map[flowKey]*flowState
}

func (f *flows) state(k flowKey) *flowState {
	if f.by == nil {
		f.by = map[flowKey]*flowState{}
	}
	s := f.by[k]
	if s == nil {
		s = &flowState{lastAnswer: time.Now()}
		f.by[k] = s
	}
	return s
}

// admit counts one message to k if k has room for it.
func (f *flows) admit(k flowKey, conn *batchConn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state(k)
	s.conn = conn
	if s.outstanding >= flowLimit {
		if s.heldSince.IsZero() {
			s.heldSince = time.Now()
		}
		return false
	}
	s.outstanding++
	return true
}

// admitHeld counts n held messages to k if k answered down to flowResume,
// or (counting starts again) has not answered for flowRelease or has had
// messages held for that long.
func (f *flows) admitHeld(k flowKey, n int, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state(k)
	switch {
	case s.outstanding <= flowResume:
	case now.Sub(s.lastAnswer) >= flowRelease,
		!s.heldSince.IsZero() && now.Sub(s.heldSince) >= flowRelease:
		s.outstanding, s.lastAnswer = 0, now
	default:
		return false
	}
	s.outstanding += n
	s.heldSince = time.Time{}
	return true
}

// count counts n messages to k sent regardless of room (the merged
// heartbeat); drained says nothing is held for k any more.
func (f *flows) count(k flowKey, n int, drained bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state(k)
	s.outstanding += n
	if drained {
		s.heldSince = time.Time{}
	}
}

// answered notes an answer from replica k; it wakes the connection that
// holds messages for k once k has room again.
func (f *flows) answered(k flowKey) {
	f.mu.Lock()
	s := f.by[k]
	if s == nil {
		f.mu.Unlock()
		return
	}
	if s.outstanding > 0 {
		s.outstanding--
	}
	s.lastAnswer = time.Now()
	conn := s.conn
	wake := s.outstanding <= flowResume
	f.mu.Unlock()
	if wake && conn != nil {
		conn.wake()
	}
}

// reset starts counting afresh for the replicas conn sends to (its
// connection was lost or replaced: what was in flight is gone).
func (f *flows) reset(conn *batchConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for _, s := range f.by {
		if s.conn == conn {
			s.outstanding, s.lastAnswer, s.heldSince = 0, now, time.Time{}
		}
	}
}

// forget drops conn's replicas (the connection closed).
func (f *flows) forget(conn *batchConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, s := range f.by {
		if s.conn == conn {
			delete(f.by, k)
		}
	}
}

// held is what a connection holds for one peer replica.
type held struct {
	replicates []raftpb.Message // in order, merged where they follow on
	heartbeat  *raftpb.Message  // the merged heartbeat
	size       int              // entry bytes of the last replicate
}

// add merges m into h.
func (h *held) add(m raftpb.Message) {
	if m.Type == raftpb.Heartbeat {
		if h.heartbeat == nil {
			c := m
			h.heartbeat = &c
			return
		}
		hb := h.heartbeat
		hb.Term = max(hb.Term, m.Term)
		hb.Commit = max(hb.Commit, m.Commit)
		if m.Hint != 0 || m.HintHigh != 0 {
			hb.Hint, hb.HintHigh = m.Hint, m.HintHigh
		}
		return
	}
	size := 0
	for i := range m.Entries {
		size += m.Entries[i].SizeUpperLimit()
	}
	if n := len(h.replicates); n > 0 {
		last := &h.replicates[n-1]
		if last.Term == m.Term && last.From == m.From &&
			m.LogIndex == last.LogIndex+uint64(len(last.Entries)) &&
			h.size+size <= flowMergeBytes {
			last.Entries = append(last.Entries, m.Entries...)
			last.Commit = max(last.Commit, m.Commit)
			h.size += size
			return
		}
	}
	// Held past SendMessageBatch's return: the entries are copied out of
	// dragonboat's slice (their payloads are not changed once proposed).
	m.Entries = append([]raftpb.Entry(nil), m.Entries...)
	h.replicates = append(h.replicates, m)
	h.size = size
}
