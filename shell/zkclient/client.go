package zkclient

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/zkproto"
)

// State is the client's connection state, named as the Java client's
// ZooKeeper.States (zkCli's prompt shows it).
type State int

// Connection states.
const (
	StateConnecting State = iota
	StateConnected
	StateConnectedReadOnly
	StateClosed
	StateAuthFailed
)

// String returns the Java name of the state.
func (s State) String() string {
	switch s {
	case StateConnecting:
		return "CONNECTING"
	case StateConnected:
		return "CONNECTED"
	case StateConnectedReadOnly:
		return "CONNECTEDREADONLY"
	case StateAuthFailed:
		return "AUTH_FAILED"
	}
	return "CLOSED"
}

// Alive reports whether the client still tries to serve requests (Java's
// States.isAlive: everything but CLOSED and AUTH_FAILED).
func (s State) Alive() bool { return s != StateClosed && s != StateAuthFailed }

// Event is a watch notification or a connection state change.
type Event struct {
	Type  zkproto.EventType
	State zkproto.KeeperState
	Path  string // "" for state changes (Java prints it as null)
}

// String formats the event as the Java client's WatchedEvent.toString.
func (e Event) String() string {
	path := e.Path
	if path == "" && e.Type == zkproto.EventNone {
		path = "null"
	}
	return "WatchedEvent state:" + KeeperStateName(e.State) + " type:" + e.Type.String() + " path:" + path
}

// KeeperStateName is the Java enum name of a keeper state.
func KeeperStateName(s zkproto.KeeperState) string {
	switch s {
	case zkproto.StateDisconnected:
		return "Disconnected"
	case zkproto.StateNoSyncConnected:
		return "NoSyncConnected"
	case zkproto.StateSyncConnected:
		return "SyncConnected"
	case zkproto.StateAuthFailed:
		return "AuthFailed"
	case zkproto.StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case zkproto.StateSaslAuthenticated:
		return "SaslAuthenticated"
	case zkproto.StateClosed:
		return "Closed"
	case zkproto.StateExpired:
		return "Expired"
	}
	return "Unknown"
}

// Error is a failed request: the server's code and the path it concerned
// (as the Java client's KeeperException).
type Error struct {
	Code zkproto.ErrCode
	Path string
	// NullPath marks an error the Java client raises without a path
	// (zkCli then prints "null" where the path goes).
	NullPath bool
}

// Error formats as KeeperException.getMessage: "KeeperErrorCode = NoNode for /x".
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Code.Error()
	}
	return e.Code.ForPath(e.Path)
}

// Is makes errors.Is(err, zkproto.ErrNoNode) work.
func (e *Error) Is(target error) bool {
	c, ok := target.(zkproto.ErrCode)
	return ok && c == e.Code
}

// Code returns the ZooKeeper error code of err (ErrOK for nil, ErrSystemError
// for errors that are not server codes).
func Code(err error) zkproto.ErrCode {
	if err == nil {
		return zkproto.ErrOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c zkproto.ErrCode
	if errors.As(err, &c) {
		return c
	}
	return zkproto.ErrSystemError
}

// ErrClosed is returned by requests on a closed client.
var ErrClosed = errors.New("zkclient: client is closed")

// Options configure New.
type Options struct {
	// Servers are host:port addresses, tried in order, round robin.
	Servers []string
	// Chroot is prepended to every path ("" or "/app").
	Chroot string
	// SessionTimeout is the requested session timeout (default 30 s).
	SessionTimeout time.Duration
	// ReadOnly lets a read-only server (one cut off from its quorum) serve the session.
	ReadOnly bool
	// Watcher receives every event, in the order the server sent them, on
	// the client's reader goroutine: it must not block or call the client.
	Watcher func(Event)
	// Dial opens a connection (default: TCP). TLS plugs in here.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// SASL, when set, authenticates every connection with DIGEST-MD5
	// before any request, as the Java client with a JAAS Client section.
	SASL *SASLCredentials
}

// SASLCredentials are a DIGEST-MD5 user and password, or a GSSAPI
// (Kerberos) login.
type SASLCredentials struct {
	User, Password string
	// GSSAPI, when set, makes the mechanism GSSAPI: it returns a client
	// holding a service ticket for the server at host.
	GSSAPI func(host string) (*sasl.GSSAPIClient, error)
}

// ParseConnectString splits zkCli's "-server" form "h1:p1,h2:p2/chroot"
// into servers and chroot.
func ParseConnectString(s string) (servers []string, chroot string, err error) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, chroot = s[:i], s[i:]
		if chroot == "/" {
			chroot = ""
		} else if err := ValidatePath(chroot); err != nil {
			return nil, "", fmt.Errorf("chroot: %w", err)
		}
	}
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(a, "2181") // the Java client's default port
		}
		servers = append(servers, a)
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("no server in %q", s)
	}
	return servers, chroot, nil
}

