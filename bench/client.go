package bench

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// reply is what a call's callback receives. body (the reply's record after
// its header) is only valid during the callback. err is set, and hdr.Err
// is ConnectionLoss, when the connection failed before the reply came.
type reply struct {
	hdr  zkproto.ReplyHeader
	body []byte
	at   time.Time // when the reply was read
	err  error
}

// call is one request in flight.
type call struct {
	xid   int32
	start time.Time
	done  func(*call, *reply)
	// For the callback's bookkeeping:
	op       Op
	path     string
	measured bool // issued after the warm-up
}

// conn is one ZooKeeper session over one TCP connection that pipelines:
// up to cap(slots) requests are in flight, and their replies are matched in
// order, as ZooKeeper answers a session's requests in the order it sent
// them. One goroutine sends (send, flush, wait); a second one reads and
// runs the callbacks.
type conn struct {
	nc      net.Conn
	bw      *bufio.Writer
	enc     zkproto.Encoder
	xid     int32
	slots   chan struct{} // a token per request in flight: the pipelining bound
	onEvent func(zkproto.WatcherEvent, time.Time)
	closing atomic.Bool // closeSession sent: its reply matches no call

	mu       sync.Mutex // guards inflight pushes against fail's drain
	inflight chan *call // in send order
	closed   bool
	err      error
	dead     chan struct{} // closed when the reader stops
}

// maxReply bounds a reply the load generator reads: far above
// jute.maxbuffer, so a server's oversized answer is seen as sent.
const maxReply = 256 << 20

var (
	errOutOfOrder    = errors.New("reply out of order")
	errSessionClosed = errors.New("session closed") // the server answered closeSession
)

// dial connects to addr (with TLS when tlsCfg is set; the TLS handshake
// counts in the connect workload's handshake latency) and establishes a
// session with a handshake bounded by timeout. onEvent (may be nil)
// receives watch events in the reader.
func dial(tlsCfg *tls.Config, addr string, outstanding int, sessionTimeout, timeout time.Duration, onEvent func(zkproto.WatcherEvent, time.Time)) (*conn, error) {
	var nc net.Conn
	var err error
	if tlsCfg != nil {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: tlsCfg}
		nc, err = d.Dial("tcp", addr)
	} else {
		nc, err = net.DialTimeout("tcp", addr, timeout)
	}
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	// A connection with a request or two in flight (a watcher, a
	// connector) needs no large buffers; thousands of them would.
	bufSize := 64 << 10
	if outstanding <= 2 {
		bufSize = 4 << 10
	}
	c := &conn{
		nc:       nc,
		bw:       bufio.NewWriterSize(nc, bufSize),
		slots:    make(chan struct{}, outstanding),
		inflight: make(chan *call, outstanding),
		dead:     make(chan struct{}),
		onEvent:  onEvent,
	}
	// Replies larger than jute.maxbuffer are read (a getChildren of a
	// wide node can be): what a server sends is measured, not refused.
	fr := zkproto.NewFrameReader(bufio.NewReaderSize(nc, bufSize), maxReply)
	req := zkproto.ConnectRequest{TimeOut: int32(sessionTimeout.Milliseconds()),
		Passwd: make([]byte, zkproto.PasswordLength), HasReadOnly: true}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	off := c.enc.StartFrame()
	req.Encode(&c.enc)
	c.enc.FinishFrame(off)
	if _, err := nc.Write(c.enc.Bytes()); err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: handshake: %w", addr, err)
	}
	frame, err := fr.Next()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: handshake: %w (is it a ZooKeeper server? ZooKeeper refuses more than maxClientCnxns connections per address)", addr, err)
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame, &resp); err != nil || resp.TimeOut <= 0 {
		nc.Close()
		return nil, fmt.Errorf("%s: handshake: no session (err %v, timeout %d)", addr, err, resp.TimeOut)
	}
	_ = nc.SetDeadline(time.Time{})
	go c.read(fr)
	return c, nil
}

