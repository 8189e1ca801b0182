package zk

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/stagetrace"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// sessionlessBuffer is the read buffer of a connection until its
// handshake: room for a ConnectRequest.
const sessionlessBuffer = 512

// MaxPendingPerConn bounds one connection's requests in flight: past it the
// reader stops reading (TCP backpressure), it never drops a request.
const MaxPendingPerConn = 1000

// conn is one client connection. Its reader goroutine decodes requests in
// order and either answers them (reads, once every earlier request of the
// connection has completed) or proposes them (writes, many in flight).
// Replies leave strictly in request order through the pending list; watch
// events go straight to the output queue, so an event queued by the apply
// path precedes the reply of the write that caused it.
type conn struct {
	srv    *Server
	nc     net.Conn
	id     uint64 // connection id carried in commands (primary order)
	remote string // "ip:port"
	ip     string
	log    zerolog.Logger

	// Written by the reader goroutine only, read by others under statsMu.
	session int64
	timeout int32
	auth    []zkproto.Id
	seq     uint64 // sequence number of the last proposed write
	// frameLen is the size of the request being handled (its proposal's
	// share of the door's budget of bytes in flight).
	frameLen int
	// readAt is when that request's frame was read (stagetrace; 0 when
	// tracing is off).
	readAt int64
	// saslExchange is the connection's SASL exchange, from its first
	// sasl request (reader goroutine only).
	saslExchange saslMechanism

	// closeRequested is set when the client sent closeSession: the
	// connection closes itself after that reply, so the apply path's kick
	// of the ended session must leave it alone.
	closeRequested atomic.Bool
	// in buffers the socket's input (serve); the 4lw stmk reads its
	// argument from it too.
	in *connReader
	// secure: the connection came in on a TLS-only listener (cnxnKey).
	secure bool
	// readOnly marks a connection admitted by a read-only node.
	readOnly atomic.Bool
	// fencedLogged: a write of this connection was refused by a cutover
	// policy and logged (once per connection).
	fencedLogged atomic.Bool

	// pending holds requests not yet answered, in request order, and the
	// watch events that must follow replies already computed (deliver).
	pendMu   sync.Mutex
	pendCond *sync.Cond
	pending  []*pendingReply
	// reads are the deferred reads in pending that have not run yet, in
	// order; while there are any the connection is in srv.gate.
	reads []*pendingReply
	// runScheduled: a runReadsAtHead is on its way.
	runScheduled bool
	// unordered counts requests in flight that are neither reads nor
	// sequenced writes (sync, reconfig): reads behind them do not defer.
	unordered atomic.Int32

	// out holds frames ready to be written; the writer drains it. The
	// writer goroutine runs only while there is output (writing): an idle
	// session holds no goroutine stack for it.
	outMu   sync.Mutex
	out     [][]byte
	traces  []*writeTrace // of frames in out (stagetrace only)
	writing bool
	closing bool // write what is queued, then close
	closed  bool
	// abortTimer bounds a graceful close (abortSoon); abort stops it.
	abortTimer *time.Timer
	doneOnce   sync.Once
	// dead is closed when the socket is closed; drained (under pendMu) is
	// set then too: pending replies are moot and their slots are returned.
	dead     chan struct{}
	deadOnce sync.Once
	drained  bool

	stats connStats
}

// pendingReply is one request awaiting its reply.
type pendingReply struct {
	xid     int32
	op      zkproto.OpCode
	start   time.Time
	done    bool
	frame   []byte
	close   bool // close the connection after this reply
	noToken bool // took no node-wide slot (the connection was already dead)
	// read is set for a deferred read; started once it has been claimed to
	// run (see deferred.go).
	read    *deferredRead
	started bool
	event   bool        // a watch event held behind earlier replies
	trace   *writeTrace // a traced write's stamps (stagetrace)
}

type connStats struct {
	mu          sync.Mutex
	established time.Time
	received    int64
	sent        int64
	lastOp      string
	lastCxid    int32
	lastZxid    int64
	lastResp    time.Time
	lastLatency int64
	minLatency  int64
	maxLatency  int64
	sumLatency  int64
	countLat    int64
}