type call struct {
	xid     int32
	op      zkproto.OpCode
	path    string // the client's path, for errors
	resp    zkproto.Record
	done    chan error
	onReply func(code zkproto.ErrCode) // runs on the reader before later events
}

type authInfo struct {
	scheme string
	auth   []byte
}

// Client is a ZooKeeper session. It is safe for concurrent use.
type Client struct {
	opts Options

	mu        sync.Mutex
	state     State
	sessionID int64
	passwd    []byte
	timeout   time.Duration // negotiated
	lastZxid  int64
	conn      net.Conn
	wmu       sync.Mutex // serializes frame writes on conn
	pending   map[int32]*call
	xid       int32
	auths     []authInfo
	watches   watchTable
	attempt   chan struct{} // closed and replaced after every connection attempt
	closing   chan struct{}
	closeOnce sync.Once
	// closeRequested is set before closeSession goes out: the server then
	// hangs up, which is no reason to reconnect.
	closeRequested bool
	runDone        chan struct{}
	server         string // address of the current connection
	next           int    // index of the next server to try
}

// New starts a client: it connects in the background (Wait or any request
// waits for the connection) and keeps the session alive until Close.
func New(opts Options) (*Client, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("zkclient: no servers")
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Second
	}
	if opts.Dial == nil {
		opts.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	if opts.Chroot == "/" {
		opts.Chroot = ""
	}
	c := &Client{
		opts:    opts,
		state:   StateConnecting,
		passwd:  make([]byte, zkproto.PasswordLength),
		timeout: opts.SessionTimeout,
		pending: map[int32]*call{},
		watches: newWatchTable(),
		attempt: make(chan struct{}),
		closing: make(chan struct{}),
		runDone: make(chan struct{}),
	}
	go c.run()
	return c, nil
}

// State returns the connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID returns the session id (0 before the first connection).
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SessionTimeout returns the negotiated session timeout.
func (c *Client) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// Server returns the address of the server the client is connected to ("" if none).
func (c *Client) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	return c.server
}

// Wait waits up to d for the client to be connected.
func (c *Client) Wait(d time.Duration) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		st, attempt := c.state, c.attempt
		c.mu.Unlock()
		switch st {
		case StateConnected, StateConnectedReadOnly:
			return nil
		case StateClosed, StateAuthFailed:
			return ErrClosed
		}
		select {
		case <-attempt:
		case <-deadline.C:
			return &Error{Code: zkproto.ErrConnectionLoss}
		}
	}
}

func (c *Client) emit(ev Event) {
	if c.opts.Watcher != nil {
		c.opts.Watcher(ev)
	}
}

