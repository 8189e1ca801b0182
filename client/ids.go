package client

import (
	"context"
	"fmt"
	"sync"
)

// IDAllocator hands out unique ids from a counter znode, reserving them
// from the cluster a block at a time (one AllocateID round trip per
// block). Ids are unique across every allocator and every Curator
// DistributedAtomicLong client of the same counter; they increase within
// one allocator. Ids of a block that a process does not use up are never
// handed out (a gap, as with any block allocator). It is safe for
// concurrent use.
type IDAllocator struct {
	c     *Client
	path  string
	block int64

	mu         sync.Mutex
	next, last int64 // the reserved block not handed out yet: next..last
}

// NewIDAllocator returns an allocator of ids from the counter at path,
// reserving block ids at a time (at least 1).
func NewIDAllocator(c *Client, path string, block int64) *IDAllocator {
	return &IDAllocator{c: c, path: path, block: max(block, 1), next: 1, last: 0}
}

// Next returns an id: from the reserved block, or from a new block when it
// is used up.
func (a *IDAllocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next > a.last {
		first, last, err := a.c.AllocateID(ctx, a.path, a.block)
		if err != nil {
			return 0, fmt.Errorf("reserve %d ids from %s: %w", a.block, a.path, err)
		}
		a.next, a.last = first, last
	}
	id := a.next
	a.next++
	return id, nil
}

// Remaining is how many ids of the reserved block are left.
func (a *IDAllocator) Remaining() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(a.last-a.next+1, 0)
}
