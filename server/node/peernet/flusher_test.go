package peernet

import (
	"context"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"
)

// The flusher of a peer connection ran a 20 ms ticker all the time, one
// per peer, waking an idle node 50 times a second per peer with nothing
// held (issue 36). It now ticks only while something is held: a
// connection with nothing held is never woken, a held message starts the
// ticker (the merged heartbeat and the held Replicates still go out), and
// once everything went out it sleeps again.
func TestFlusherSleepsWhileNothingIsHeld(t *testing.T) {
	var r received
	peer := startTransport(t, &r)
	sender := startTransport(t, &received{})
	ic, err := sender.GetConnection(context.Background(), peer.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	conn := ic.(*batchConn)
	send := func(m raftpb.Message) {
		t.Helper()
		if err := conn.SendMessageBatch(raftpb.MessageBatch{SourceAddress: "127.0.0.1:1", BinVer: 1, Requests: []raftpb.Message{m}}); err != nil {
			t.Fatal(err)
		}
	}
	idle := func(when string) {
		t.Helper()
		before := conn.flushes.Load()
		time.Sleep(10 * flowHeartbeatEvery)
		if n := conn.flushes.Load() - before; n != 0 {
			t.Errorf("%s: the flusher ran %d times in %v with nothing held", when, n, 10*flowHeartbeatEvery)
		}
	}

	// Messages within the limit go out at once; nothing is held.
	for i := uint64(1); i <= 10; i++ {
		send(replicate(i))
	}
	waitFor(t, "the first entries", func() bool { return lastEntry(&r) == 10 })
	idle("nothing ever held")

	// Past the limit (the peer answers nothing) a heartbeat and Replicates
	// are held: the merged heartbeat still reaches the peer, and the held
	// Replicates go out after flowRelease without an answer.
	const entries = flowLimit + 20
	for i := uint64(11); i <= entries; i++ {
		send(replicate(i))
	}
	heldAt := time.Now()
	send(raftpb.Message{Type: raftpb.Heartbeat, ShardID: 1, From: 1, To: 2, Term: 3, Commit: 5})
	if !conn.holding.Load() {
		t.Fatal("nothing held past the flow limit")
	}
	waitFor(t, "the held heartbeat at the peer", func() bool { return countMessages(&r, raftpb.Heartbeat) > 0 })
	t.Logf("the held heartbeat went out %v after it was held (every %v)", time.Since(heldAt), flowHeartbeatEvery)
	waitFor(t, "the held entries at the peer", func() bool { return lastEntry(&r) == entries })

	// Everything went out: the flusher sleeps again.
	waitFor(t, "nothing held", func() bool { return !conn.holding.Load() })
	idle("after the held messages went out")
}