// run is the connection loop: connect, serve until the connection breaks,
// reconnect with the same session, until Close or expiry.
func (c *Client) run() {
	defer close(c.runDone)
	failures := 0
	for {
		select {
		case <-c.closing:
			return
		default:
		}
		conn, addr, err := c.connect()
		if errors.Is(err, errClosed) {
			return
		}
		if err != nil {
			var expired *expiredError
			if errors.As(err, &expired) {
				c.finish(StateClosed, zkproto.ErrSessionExpired)
				c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateExpired})
				return
			}
			var refused *saslRefusedError
			if errors.As(err, &refused) {
				c.finish(StateAuthFailed, zkproto.ErrAuthFailed)
				c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateAuthFailed})
				return
			}
			c.attemptDone()
			failures++
			// A pass over every server failed: back off a little, as the
			// Java client does, so a dead ensemble is not spun on.
			if failures%len(c.opts.Servers) == 0 {
				select {
				case <-c.closing:
					return
				case <-time.After(time.Duration(100+rand.IntN(900)) * time.Millisecond):
				}
			}
			continue
		}
		failures = 0
		c.serve(conn, addr)
		c.mu.Lock()
		alive := c.state.Alive() && !c.closeRequested
		if alive {
			c.state = StateConnecting
		}
		c.mu.Unlock()
		if !alive {
			return // closed, or the server refused our auth: the session is over
		}
		c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateDisconnected})
	}
}

// errClosed ends a connection attempt that Close overtook.
var errClosed = errors.New("client closed")

type expiredError struct{}

func (*expiredError) Error() string { return "session expired" }

// connect dials the next server and performs the handshake.
func (c *Client) connect() (net.Conn, string, error) {
	c.mu.Lock()
	addr := c.opts.Servers[c.next%len(c.opts.Servers)]
	c.next++
	req := zkproto.ConnectRequest{LastZxidSeen: c.lastZxid, TimeOut: int32(c.opts.SessionTimeout.Milliseconds()),
		SessionID: c.sessionID, Passwd: c.passwd, ReadOnly: c.opts.ReadOnly, HasReadOnly: true}
	hadSession := c.sessionID != 0
	c.mu.Unlock()
	connectTimeout := c.opts.SessionTimeout / time.Duration(len(c.opts.Servers))
	nc, err := c.opts.Dial(addr, connectTimeout)
	if err != nil {
		return nil, addr, err
	}
	_ = nc.SetDeadline(time.Now().Add(connectTimeout))
	if err := zkproto.WriteFrame(nc, zkproto.Marshal(&req)); err != nil {
		nc.Close()
		return nil, addr, err
	}
	frame, err := zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer).Next()
	if err != nil {
		nc.Close()
		return nil, addr, err
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame, &resp); err != nil {
		nc.Close()
		return nil, addr, fmt.Errorf("connect response from %s: %w", addr, err)
	}
	if resp.TimeOut <= 0 {
		nc.Close()
		if hadSession {
			return nil, addr, &expiredError{}
		}
		return nil, addr, fmt.Errorf("%s refused the session", addr)
	}
	_ = nc.SetDeadline(time.Time{})
	useSASL := c.opts.SASL != nil
	var gss *sasl.GSSAPIClient
	if useSASL && c.opts.SASL.GSSAPI != nil {
		host, _, _ := net.SplitHostPort(addr)
		if gss, err = c.opts.SASL.GSSAPI(host); err != nil {
			// As the Java client: a Kerberos login or service ticket that
			// fails on the client's side is an AuthFailed event, and the
			// session goes on unauthenticated.
			c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateAuthFailed})
			useSASL = false
		}
	}
	c.mu.Lock()
	c.sessionID, c.passwd = resp.SessionID, resp.Passwd
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	c.server = addr
	c.state = StateConnected
	if resp.ReadOnly {
		c.state = StateConnectedReadOnly
	}
	if useSASL {
		// SASL first, on the bare connection: nothing else may go out
		// before it completes (the Java client holds its queue too). As in
		// Java, the connection is announced before it is authenticated.
		c.mu.Unlock()
		c.emit(Event{Type: zkproto.EventNone, State: connectedState(resp.ReadOnly)})
		err := c.saslExchange(nc, gss)
		c.mu.Lock()
		if err != nil {
			c.mu.Unlock()
			nc.Close()
			return nil, addr, err
		}
	}
	auths := append([]authInfo(nil), c.auths...)
	sw := c.watches.setWatches(c.lastZxid, c.opts.Chroot)
	c.mu.Unlock()
	// Auth and watches go first, before any request queued by a caller.
	for _, a := range auths {
		if err := c.write(nc, zkproto.XidAuth, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: a.scheme, Auth: a.auth}); err != nil {
			nc.Close()
			return nil, addr, err
		}
	}
	if sw != nil {
		if err := c.write(nc, zkproto.XidSetWatches, zkproto.OpSetWatches2, sw); err != nil {
			nc.Close()
			return nil, addr, err
		}
	}
	// Only now may requests use the connection: after auth and watches.
	c.mu.Lock()
	if c.closeRequested {
		// Close ran while this connection was being made and saw none:
		// end the session here, or the server would keep it (and us,
		// reading pings forever) alive.
		c.mu.Unlock()
		_ = c.write(nc, 0, zkproto.OpCloseSession, nil)
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer).Next() // its reply, or the deadline
		nc.Close()
		return nil, addr, errClosed
	}
	c.conn = nc
	late := append([]authInfo(nil), c.auths[len(auths):]...) // added meanwhile: AddAuth saw no connection
	c.mu.Unlock()
	for _, a := range late {
		if err := c.write(nc, zkproto.XidAuth, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: a.scheme, Auth: a.auth}); err != nil {
			nc.Close()
		}
	}
	if useSASL {
		c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateSaslAuthenticated})
	} else {
		c.emit(Event{Type: zkproto.EventNone, State: connectedState(resp.ReadOnly)})
	}
	c.attemptDone()
	return nc, addr, nil
}