func newConnID() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return binary.BigEndian.Uint64(b[:]) | 1 // never 0
}

func newConn(s *Server, nc net.Conn) *conn {
	remote := nc.RemoteAddr().String()
	ip, _, _ := net.SplitHostPort(remote)
	c := &conn{srv: s, nc: nc, id: newConnID(), remote: remote, ip: ip, dead: make(chan struct{})}
	c.log = s.log.With().Str("remote", remote).Logger()
	c.pendCond = sync.NewCond(&c.pendMu)
	c.auth = []zkproto.Id{{Scheme: "ip", ID: ip}}
	c.stats.established = time.Now()
	c.stats.lastZxid = -1
	c.stats.lastCxid = -1
	c.stats.minLatency = -1
	return c
}

// watcher interface.
func (c *conn) watcherID() uint64 { return c.id }
func (c *conn) sessionID() int64  { return atomic.LoadInt64(&c.session) }
func (c *conn) canRead(acl []zkproto.ACL) bool {
	return sm.CheckACL(acl, zkproto.PermRead, c.authIDs(), c.srv.cfg.SuperDigest)
}

// deliver queues a watch event after every reply already computed: a reply
// still held in the pending list behind an earlier request (a read answered
// at its place, a write completed out of order) left ZooKeeper before the
// event, so the event waits behind it. Replies not yet computed follow it.
func (c *conn) deliver(ev zkproto.WatcherEvent) {
	var e zkproto.Encoder
	off := e.StartFrame()
	h := zkproto.ReplyHeader{Xid: zkproto.XidNotification, Zxid: -1, Err: zkproto.ErrOK}
	h.Encode(&e)
	ev.Encode(&e)
	e.FinishFrame(off)
	c.srv.metrics.recordResponseSize(e.Len() - 4) // ZooKeeper counts notifications too
	frame := e.Bytes()
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	if !c.drained {
		for i := len(c.pending) - 1; i >= 0; i-- {
			if c.pending[i].done {
				held := &pendingReply{done: true, frame: frame, event: true, noToken: true}
				c.pending = append(c.pending, nil)
				copy(c.pending[i+2:], c.pending[i+1:])
				c.pending[i+1] = held
				return
			}
		}
	}
	c.enqueue(frame)
}

func (c *conn) authIDs() []zkproto.Id {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.auth
}

// serve runs the connection until it ends.
func (c *conn) serve() {
	defer c.shutdown()
	if !c.startTLS() {
		return
	}
	// The reader holds a small buffer until input arrives faster than it
	// takes in: a ConnectRequest is ~50 bytes, thousands of connections
	// that never send one (half-open, slowloris) and idle sessions must
	// not cost 32 KiB each.
	c.in = newConnReader(c.nc)
	defer c.in.release()
	fr := zkproto.NewFrameReader(c.in, c.srv.cfg.MaxBuffer)
	// A connection without a session is closed after
	// nio.sessionlessCnxnTimeout, as ZooKeeper's: a client that connects
	// and sends nothing, or half a ConnectRequest, cannot hold it forever.
	_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.Limits.SessionlessTimeout))
	frame, word, err := fr.First()
	if err != nil {
		c.logReadError(err)
		return
	}
	if word != "" {
		c.srv.fourLetterWord(c, word)
		return
	}
	if !c.handshake(frame) {
		return
	}
	_ = c.nc.SetReadDeadline(time.Time{}) // from now on the session's timeout bounds it
	for {
		frame, err := fr.Next()
		if err != nil {
			c.logReadError(err)
			return
		}
		if stagetrace.On() {
			c.readAt = stagetrace.Now()
		}
		if !c.handleRequest(frame) {
			return
		}
	}
}

func (c *conn) logReadError(err error) {
	var fse *zkproto.FrameSizeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.As(err, &fse):
		c.log.Warn().Int32("length", fse.Length).Int("max", fse.Max).Msg("frame length out of range (jute.maxbuffer); closing connection")
	default:
		if !c.isClosed() {
			c.log.Debug().Err(err).Msg("connection read ended")
		}
	}
}

