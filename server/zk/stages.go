package zk

import (
	"sync/atomic"

	"github.com/zkbridge/zkbridge/server/stagetrace"
	"github.com/zkbridge/zkbridge/sm"
)

// writeTrace is one write's stamps at the door (stagetrace, off unless
// ZKBRIDGE_WRITE_STAGES=1). The reader goroutine stamps the read, decode
// and hand-off, the goroutine that gets the result the rest; proposed is
// atomic because the result may come before Propose returns.
type writeTrace struct {
	req      stagetrace.Request
	proposed atomic.Int64
}

// traceWrite starts the trace of the write p, read at c.readAt; nil when
// tracing is off. Every method of a nil *writeTrace does nothing.
func (c *conn) traceWrite(p *pendingReply) *writeTrace {
	if c.readAt == 0 || !stagetrace.On() {
		return nil
	}
	t := &writeTrace{req: stagetrace.Request{Read: c.readAt, Decoded: stagetrace.Now()}}
	p.trace = t
	return t
}

// handedOff stamps the return of the proposal's hand-off to the Raft engine.
func (t *writeTrace) handedOff() {
	if t != nil {
		t.proposed.Store(stagetrace.Now())
	}
}

// result stamps the arrival of the write's result at the door.
func (t *writeTrace) result(res *sm.Result) {
	if t != nil && res != nil {
		t.req.Result = stagetrace.Now()
		t.req.Index = res.Index
	}
}

// written records the trace once the reply's write returned.
func (t *writeTrace) written() {
	t.req.Written = stagetrace.Now()
	t.req.Proposed = t.proposed.Load()
	stagetrace.AddRequest(t.req)
}