// attemptDone wakes callers waiting for a connection attempt's outcome.
func (c *Client) attemptDone() {
	c.mu.Lock()
	close(c.attempt)
	c.attempt = make(chan struct{})
	c.mu.Unlock()
}

func (c *Client) write(nc net.Conn, xid int32, op zkproto.OpCode, req zkproto.Record) error {
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	if req != nil {
		req.Encode(&e)
	}
	e.FinishFrame(off)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = nc.SetWriteDeadline(time.Now().Add(c.SessionTimeout()))
	_, err := nc.Write(e.Bytes())
	return err
}

// serve reads frames from conn and pings it until it breaks or the client closes.
func (c *Client) serve(nc net.Conn, addr string) {
	stopPing := make(chan struct{})
	go c.pinger(nc, stopPing)
	defer close(stopPing)
	fr := zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer)
	for {
		// No frame (not even a ping reply) for 2/3 of the timeout: the
		// server is gone (the Java client's read timeout).
		_ = nc.SetReadDeadline(time.Now().Add(c.SessionTimeout() * 2 / 3))
		frame, err := fr.Next()
		if err != nil {
			c.dropConn(nc)
			return
		}
		if !c.dispatch(frame) {
			c.dropConn(nc)
			return
		}
	}
}

func (c *Client) pinger(nc net.Conn, stop chan struct{}) {
	t := time.NewTicker(c.SessionTimeout() / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := c.write(nc, zkproto.XidPing, zkproto.OpPing, nil); err != nil {
				nc.Close()
				return
			}
		}
	}
}

// dropConn closes nc and fails every request in flight with ConnectionLoss.
func (c *Client) dropConn(nc net.Conn) {
	nc.Close()
	c.mu.Lock()
	if c.conn == nc {
		c.conn = nil
	}
	pending := c.pending
	c.pending = map[int32]*call{}
	c.mu.Unlock()
	for _, p := range pending {
		p.done <- &Error{Code: zkproto.ErrConnectionLoss, Path: p.path}
	}
}