// enqueue appends a ready frame to the output.
func (c *conn) enqueue(frame []byte) { c.enqueueFrame(frame, nil, false) }

// enqueueFrame appends a ready frame to the output, and its write's trace
// (stagetrace), if any, to be stamped once written. When the writer is
// not running, it is started; with inline the caller is to run writeLoop
// itself (enqueueFrame reports true), without locks held.
func (c *conn) enqueueFrame(frame []byte, t *writeTrace, inline bool) (runWriter bool) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if c.closed || c.closing {
		return false
	}
	c.out = append(c.out, frame)
	if t != nil {
		t.req.Queued = stagetrace.Now()
		c.traces = append(c.traces, t)
	}
	if inline && !c.writing {
		c.writing = true
		return true
	}
	c.startWriterLocked()
	return false
}

// closeAfterFlush writes whatever is queued, then closes.
func (c *conn) closeAfterFlush() {
	c.outMu.Lock()
	c.closing = true
	c.startWriterLocked()
	c.outMu.Unlock()
}

// abort closes the connection now; queued output is dropped. It wakes a
// reader blocked on the pending list (taking pendMu, so a waiter that has
// just seen "not closed" is already waiting and cannot miss the wake-up).
func (c *conn) abort() {
	c.outMu.Lock()
	c.closed = true
	if c.abortTimer != nil {
		c.abortTimer.Stop()
	}
	c.outMu.Unlock()
	_ = c.nc.Close()
	c.deadOnce.Do(func() { close(c.dead) })
	c.pendMu.Lock()
	if !c.drained {
		c.drained = true
		for _, p := range c.pending {
			c.releaseSlot(p)
		}
		c.pending = nil
		if c.reads != nil {
			c.reads = nil
			c.srv.gate.remove(c)
		}
	}
	c.pendCond.Broadcast()
	c.pendMu.Unlock()
}

func (c *conn) isClosed() bool {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	return c.closed
}

// startWriterLocked starts the writer unless it runs (outMu held).
func (c *conn) startWriterLocked() {
	if !c.writing && !c.closed {
		c.writing = true
		go c.writeLoop()
	}
}

// writeLoop writes queued frames until the queue is empty, then ends
// (enqueue starts it again).
func (c *conn) writeLoop() {
	var batch net.Buffers
	var traces []*writeTrace
	for {
		c.outMu.Lock()
		if c.closed || (len(c.out) == 0 && !c.closing) {
			c.writing = false
			if cap(c.out) > 64 {
				c.out = nil // a burst's queue is not kept by an idle session
			}
			c.outMu.Unlock()
			return
		}
		batch = append(batch[:0], c.out...)
		n := len(c.out)
		c.out = c.out[:0]
		traces = append(traces[:0], c.traces...)
		c.traces = c.traces[:0]
		closing := c.closing && n == 0
		c.outMu.Unlock()
		if closing {
			_ = c.nc.Close()
			c.abort()
			return
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout()))
		if err := c.writeFrames(&batch); err != nil {
			c.abort()
			return
		}
		for _, t := range traces {
			t.written()
		}
		c.stats.mu.Lock()
		c.stats.sent += int64(n)
		c.stats.mu.Unlock()
		c.srv.metrics.packetsSent.Add(int64(n))
	}
}

func (c *conn) writeTimeout() time.Duration {
	if t := atomic.LoadInt32(&c.timeout); t > 0 {
		return time.Duration(t) * time.Millisecond
	}
	return c.srv.cfg.MaxSessionTimeout
}

// shutdown runs once when the reader ends: the connection leaves every
// registry; its session lives on until it expires or is closed.
func (c *conn) shutdown() {
	c.doneOnce.Do(func() {
		c.srv.watches.removeWatcher(c)
		c.srv.unregisterConn(c)
		// Let queued replies (e.g. closeSession's) leave, then close.
		c.closeAfterFlush()
		c.pendMu.Lock()
		c.pendCond.Broadcast()
		c.pendMu.Unlock()
		c.abortSoon()
	})
}

