package zk

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A client pipelining more bytes of writes than the door lets be in flight
// is throttled, not refused: every write is answered OK on the open
// connection, and the bytes in flight never pass the budget by more than
// one request.
func TestLargeWritesArePacedNotRefused(t *testing.T) {
	s := startDoor(t)
	const budget = 1 << 20
	s.proposals = newByteBudget(budget)
	nc := dialSession(t, s)
	writeFrame(t, nc, &zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCreate},
		&zkproto.CreateRequest{Path: "/big", ACL: zkproto.OpenACLUnsafe()})
	const writes, size = 24, 256 << 10 // 6 MiB pipelined, 6 times the budget
	go func() {                        // a failed write shows as a missing reply below
		value := make([]byte, size)
		for i := range writes {
			var e zkproto.Encoder
			off := e.StartFrame()
			(&zkproto.RequestHeader{Xid: int32(2 + i), Type: zkproto.OpSetData}).Encode(&e)
			(&zkproto.SetDataRequest{Path: "/big", Data: value, Version: -1}).Encode(&e)
			e.FinishFrame(off)
			if _, err := nc.Write(e.Bytes()); err != nil {
				return
			}
		}
	}()
	fr := zkproto.NewFrameReader(nc, 1<<20)
	_ = nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	for i := range writes + 1 {
		frame, err := fr.Next()
		if err != nil {
			t.Fatalf("reply %d of %d: %v (the connection was closed?)", i+1, writes+1, err)
		}
		var h zkproto.ReplyHeader
		if h.Decode(zkproto.NewDecoder(frame)); h.Err != zkproto.ErrOK || h.Xid != int32(1+i) {
			t.Fatalf("reply %d: %+v, want OK for xid %d", i+1, h, 1+i)
		}
	}
	b := s.proposals
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peak > budget+size+1024 {
		t.Fatalf("%d bytes were in flight, budget %d", b.peak, budget)
	}
	if b.waits == 0 {
		t.Fatal("6 MiB pipelined against a 1 MiB budget never waited")
	}
}

func TestByteBudgetLetsOneOversizeRequestThrough(t *testing.T) {
	b := newByteBudget(10)
	b.acquire(25) // alone: through
	done := make(chan struct{})
	go func() { b.acquire(1); close(done) }()
	select {
	case <-done:
		t.Fatal("a request went past a budget already overdrawn")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(25)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not let through after the release")
	}
}

// Waiters go in in the order they came: a small request that would fit
// does not pass a larger one waiting before it, or a connection with large
// writes could wait while the bytes freed went to others, again and again.
func TestByteBudgetLetsWaitersInInOrder(t *testing.T) {
	b := newByteBudget(10)
	b.acquire(3)
	b.acquire(3)
	order := make(chan string, 2)
	waitFor := func(n int) { // until n acquisitions are waiting
		deadline := time.Now().Add(10 * time.Second)
		for {
			b.mu.Lock()
			got := len(b.waiting)
			b.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	nothingFor := func(d time.Duration) {
		select {
		case who := <-order:
			t.Fatalf("%s went in out of turn", who)
		case <-time.After(d):
		}
	}
	expect := func(want string) {
		select {
		case who := <-order:
			if who != want {
				t.Fatalf("%s went in, want %s", who, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not let in", want)
		}
	}
	go func() { b.acquire(6); order <- "large" }() // 12 > 10: waits
	waitFor(1)
	go func() { b.acquire(4); order <- "small" }() // 10 would fit, but is second
	waitFor(2)
	nothingFor(50 * time.Millisecond)
	b.release(3) // 3 + 6 fit, 3 + 6 + 4 do not
	expect("large")
	nothingFor(50 * time.Millisecond)
	b.release(3) // 6 + 4 fit
	expect("small")
	if b.used != 10 || b.waits != 2 {
		t.Fatalf("used %d waits %d, want 10 and 2", b.used, b.waits)
	}
}

// A multi counts its ops, not only its bytes: applying 1,000 setData costs
// a node far more than saving their 130 KB.
func TestProposalCostCountsAMultisOps(t *testing.T) {
	ops := make([]sm.Op, 1000)
	for i := range ops {
		ops[i] = &sm.SetData{Path: "/a", Version: -1}
	}
	if got, want := proposalCost(130_000, &sm.Multi{Ops: ops}), int64(130_000+1000*applyCostPerOp); got != want {
		t.Fatalf("multi of 1000: cost %d, want %d", got, want)
	}
	if got, want := proposalCost(200, &sm.SetData{Path: "/a"}), int64(200+applyCostPerOp); got != want {
		t.Fatalf("setData: cost %d, want %d", got, want)
	}
	if got, want := proposalCost(50, &sm.Multi{}), int64(50+applyCostPerOp); got != want {
		t.Fatalf("empty multi: cost %d, want %d", got, want)
	}
}