// send queues a request, waiting while the connection has its maximum in
// flight (after flushing what is buffered, so the wait can end). done runs
// in the reader goroutine with the reply.
func (c *conn) send(op zkproto.OpCode, req zkproto.Record, cl *call) error {
	select {
	case c.slots <- struct{}{}:
	default:
		if err := c.flush(); err != nil {
			return err
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.dead:
			return c.err
		}
	}
	c.xid++
	cl.xid = c.xid
	cl.start = time.Now()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return c.err
	}
	c.inflight <- cl // never blocks: slots bounds it
	c.mu.Unlock()

	c.enc.Reset()
	off := c.enc.StartFrame()
	h := zkproto.RequestHeader{Xid: cl.xid, Type: op}
	h.Encode(&c.enc)
	req.Encode(&c.enc)
	c.enc.FinishFrame(off)
	if _, err := c.bw.Write(c.enc.Bytes()); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// flush writes the buffered requests.
func (c *conn) flush() error {
	if c.bw.Buffered() == 0 {
		return nil
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := c.bw.Flush(); err != nil {
		c.fail(err)
		return err
	}
	return nil
}

// wait flushes and returns once no request is in flight, or after timeout,
// when it closes the connection (whose calls then fail).
func (c *conn) wait(timeout time.Duration) {
	_ = c.flush()
	t := time.AfterFunc(timeout, func() { c.fail(fmt.Errorf("no reply within %v", timeout)) })
	defer t.Stop()
	n := cap(c.slots)
	for range n {
		c.slots <- struct{}{} // every call in flight returns its token when it ends
	}
	for range n {
		<-c.slots
	}
}

// read runs in its own goroutine: it matches replies to calls and hands
// watch events to onEvent, until the connection fails.
func (c *conn) read(fr *zkproto.FrameReader) {
	for {
		frame, err := fr.Next()
		if err != nil {
			c.fail(err)
			return
		}
		at := time.Now()
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			c.fail(fmt.Errorf("reply header: %w", err))
			return
		}
		switch h.Xid {
		case zkproto.XidNotification:
			var ev zkproto.WatcherEvent
			if ev.Decode(d) == nil && c.onEvent != nil {
				c.onEvent(ev, at)
			}
			continue
		case zkproto.XidPing:
			continue
		}
		var cl *call
		select {
		case cl = <-c.inflight:
		default:
		}
		if cl == nil && c.closing.Load() { // the closeSession reply
			c.fail(errSessionClosed)
			return
		}
		if cl == nil || cl.xid != h.Xid {
			if cl != nil {
				cl.done(cl, &reply{hdr: zkproto.ReplyHeader{Xid: cl.xid, Err: zkproto.ErrConnectionLoss}, at: at, err: errOutOfOrder})
				<-c.slots
			}
			c.fail(fmt.Errorf("%w: xid %d", errOutOfOrder, h.Xid))
			return
		}
		cl.done(cl, &reply{hdr: h, body: frame[d.Offset():], at: at})
		<-c.slots
	}
}

// fail closes the connection once and ends every call in flight with a
// ConnectionLoss reply.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = err
	c.mu.Unlock()
	c.nc.Close()
	close(c.dead)
	now := time.Now()
	for {
		select {
		case cl := <-c.inflight:
			cl.done(cl, &reply{hdr: zkproto.ReplyHeader{Xid: cl.xid, Err: zkproto.ErrConnectionLoss}, at: now, err: err})
			<-c.slots
		default:
			return
		}
	}
}

// close ends the session politely (closeSession) and the connection; call
// it with nothing in flight.
func (c *conn) close() { _ = c.closeWithin(2 * time.Second) }

// closeWithin sends closeSession, waits up to timeout for the server to
// answer, and closes the connection. It returns nil when the server
// answered, else why not.
func (c *conn) closeWithin(timeout time.Duration) error {
	if c.isClosed() {
		return c.failure()
	}
	c.closing.Store(true)
	c.enc.Reset()
	off := c.enc.StartFrame()
	h := zkproto.RequestHeader{Xid: c.xid + 1, Type: zkproto.OpCloseSession}
	h.Encode(&c.enc)
	c.enc.FinishFrame(off)
	_, _ = c.bw.Write(c.enc.Bytes())
	_ = c.flush()
	// The server answers and closes; give it a moment, then close anyway.
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.dead:
	case <-t.C:
		c.fail(fmt.Errorf("no closeSession reply within %v", timeout))
	}
	if err := c.failure(); err != errSessionClosed {
		return err
	}
	return nil
}

// failure is why the connection closed (nil while open).
func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