// dispatch handles one frame; false means the connection must be dropped.
func (c *Client) dispatch(frame []byte) bool {
	d := zkproto.NewDecoder(frame)
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		return false
	}
	switch h.Xid {
	case zkproto.XidPing, zkproto.XidSetWatches:
		return true
	case zkproto.XidAuth:
		if h.Err == zkproto.ErrAuthFailed {
			c.mu.Lock()
			c.state = StateAuthFailed
			c.mu.Unlock()
			c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateAuthFailed})
			return false
		}
		return true
	case zkproto.XidNotification:
		var ev zkproto.WatcherEvent
		if err := ev.Decode(d); err != nil {
			return false
		}
		path := c.stripChroot(ev.Path)
		c.mu.Lock()
		deliver := c.watches.trigger(ev.Type, path)
		c.mu.Unlock()
		if deliver {
			c.emit(Event{Type: ev.Type, State: ev.State, Path: path})
		}
		return true
	}
	c.mu.Lock()
	if h.Zxid > 0 {
		c.lastZxid = h.Zxid
	}
	p := c.pending[h.Xid]
	delete(c.pending, h.Xid)
	c.mu.Unlock()
	if p == nil {
		return true // a reply to a request whose caller gave up
	}
	var err error
	if h.Err != zkproto.ErrOK {
		err = &Error{Code: h.Err, Path: p.path}
	} else if p.resp != nil {
		if derr := p.resp.Decode(d); derr != nil {
			err = fmt.Errorf("decode %s reply: %w", p.op, derr)
		}
	}
	if p.onReply != nil {
		p.onReply(h.Err)
	}
	p.done <- err
	return true
}

func (c *Client) stripChroot(p string) string {
	if c.opts.Chroot == "" || !strings.HasPrefix(p, c.opts.Chroot) {
		return p
	}
	if p == c.opts.Chroot {
		return "/"
	}
	return p[len(c.opts.Chroot):]
}

func (c *Client) serverPath(p string) string {
	if c.opts.Chroot == "" {
		return p
	}
	if p == "/" {
		return c.opts.Chroot
	}
	return c.opts.Chroot + p
}

// do sends a request and waits for its reply. path is the client's path
// (for errors); onReply runs on the reader goroutine with the reply's code
// before any later frame is handled (watch registration).
func (c *Client) do(op zkproto.OpCode, path string, req, resp zkproto.Record, onReply func(zkproto.ErrCode)) error {
	deadline := time.NewTimer(c.opts.SessionTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if !c.state.Alive() {
			c.mu.Unlock()
			return ErrClosed
		}
		if c.conn != nil {
			break // c.mu held
		}
		attempt := c.attempt
		c.mu.Unlock()
		// Not connected: wait for the running attempt; if it fails too,
		// the request fails with ConnectionLoss, as in the Java client.
		select {
		case <-attempt:
		case <-deadline.C:
			return &Error{Code: zkproto.ErrConnectionLoss, Path: path}
		}
		c.mu.Lock()
		connected := c.conn != nil
		c.mu.Unlock()
		if !connected {
			return &Error{Code: zkproto.ErrConnectionLoss, Path: path}
		}
	}
	c.xid++
	if c.xid <= 0 {
		c.xid = 1
	}
	p := &call{xid: c.xid, op: op, path: path, resp: resp, done: make(chan error, 1), onReply: onReply}
	c.pending[p.xid] = p
	nc := c.conn
	c.mu.Unlock()
	if err := c.write(nc, p.xid, op, req); err != nil {
		nc.Close() // the reader fails p with ConnectionLoss
	}
	select {
	case err := <-p.done:
		return err
	case <-c.closing:
		return ErrClosed
	}
}

// Close ends the session (closeSession) and stops the client. It emits a
// Closed event, as the Java client does.
func (c *Client) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		c.mu.Lock()
		c.closeRequested = true
		nc := c.conn
		c.mu.Unlock()
		if nc != nil {
			done := make(chan struct{})
			go func() {
				_ = c.do(zkproto.OpCloseSession, "", &zkproto.Empty{}, nil, nil)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
		}
		c.mu.Lock()
		c.state = StateClosed
		nc = c.conn
		c.mu.Unlock()
		close(c.closing)
		if nc != nil {
			nc.Close()
		}
	})
	if !first {
		return nil
	}
	<-c.runDone
	c.emit(Event{Type: zkproto.EventNone, State: zkproto.StateClosed})
	return nil
}

// finish ends the client from inside the loop (session expired).
func (c *Client) finish(st State, code zkproto.ErrCode) {
	c.mu.Lock()
	c.state = st
	pending := c.pending
	c.pending = map[int32]*call{}
	close(c.attempt)
	c.attempt = make(chan struct{})
	c.mu.Unlock()
	for _, p := range pending {
		p.done <- &Error{Code: code, Path: p.path}
	}
}

