package zk

import (
	"crypto/rand"
	"errors"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/zkproto"
)

// handshake answers the ConnectRequest: a new session (a CreateSession
// command), or a reconnect to an existing one (SetSessionOwner after the
// password check). It returns false when the connection must close.
func (c *conn) handshake(frame []byte) bool {
	var req zkproto.ConnectRequest
	if err := zkproto.Unmarshal(frame, &req); err != nil {
		c.log.Warn().Err(err).Msg("malformed ConnectRequest; closing connection")
		return false
	}
	c.srv.metrics.packetsReceived.Add(1)
	if !c.srv.throttle.allow() {
		// ZooKeeper takes a token per ConnectRequest and closes the
		// connection without an answer when none is left.
		c.log.Warn().Msg("connection throttled (zookeeper.connection_throttle_*); closing")
		return false
	}
	if !c.srv.serving() && !c.srv.readOnly() {
		// No leader: this node cannot create or resume sessions. Closing
		// lets the client try another server at once.
		c.log.Info().Msg("refusing session: no Raft leader")
		return false
	}
	if req.LastZxidSeen > c.srv.lastZxid() && c.srv.node.Voters() > 1 {
		// Behind the client: catch up to the commit index known now (a
		// read index, as sync), bounded by a third of the requested
		// timeout, then refuse at once if still behind — a zxid the
		// cluster never committed must not hold the client past its own
		// connect timeout.
		c.srv.node.AwaitCommitted(handshakeCatchUp(&req))
	}
	if last := c.srv.lastZxid(); req.LastZxidSeen > last {
		// ZooKeeper closes without a reply so the client tries another server.
		c.log.Info().Int64("client_zxid", req.LastZxidSeen).Int64("our_zxid", last).
			Msg("refusing session: client has seen a later zxid; it must try another server")
		return false
	}
	if !c.srv.serving() {
		return c.readOnlyHandshake(&req)
	}
	timeout := c.srv.node.NegotiateTimeout(req.TimeOut)
	if req.SessionID == 0 {
		return c.createSession(&req, timeout)
	}
	return c.resumeSession(&req, timeout)
}

// handshakeCatchUp bounds how long a handshake waits to catch up: a third
// of the requested timeout, so a lagging replica refuses (and the client
// tries the next server) well within the client's own connect timeout.
func handshakeCatchUp(req *zkproto.ConnectRequest) time.Duration {
	return min(time.Duration(req.TimeOut)*time.Millisecond/3, 10*time.Second)
}

func (c *conn) createSession(req *zkproto.ConnectRequest, timeout int32) bool {
	if !c.srv.admitSession() {
		c.log.Warn().Int64("max_sessions", c.srv.currentLimits().MaxSessions).
			Msg("the tenant has its maximum of sessions; refusing this connection (raise it with zkbridge tenant update --max-sessions)")
		return false
	}
	passwd := make([]byte, zkproto.PasswordLength)
	if _, err := rand.Read(passwd); err != nil {
		c.log.Error().Err(err).Msg("no randomness for a session password")
		return false
	}
	id, err := c.srv.node.CreateSession(c.id, timeout, passwd)
	if err != nil {
		c.log.Warn().Err(err).Msg("session creation failed; closing connection")
		return false
	}
	c.bindSession(id, timeout)
	c.stats.mu.Lock()
	c.stats.lastCxid, c.stats.lastOp = 0, "SESS" // cons shows the createSession (cxid 0), as ZooKeeper
	c.stats.mu.Unlock()
	c.log.Info().Str("session", sessionHex(id)).Int32("timeout_ms", timeout).Msg("session created")
	c.sendConnectResponse(req, timeout, id, passwd)
	return true
}

func (c *conn) resumeSession(req *zkproto.ConnectRequest, timeout int32) bool {
	// ZooKeeper first closes the session's other connections, then checks
	// the password: a wrong password still kicks the legitimate connection.
	c.srv.kickSession(req.SessionID, c)
	info, err := c.srv.node.SessionInfo(req.SessionID)
	if errors.Is(err, zkproto.ErrSessionExpired) && c.srv.node.Voters() > 1 {
		// The session may be younger than this replica's state: a client
		// that created it on another node and moved here at once (its
		// LastZxidSeen is 0 until its first reply). ZooKeeper's followers
		// ask the leader; we catch up to the commit index and look again.
		c.srv.node.AwaitCommitted(handshakeCatchUp(req))
		info, err = c.srv.node.SessionInfo(req.SessionID)
	}
	if err != nil || string(info.Password) != string(req.Passwd) {
		c.log.Info().Str("session", sessionHex(req.SessionID)).Msg("reconnect refused: session expired or wrong password")
		c.sendExpired(req)
		return false
	}
	res, err := c.srv.node.ResumeSession(req.SessionID, c.id, req.Passwd)
	if err != nil {
		c.log.Warn().Err(err).Msg("session reconnect failed; closing connection")
		return false
	}
	if res.Err != zkproto.ErrOK {
		c.sendExpired(req)
		return false
	}
	c.bindSession(req.SessionID, timeout)
	c.log.Info().Str("session", sessionHex(req.SessionID)).Msg("session reconnected")
	c.sendConnectResponse(req, timeout, req.SessionID, req.Passwd)
	return true
}

func (c *conn) bindSession(id int64, timeout int32) {
	c.setSession(id, timeout)
	c.srv.node.TrackSession(id, timeout)
}

// setSession ties the connection to session id (without tracking its
// expiry: read-only sessions are not tracked).
func (c *conn) setSession(id int64, timeout int32) {
	atomic.StoreInt64(&c.session, id)
	atomic.StoreInt32(&c.timeout, timeout)
	c.seq = 0
	c.srv.registerSession(c)
}

// sendConnectResponse answers in the request's form (with the readOnly
// byte only if the request had one).
func (c *conn) sendConnectResponse(req *zkproto.ConnectRequest, timeout int32, id int64, passwd []byte) {
	resp := zkproto.ConnectResponse{TimeOut: timeout, SessionID: id, Passwd: passwd, HasReadOnly: req.HasReadOnly, ReadOnly: c.readOnly.Load()}
	var e zkproto.Encoder
	off := e.StartFrame()
	resp.Encode(&e)
	e.FinishFrame(off)
	c.enqueue(e.Bytes())
}

// sendExpired answers as ZooKeeper does for an unknown or expired session
// or a wrong password: timeout 0, session 0, a zero password, then close.
func (c *conn) sendExpired(req *zkproto.ConnectRequest) {
	c.sendConnectResponse(req, 0, 0, make([]byte, zkproto.PasswordLength))
	c.closeAfterFlush()
}

func sessionHex(id int64) string { return node.SessionHex(id) }