// abortSoon bounds a graceful close: the writer closes the socket once its
// queue is empty, but a peer that stops reading cannot hold it open past
// the write timeout. The timer is stopped once the connection is closed:
// a pending timer keeps the connection (and its 32 KiB read buffer) in
// memory, and under connection churn that was every connection of the
// last session timeout.
func (c *conn) abortSoon() {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if c.closed || c.abortTimer != nil {
		return
	}
	c.abortTimer = time.AfterFunc(c.writeTimeout(), c.abort)
}

// addPending reserves the next reply slot: one of the node's
// globalOutstandingLimit slots, then a place in the connection's order.
// Both waits are backpressure: the reader stops reading meanwhile. Never
// call it with the apply lock held (the slots free up only as writes apply).
func (c *conn) addPending(xid int32, op zkproto.OpCode) *pendingReply {
	p := &pendingReply{xid: xid, op: op, start: time.Now()}
	c.push(p)
	return p
}

// push takes p's node-wide slot, waits for room in the connection's pending
// list and appends p (a deferred read to c.reads too). If the connection
// was drained meanwhile, p is dropped and holds no slot. It reports whether
// p is a deferred read now at the head, which the caller must run: nothing
// else will. The same rules as addPending's apply.
func (c *conn) push(p *pendingReply) (runNow bool) {
	select {
	case c.srv.slots <- struct{}{}:
		c.srv.metrics.outstanding.Add(1) // releaseSlot takes it back
	case <-c.dead:
		p.noToken = true
	}
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	for len(c.pending) >= MaxPendingPerConn && !c.isClosed() {
		c.pendCond.Wait()
	}
	if c.drained {
		c.releaseSlot(p)
		return false
	}
	c.pending = append(c.pending, p)
	if p.read == nil {
		return false
	}
	c.reads = append(c.reads, p)
	if len(c.reads) == 1 {
		c.srv.gate.add(c)
	}
	if len(c.pending) == 1 {
		c.runScheduled = true
		return true
	}
	return false
}

// releaseSlot returns p's node-wide slot. It never blocks.
func (c *conn) releaseSlot(p *pendingReply) {
	if p.noToken {
		return
	}
	p.noToken = true
	// The count first, then the slot: the count never exceeds the slots
	// taken, so it never reads above the limit.
	c.srv.metrics.outstanding.Add(-1)
	select {
	case <-c.srv.slots:
	default:
	}
}

// complete fills a reply slot and releases every completed reply at the
// head of the pending list, in order.
func (c *conn) complete(p *pendingReply, frame []byte, closeAfter bool) {
	c.completeReplies(p, frame, closeAfter, false)
}

// completeAndWrite is complete on a goroutine that has nothing else to do
// (the one a write's result comes to): if the writer is not running, this
// goroutine writes the released replies itself rather than start one:
// one goroutine start (and maybe the wake-up of an idle processor) less
// per write. Issue 36's stage trace of set@1, alternated runs on a loaded
// machine: from the reply queued to its writev done 32-60 µs at the
// median before, 25-34 after (most of what is left is the writev).
func (c *conn) completeAndWrite(p *pendingReply, frame []byte, closeAfter bool) {
	if c.completeReplies(p, frame, closeAfter, true) {
		c.writeLoop()
	}
}

// completeReplies is complete; with inline it reports whether the caller
// must run writeLoop (see enqueueFrame).
func (c *conn) completeReplies(p *pendingReply, frame []byte, closeAfter, inline bool) (runWriter bool) {
	c.pendMu.Lock()
	if c.drained { // the connection is gone; its slots were returned
		c.pendMu.Unlock()
		return false
	}
	p.frame, p.done, p.close = frame, true, closeAfter
	released := 0
	for len(c.pending) > 0 && c.pending[0].done {
		head := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		released++
		if !head.event {
			c.releaseSlot(head)
			c.recordReply(head)
		}
		if head.frame != nil && c.enqueueFrame(head.frame, head.trace, inline) {
			runWriter = true
		}
		if head.close {
			c.closeAfterFlush()
		}
	}
	if released > 0 {
		c.pendCond.Broadcast()
	}
	// A deferred read now at the head has nothing before it to wait for.
	run := len(c.pending) > 0 && c.pending[0].read != nil && !c.pending[0].started && !c.runScheduled
	if run {
		c.runScheduled = true
	}
	c.pendMu.Unlock()
	if run {
		go c.runReadsAtHead()
	}
	return runWriter
}

