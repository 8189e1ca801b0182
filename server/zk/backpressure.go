package zk

import "sync"

// proposalBudgetBytes bounds the bytes of writes this door has proposed
// and not yet seen applied. dragonboat refuses proposals (ErrSystemBusy)
// once a shard's in-memory log holds 256 MiB, and a refused write breaks
// its session's primary order, so the connection was closed: a client
// pipelining large values lost its session where ZooKeeper throttles. A
// connection's reader now waits for room instead, which stops it reading
// the socket (TCP back-pressure). Three nodes' doors together stay below
// the leader's 256 MiB.
const proposalBudgetBytes = 64 << 20

// byteBudget is a counting semaphore in bytes, shared by a door's
// connections. One request larger than the whole budget still goes
// through, alone, so no request is refused for its size here
// (jute.maxbuffer bounds it).
type byteBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
	peak  int64 // the most ever taken (tests)
	waits int64 // acquisitions that had to wait
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while that would pass the limit and
// other bytes are taken.
func (b *byteBudget) acquire(n int64) {
	b.mu.Lock()
	if b.used > 0 && b.used+n > b.limit {
		b.waits++
		for b.used > 0 && b.used+n > b.limit {
			b.cond.Wait()
		}
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.mu.Unlock()
}

// release gives back n bytes taken by acquire.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}
