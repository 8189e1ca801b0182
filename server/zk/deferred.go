package zk

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Deferred reads. ZooKeeper answers a read of a session after that
// session's earlier writes have been applied and before its later ones are:
// the read sees its place in the session's order. A read that arrives while
// writes of its connection are in flight therefore waits, but the reader
// does not: it goes on reading and proposing the writes behind it, so a
// pipelining client keeps many writes in flight even when reads are mixed
// in. The deferred read runs at its place in one of two ways:
//   - when every earlier request of the connection has completed (it is at
//     the head of the pending list), on a goroutine that holds the apply
//     lock shared, so no later write can be applied meanwhile;
//   - or on the apply path, just before the connection's next write would
//     be applied (the node splits the batch there): readGate, an apply barrier, tells it which
//     local connections hold reads that must run first.
//
// Its reply still leaves in request order; a watch event for the
// connection goes after every reply already computed (deliver), so an
// event never overtakes the reply of the read that set its watch.

// deferredRead is a read waiting for the writes of its connection that
// precede it.
type deferredRead struct {
	h   zkproto.RequestHeader
	req zkproto.Record
	// ids are the connection's identities when the read arrived: an auth
	// packet that follows it must not change its answer.
	ids []zkproto.Id
	// after is the sequence number of the connection's last write before
	// the read: the read runs after that write is applied and before the
	// next one is.
	after uint64
}

// deferrable reports whether a read op may wait in the pending list instead
// of blocking the reader. Watch-management ops (setWatches, addWatch,
// checkWatches, removeWatches) and whoAmI keep the plain in-order path.
func deferrable(op zkproto.OpCode) bool {
	switch op {
	case zkproto.OpExists, zkproto.OpGetData, zkproto.OpGetChildren, zkproto.OpGetChildren2,
		zkproto.OpGetACL, zkproto.OpGetAllChildrenNumber, zkproto.OpGetEphemerals, zkproto.OpMultiRead:
		return true
	}
	return false
}

// readGate records the local connections holding deferred reads that have
// not run yet, for the apply path to consult before each entry.
type readGate struct {
	count atomic.Int32
	mu    sync.Mutex
	conns map[uint64]*conn
}

func newReadGate() *readGate { return &readGate{conns: make(map[uint64]*conn)} }

// add and remove are called with c.pendMu held.
func (g *readGate) add(c *conn) {
	g.mu.Lock()
	g.conns[c.id] = c
	g.count.Store(int32(len(g.conns)))
	g.mu.Unlock()
}

func (g *readGate) remove(c *conn) {
	g.mu.Lock()
	delete(g.conns, c.id)
	g.count.Store(int32(len(g.conns)))
	g.mu.Unlock()
}

// Armed is the apply path's fast check (node.ApplyBarrier): false when no
// connection has reads waiting.
func (g *readGate) Armed() bool { return g.count.Load() > 0 }

// Before returns the deferred reads to run on the state before the entry
// cmd is applied (node.ApplyBarrier): those of a local connection that
// precede cmd, a later write of that connection.
func (g *readGate) Before(cmd []byte) func() {
	c, seq := g.waiting(cmd)
	if c == nil {
		return nil
	}
	return func() { c.runReadsBefore(seq) }
}

// waiting returns the local connection whose deferred reads must run before
// the entry cmd is applied (cmd is a later write of that connection), and
// that write's sequence number.
func (g *readGate) waiting(cmd []byte) (*conn, uint64) {
	connID, seq, ok := sm.CommandOrigin(cmd)
	if !ok || connID == 0 {
		return nil, 0
	}
	g.mu.Lock()
	c := g.conns[connID]
	g.mu.Unlock()
	if c == nil || !c.hasReadBefore(seq) {
		return nil, 0
	}
	return c, seq
}

// deferRead queues a read behind the connection's pending requests. If
// nothing is pending any more, it runs at once on the reader.
func (c *conn) deferRead(h zkproto.RequestHeader, req zkproto.Record) {
	p := &pendingReply{xid: h.Xid, op: h.Type, start: time.Now(),
		read: &deferredRead{h: h, req: req, ids: c.authIDs(), after: c.seq}}
	if c.push(p) {
		c.runReadsAtHead()
	}
}

// hasPending reports whether requests of the connection are in flight.
func (c *conn) hasPending() bool {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	return len(c.pending) > 0
}

// hasReadBefore reports whether a deferred read that precedes the write
// with sequence number seq has not run yet.
func (c *conn) hasReadBefore(seq uint64) bool {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	return len(c.reads) > 0 && c.reads[0].read.after < seq
}

// takeReads removes the first n unrun reads; called with pendMu held.
func (c *conn) takeReads(n int) {
	for i := 0; i < n; i++ {
		c.reads[i].started = true
		c.reads[i] = nil
	}
	c.reads = c.reads[n:]
	if len(c.reads) == 0 {
		c.reads = nil
		c.srv.gate.remove(c)
	}
}

// runReadsBefore runs, on the apply path (apply lock held exclusively), the
// deferred reads that precede the write seq, on the state before it.
func (c *conn) runReadsBefore(seq uint64) {
	c.pendMu.Lock()
	n := 0
	for n < len(c.reads) && c.reads[n].read.after < seq {
		n++
	}
	batch := append([]*pendingReply(nil), c.reads[:n]...)
	c.takeReads(n)
	c.pendMu.Unlock()
	c.execReads(batch)
}

// runReadsAtHead runs the deferred reads at the head of the pending list
// (every earlier request has completed), holding the apply lock shared so
// that no later write of the connection is applied first.
func (c *conn) runReadsAtHead() {
	c.srv.node.LockReads()
	defer c.srv.node.UnlockReads()
	c.pendMu.Lock()
	c.runScheduled = false
	var batch []*pendingReply
	for _, p := range c.pending {
		if p.done {
			continue // a watch event or a read the apply path answered
		}
		if p.read == nil || p.started {
			break
		}
		batch = append(batch, p)
	}
	c.takeReads(len(batch))
	c.pendMu.Unlock()
	c.execReads(batch)
}

// execReads answers claimed reads from one view of the local replica. Its
// callers hold the apply lock (shared, or the apply path's own).
func (c *conn) execReads(batch []*pendingReply) {
	if len(batch) == 0 {
		return
	}
	v, err := c.srv.node.LockedView()
	if err != nil {
		c.log.Error().Err(err).Msg("read view failed; closing connection")
		c.abort()
		return
	}
	zxid, _ := v.LastZxid()
	frames := make([][]byte, len(batch))
	for i, p := range batch {
		r := p.read
		code, body := c.read(v, r.h.Type, r.req, r.ids)
		frames[i] = replyFrame(r.h.Xid, zxid, code, body)
	}
	v.Close()
	for i, p := range batch {
		c.complete(p, frames[i], false)
	}
}