// waitIdle blocks until every earlier request of the connection has been
// answered (sequential consistency for reads). It reports false if the
// connection closed meanwhile.
func (c *conn) waitIdle() bool {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	for len(c.pending) > 0 && !c.isClosed() {
		c.pendCond.Wait()
	}
	return !c.isClosed()
}

func (c *conn) recordReply(p *pendingReply) {
	took := time.Since(p.start)
	lat := took.Milliseconds()
	c.srv.metrics.byOp.add(p.op)
	c.srv.metrics.latencyHist.ObserveDuration(took)
	c.stats.mu.Lock()
	c.stats.lastOp = opTag(p.op)
	c.stats.lastCxid = p.xid
	c.stats.lastResp = time.Now()
	c.stats.lastZxid = c.srv.lastZxid()
	c.stats.lastLatency = lat
	if c.stats.minLatency < 0 || lat < c.stats.minLatency {
		c.stats.minLatency = lat
	}
	if lat > c.stats.maxLatency {
		c.stats.maxLatency = lat
	}
	c.stats.sumLatency += lat
	c.stats.countLat++
	c.stats.mu.Unlock()
	c.srv.metrics.recordLatency(lat)
	c.srv.metrics.recordResponseSize(len(p.frame) - 4)
}

// replyFrame encodes a reply header and optional body as one frame.
func replyFrame(xid int32, zxid int64, code zkproto.ErrCode, body zkproto.Record) []byte {
	var e zkproto.Encoder
	off := e.StartFrame()
	h := zkproto.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}
	h.Encode(&e)
	if body != nil && code == zkproto.ErrOK {
		body.Encode(&e)
	}
	e.FinishFrame(off)
	return e.Bytes()
}

// replyNow answers a request that needs no proposal, in order.
func (c *conn) replyNow(xid int32, op zkproto.OpCode, zxid int64, code zkproto.ErrCode, body zkproto.Record) {
	p := c.addPending(xid, op)
	c.complete(p, replyFrame(xid, zxid, code, body), false)
}

// opTag is the four-letter op name cons prints (lop=…).
func opTag(op zkproto.OpCode) string {
	switch op {
	case zkproto.OpCreateSession:
		return "SESS"
	case zkproto.OpPing:
		return "PING"
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		return "CREA"
	case zkproto.OpDelete, zkproto.OpDeleteContainer:
		return "DELE"
	case zkproto.OpSetData:
		return "SETD"
	case zkproto.OpGetData:
		return "GETD"
	case zkproto.OpGetChildren, zkproto.OpGetChildren2:
		return "GETC"
	case zkproto.OpExists:
		return "EXIS"
	case zkproto.OpGetACL:
		return "GETA"
	case zkproto.OpSetACL:
		return "SETA"
	case zkproto.OpSync:
		return "SYNC"
	case zkproto.OpMulti:
		return "MULT"
	case zkproto.OpMultiRead:
		return "MLTR"
	case zkproto.OpCheck:
		return "CHEC"
	case zkproto.OpSetWatches:
		return "SETW"
	case zkproto.OpSetWatches2:
		return "STW2"
	case zkproto.OpAddWatch:
		return "ADDW"
	case zkproto.OpCheckWatches:
		return "CHKW"
	case zkproto.OpRemoveWatches:
		return "REMW"
	case zkproto.OpWhoAmI:
		return "HOMI"
	case zkproto.OpGetEphemerals:
		return "GETE"
	case zkproto.OpGetAllChildrenNumber:
		return "GETACN"
	case zkproto.OpCloseSession:
		return "CLOS"
	case zkproto.OpReconfig:
		return "RECO"
	}
	return "NA"
}
