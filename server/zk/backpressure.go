package zk

import (
	"sync"

	"github.com/zkbridge/zkbridge/sm"
)

// proposalBudgetBytes bounds the bytes of writes this door has proposed
// and not yet seen applied, each op of a write counted at applyCostPerOp
// more.
//
// dragonboat refuses proposals (ErrSystemBusy) once a shard's in-memory
// log holds 256 MiB, and a refused write breaks its session's primary
// order, so the connection was closed: a client pipelining large values
// lost its session where ZooKeeper throttles. A connection's reader now
// waits for room instead, which stops it reading the socket (TCP
// back-pressure).
//
// The bound is also what the leader may have to save and apply in one go.
// With 64 MiB of bytes alone, 320 multis of 1,000 setData (130 KB each)
// in flight made the leader's log saves and its apply backlog long enough
// that a stall past the 200 ms election timeout cost the leader; and
// dragonboat lets no replica campaign while its applied index is behind
// its commit index, so the election waited for the backlog too, past the
// point where the nodes close their clients' connections. All six such
// runs beside a ZooKeeper ensemble on the project's 2-core test host
// aborted; with 32 MiB and the ops counted, none of four failed
// (docs/performance.md). Small writes never reach the bound, nor do 16
// sets of 1 MB.
const proposalBudgetBytes = 32 << 20

// applyCostPerOp is what one op of a write counts against the budget on
// top of the request's bytes: applying a multi of 1,000 setData of 100
// bytes took each node about as long as writing 600 KB to its log, so
// counting its 130 KB alone let ten times too many in.
const applyCostPerOp = 1 << 10

// proposalCost is what a write of frameLen bytes takes from the budget.
func proposalCost(frameLen int, op sm.Op) int64 {
	ops := 1
	if m, ok := op.(*sm.Multi); ok {
		ops = max(1, len(m.Ops))
	}
	return int64(frameLen) + int64(ops)*applyCostPerOp
}

// byteBudget is a counting semaphore in bytes, shared by a door's
// connections, that lets waiters in in the order they came: otherwise a
// connection waiting for room for a large write could be passed over
// again and again while the bytes freed went to smaller ones. One request
// larger than the whole budget still goes through, alone, so no request
// is refused for its size here (jute.maxbuffer bounds it).
type byteBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiting []*budgetWaiter // in arrival order
	peak    int64           // the most ever taken (tests)
	waits   int64           // acquisitions that had to wait
}

// budgetWaiter is one acquire waiting for room; ready closes when its
// bytes are taken for it.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit}
}

// fits reports whether n more bytes may be taken now.
func (b *byteBudget) fits(n int64) bool {
	return b.used == 0 || b.used+n <= b.limit
}

func (b *byteBudget) take(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

// acquire takes n bytes, waiting while that would pass the limit and
// other bytes are taken, or others wait already.
func (b *byteBudget) acquire(n int64) {
	b.mu.Lock()
	if len(b.waiting) == 0 && b.fits(n) {
		b.take(n)
		b.mu.Unlock()
		return
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.waits++
	b.mu.Unlock()
	<-w.ready
}

// release gives back n bytes taken by acquire and lets in the waiters
// that now fit, first come first.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	for len(b.waiting) > 0 && b.fits(b.waiting[0].n) {
		w := b.waiting[0]
		b.waiting[0] = nil
		b.waiting = b.waiting[1:]
		b.take(w.n)
		close(w.ready)
	}
}