// saslRefusedError is a SASL exchange the server refused: the session
// cannot authenticate, retrying would not help.
type saslRefusedError struct{ err error }

func (e *saslRefusedError) Error() string { return "SASL authentication failed: " + e.err.Error() }

// saslStep sends one SASL token and returns the server's answer; a
// refusal (an error code, or the connection closed once the exchange
// started) is a saslRefusedError.
func (c *Client) saslStep(nc net.Conn, fr *zkproto.FrameReader, token []byte, started bool) ([]byte, error) {
	c.mu.Lock()
	c.xid++
	xid := c.xid
	c.mu.Unlock()
	if err := c.write(nc, xid, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: token}); err != nil {
		return nil, err
	}
	frame, err := fr.Next()
	if err != nil {
		if started {
			return nil, &saslRefusedError{err: fmt.Errorf("the server closed the connection: %w", err)}
		}
		return nil, err
	}
	d := zkproto.NewDecoder(frame)
	var h zkproto.ReplyHeader
	var resp zkproto.SetSASLResponse
	if err := h.Decode(d); err != nil {
		return nil, err
	}
	if h.Err != zkproto.ErrOK {
		return nil, &saslRefusedError{err: h.Err}
	}
	if err := resp.Decode(d); err != nil {
		return nil, fmt.Errorf("SASL reply: %w", err)
	}
	return resp.Token, nil
}

// gssapiExchange runs GSSAPI on a new connection: the AP-REQ of g (a
// ticket for the server's host), then the answers to the AP-REP and the layer offer,
// until the server's null token.
func (c *Client) gssapiExchange(nc net.Conn, g *sasl.GSSAPIClient) error {
	fr := zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer)
	_ = nc.SetDeadline(time.Now().Add(c.opts.SessionTimeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	token, err := g.InitialToken()
	if err != nil {
		return &saslRefusedError{err: err}
	}
	for step := 0; step < 4; step++ {
		answer, err := c.saslStep(nc, fr, token, step > 0)
		if err != nil {
			return err
		}
		if g.Done() {
			return nil
		}
		if token, err = g.Respond(answer); err != nil {
			return &saslRefusedError{err: err}
		}
	}
	return &saslRefusedError{err: fmt.Errorf("GSSAPI: the server did not end the exchange")}
}

// saslExchange runs the SASL exchange on a new connection: GSSAPI with
// gss when set, else DIGEST-MD5: an empty first token, the
// server's challenge answered, its rspauth verified.
func (c *Client) saslExchange(nc net.Conn, gss *sasl.GSSAPIClient) error {
	if gss != nil {
		return c.gssapiExchange(nc, gss)
	}
	dc := &sasl.DigestClient{User: c.opts.SASL.User, Password: c.opts.SASL.Password}
	fr := zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer)
	_ = nc.SetDeadline(time.Now().Add(c.opts.SessionTimeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	token := []byte{}
	for step := 0; step < 2; step++ {
		c.mu.Lock()
		c.xid++
		xid := c.xid
		c.mu.Unlock()
		if err := c.write(nc, xid, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: token}); err != nil {
			return err
		}
		frame, err := fr.Next()
		if err != nil {
			if step == 1 {
				// The server hangs up on a wrong password.
				return &saslRefusedError{err: fmt.Errorf("the server closed the connection: %w", err)}
			}
			return err
		}
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		var resp zkproto.SetSASLResponse
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Err != zkproto.ErrOK {
			return &saslRefusedError{err: h.Err}
		}
		if err := resp.Decode(d); err != nil {
			return fmt.Errorf("SASL reply: %w", err)
		}
		if step == 0 {
			if token, err = dc.Respond(resp.Token); err != nil {
				return &saslRefusedError{err: err}
			}
			continue
		}
		if err := dc.Verify(resp.Token); err != nil {
			return &saslRefusedError{err: err}
		}
	}
	return nil
}

func connectedState(readOnly bool) zkproto.KeeperState {
	if readOnly {
		return zkproto.StateConnectedReadOnly
	}
	return zkproto.StateSyncConnected
}
