package peernet

import (
	"context"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
)

// replicate is the leader's Replicate of entry index (one entry, following
// on from index-1) to replica 2 of shard 1.
func replicate(index uint64) raftpb.Message {
	return raftpb.Message{Type: raftpb.Replicate, ShardID: 1, From: 1, To: 2, Term: 3,
		LogIndex: index - 1, LogTerm: 3, Commit: index - 1,
		Entries: []raftpb.Entry{{Index: index, Term: 3, Cmd: []byte("write")}}}
}

// A peer replica that does not answer (its step worker blocked in a slow
// fsync) used to be sent every Replicate and Heartbeat the leader made,
// about 3,000 a second, and dropped what its 1024-message receive queue
// could not hold: 12,420 "dropped an incoming message" in one
// slow-disk-follower run. Now no more than flowLimit unanswered messages
// go to it; the rest are held and merged, and go out, merged, once it
// answers (or after flowRelease without an answer). Every entry arrives,
// in order, in a few hundred messages instead of thousands.
func TestSlowPeerGetsMergedMessagesNotAFlood(t *testing.T) {
	var r received
	peer := startTransport(t, &r)
	sender := startTransport(t, &received{})
	conn, err := sender.GetConnection(context.Background(), peer.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const entries = 3000
	hint := uint64(0)
	for i := uint64(1); i <= entries; i++ {
		batch := raftpb.MessageBatch{SourceAddress: "127.0.0.1:1", BinVer: 1, Requests: []raftpb.Message{replicate(i)}}
		if i%10 == 0 {
			hint = i // a ReadIndex context
			batch.Requests = append(batch.Requests, raftpb.Message{Type: raftpb.Heartbeat, ShardID: 1, From: 1, To: 2, Term: 3, Commit: i - 5, Hint: hint})
		}
		if err := conn.SendMessageBatch(batch); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing answered yet: at most flowLimit messages went out, plus the
	// merged heartbeats of the flusher's ticks.
	time.Sleep(100 * time.Millisecond)
	if n := countMessages(&r, raftpb.Replicate); n > flowLimit {
		t.Errorf("%d Replicates sent to a replica that answered none (limit %d)", n, flowLimit)
	}
	if n := countMessages(&r, raftpb.Heartbeat); n == 0 {
		t.Errorf("no heartbeat reached the slow replica while its Replicates were held")
	}
	// It answers what it got: the held Replicates go out, merged.
	got := countMessages(&r, raftpb.Replicate) + countMessages(&r, raftpb.Heartbeat)
	for i := 0; i < got; i++ {
		sender.flows.answered(flowKey{shard: 1, replica: 2})
	}
	waitFor(t, "every entry at the peer", func() bool { return lastEntry(&r) == entries })
	// Entries arrive once each, in order, each message following on.
	next := uint64(1)
	replicates := 0
	lastHint := uint64(0)
	r.mu.Lock()
	for _, b := range r.batches {
		for _, m := range b.Requests {
			switch m.Type {
			case raftpb.Replicate:
				replicates++
				if m.LogIndex != next-1 {
					t.Fatalf("a Replicate after index %d, want after %d", m.LogIndex, next-1)
				}
				for _, e := range m.Entries {
					if e.Index != next {
						t.Fatalf("entry %d, want %d", e.Index, next)
					}
					next++
				}
			case raftpb.Heartbeat:
				lastHint = m.Hint
			}
		}
	}
	r.mu.Unlock()
	if replicates > flowLimit+10 {
		t.Errorf("%d Replicates carried %d entries; held ones are not merged", replicates, entries)
	}
	if lastHint != hint {
		t.Errorf("the last heartbeat carries ReadIndex context %d, want the newest, %d", lastHint, hint)
	}
	t.Logf("%d entries in %d Replicates", entries, replicates)
}

// A replica that never answers (messages lost, a partition) is not held
// back for ever: after flowRelease the held messages go out.
func TestUnansweredPeerIsReleased(t *testing.T) {
	const entries = flowLimit + 100
	r, _, _ := replicateTo(t, entries)
	start := time.Now()
	waitFor(t, "the held entries", func() bool { return lastEntry(r) == entries })
	if took := time.Since(start); took < flowRelease/2 {
		t.Errorf("held entries went out after %v without an answer, before the release (%v)", took, flowRelease)
	}
}

func countMessages(r *received, typ raftpb.MessageType) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.batches {
		for _, m := range b.Requests {
			if m.Type == typ {
				n++
			}
		}
	}
	return n
}

func lastEntry(r *received) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := uint64(0)
	for _, b := range r.batches {
		for _, m := range b.Requests {
			if n := len(m.Entries); n > 0 {
				last = max(last, m.Entries[n-1].Index)
			}
		}
	}
	return last
}

// After a partition heals, the messages it swallowed are never answered,
// while the merged heartbeats are, one for one: the count of unanswered
// messages stays above flowResume and an answer comes every tick, so
// neither the resume nor the no-answer release would ever send the held
// Replicates, and the healed follower never caught up (found in the fault
// suite's isolate-follower run: the node served no session for good).
// Held Replicates go out once they have waited flowRelease.
func TestHeldReplicatesGoOutWhileHeartbeatsAreAnswered(t *testing.T) {
	const entries = flowLimit + 50
	r, sender, conn := replicateTo(t, entries)
	// The first flowLimit were lost: never answered. Each heartbeat that
	// reaches the peer is answered.
	key := flowKey{shard: 1, replica: 2}
	answeredHeartbeats := 0
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	for lastEntry(r) != entries {
		if time.Now().After(deadline) {
			t.Fatalf("held entries %d..%d not sent in 5 s while the peer answered every heartbeat (last sent %d)",
				flowLimit+1, entries, lastEntry(r))
		}
		for n := countMessages(r, raftpb.Heartbeat); answeredHeartbeats < n; answeredHeartbeats++ {
			sender.flows.answered(key)
		}
		if err := conn.SendMessageBatch(raftpb.MessageBatch{SourceAddress: "127.0.0.1:1", BinVer: 1,
			Requests: []raftpb.Message{{Type: raftpb.Heartbeat, ShardID: 1, From: 1, To: 2, Term: 3}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(start); took < flowRelease/2 {
		t.Errorf("held entries went out after %v, before the release (%v)", took, flowRelease)
	}
}

// replicateTo starts a peer transport and a sender, and sends the peer
// single-entry Replicates of entries 1..entries: what the peer received,
// the sender and its connection (closed at the test's end).
func replicateTo(t *testing.T, entries uint64) (*received, *Transport, raftio.IConnection) {
	t.Helper()
	r := &received{}
	peer := startTransport(t, r)
	sender := startTransport(t, &received{})
	conn, err := sender.GetConnection(context.Background(), peer.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	for i := uint64(1); i <= entries; i++ {
		if err := conn.SendMessageBatch(raftpb.MessageBatch{SourceAddress: "127.0.0.1:1", BinVer: 1, Requests: []raftpb.Message{replicate(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return r, sender, conn
}
