package server

import (
	"context"
	"crypto/rand"
	"errors"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/sm"
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
	if !c.srv.serving() && !c.srv.readOnly() {
		// No leader: this node cannot create or resume sessions. Closing
		// lets the client try another server at once.
		c.log.Info().Msg("refusing session: no Raft leader")
		return false
	}
	if req.LastZxidSeen > c.srv.lastZxid() && c.srv.voters() > 1 {
		// Behind the client: catch up to the commit index known now (a
		// read index, as sync), bounded by a third of the requested
		// timeout, then refuse at once if still behind — a zxid the
		// cluster never committed must not hold the client past its own
		// connect timeout.
		c.srv.awaitCommitted(handshakeCatchUp(&req))
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
	timeout := c.srv.negotiateTimeout(req.TimeOut)
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

// awaitCommitted waits, at most wait, until this replica has applied
// everything committed when it asked (a read index, as sync does).
func (s *Server) awaitCommitted(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = s.node.catchUp(ctx) // still behind after wait: the caller decides
}

func (s *Server) negotiateTimeout(requested int32) int32 {
	lo, hi := int32(s.cfg.MinSessionTimeout.Milliseconds()), int32(s.cfg.MaxSessionTimeout.Milliseconds())
	switch {
	case requested < lo:
		return lo
	case requested > hi:
		return hi
	}
	return requested
}

func (c *conn) createSession(req *zkproto.ConnectRequest, timeout int32) bool {
	passwd := make([]byte, zkproto.PasswordLength)
	if _, err := rand.Read(passwd); err != nil {
		c.log.Error().Err(err).Msg("no randomness for a session password")
		return false
	}
	cmd := &sm.Command{
		Header: sm.Header{Conn: c.id, Time: time.Now().UnixMilli()},
		Op:     &sm.CreateSession{Timeout: timeout, Password: passwd, Owner: c.srv.cfg.ReplicaID},
	}
	res, err := c.srv.node.proposeSync(cmd)
	if err != nil || res.Err != zkproto.ErrOK {
		c.log.Warn().Err(err).Msg("session creation failed; closing connection")
		return false
	}
	c.bindSession(res.Session, timeout)
	c.stats.mu.Lock()
	c.stats.lastCxid, c.stats.lastOp = 0, "SESS" // cons shows the createSession (cxid 0), as ZooKeeper
	c.stats.mu.Unlock()
	c.log.Info().Str("session", sessionHex(res.Session)).Int32("timeout_ms", timeout).Msg("session created")
	c.sendConnectResponse(req, timeout, res.Session, passwd)
	return true
}

func (c *conn) resumeSession(req *zkproto.ConnectRequest, timeout int32) bool {
	// ZooKeeper first closes the session's other connections, then checks
	// the password: a wrong password still kicks the legitimate connection.
	c.srv.kickSession(req.SessionID, c)
	info, err := c.srv.sessionInfo(req.SessionID)
	if errors.Is(err, zkproto.ErrSessionExpired) && c.srv.voters() > 1 {
		// The session may be younger than this replica's state: a client
		// that created it on another node and moved here at once (its
		// LastZxidSeen is 0 until its first reply). ZooKeeper's followers
		// ask the leader; we catch up to the commit index and look again.
		c.srv.awaitCommitted(handshakeCatchUp(req))
		info, err = c.srv.sessionInfo(req.SessionID)
	}
	if err != nil || string(info.Password) != string(req.Passwd) {
		c.log.Info().Str("session", sessionHex(req.SessionID)).Msg("reconnect refused: session expired or wrong password")
		c.sendExpired(req)
		return false
	}
	cmd := &sm.Command{
		Header: sm.Header{Session: req.SessionID, Conn: c.id, Time: time.Now().UnixMilli()},
		Op:     &sm.SetSessionOwner{Owner: c.srv.cfg.ReplicaID, Password: req.Passwd},
	}
	// Taking a session over is idempotent, so one lost in a leader change
	// (a client that fled a killed leader to a follower that still
	// followed it) is proposed again: closing would send the client on to
	// the next server, and past the last one go-zookeeper pauses a second.
	var res *sm.Result
	for attempt := 0; ; attempt++ {
		res, err = c.srv.node.proposeSync(cmd)
		if !errors.Is(err, errOutcomeUnknown) || attempt == 3 {
			break
		}
		c.log.Info().Str("session", sessionHex(req.SessionID)).Msg("session takeover lost in a leader change; proposing it again")
	}
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
	c.srv.sessions.add(id, timeout)
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

func sessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// sessionTracker keeps session deadlines in memory on the leader and
// proposes CloseSession(expired) for sessions whose clients went quiet.
// Every packet of a session's connection touches it.
type sessionTracker struct {
	mu        sync.Mutex
	deadlines map[int64]time.Time
	timeouts  map[int64]time.Duration
	expiring  map[int64]bool // CloseSession proposed, not yet applied
	// active collects sessions touched locally since the last report; nil
	// on a single node, which has no one to report to.
	active map[int64]struct{}
}

func newSessionTracker() *sessionTracker {
	return &sessionTracker{
		deadlines: map[int64]time.Time{},
		timeouts:  map[int64]time.Duration{},
		expiring:  map[int64]bool{},
		active:    map[int64]struct{}{}, // reported by touchLoop once the node has peers
	}
}

func (t *sessionTracker) add(id int64, timeoutMs int32) {
	d := time.Duration(timeoutMs) * time.Millisecond
	t.mu.Lock()
	t.timeouts[id] = d
	t.deadlines[id] = time.Now().Add(d)
	t.mu.Unlock()
}

// touch records activity of a session's connection on this node: a new
// deadline, and a mark so the next report tells the other nodes.
func (t *sessionTracker) touch(id int64) {
	if id == 0 {
		return
	}
	t.mu.Lock()
	if d, ok := t.timeouts[id]; ok {
		t.deadlines[id] = time.Now().Add(d)
	}
	if t.active != nil {
		t.active[id] = struct{}{}
	}
	t.mu.Unlock()
}

// refresh gives a session a new deadline for activity another node
// reported. It is not marked for this node's report: echoing it would keep
// every reported session alive forever.
func (t *sessionTracker) refresh(id int64) {
	t.mu.Lock()
	if d, ok := t.timeouts[id]; ok {
		t.deadlines[id] = time.Now().Add(d)
	}
	t.mu.Unlock()
}

// takeActive returns, sorted, the sessions touched by this node's
// connections since the last call (they are reported to the other nodes).
func (t *sessionTracker) takeActive() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int64, 0, len(t.active))
	for id := range t.active {
		out = append(out, id)
	}
	clear(t.active)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (t *sessionTracker) remove(id int64) {
	t.mu.Lock()
	delete(t.deadlines, id)
	delete(t.timeouts, id)
	delete(t.expiring, id)
	t.mu.Unlock()
}

// expired returns the sessions past their deadline not yet being closed,
// marking them as being closed.
func (t *sessionTracker) expired(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for id, dl := range t.deadlines {
		if now.After(dl) && !t.expiring[id] {
			t.expiring[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// retry clears the "being closed" mark after a failed proposal.
func (t *sessionTracker) retry(id int64) {
	t.mu.Lock()
	delete(t.expiring, id)
	t.mu.Unlock()
}

// snapshot returns every tracked session's deadline (dump).
func (t *sessionTracker) snapshot() map[int64]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]time.Time, len(t.deadlines))
	for id, d := range t.deadlines {
		out[id] = d
	}
	return out
}

func (t *sessionTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deadlines)
}

// touchLoop reports this node's session activity to every replica (and so
// to the leader) twice per tick, as ZooKeeper learners ping the leader. The
// report is a TouchSessions entry: it needs no transport of its own, and a
// new leader already holds fresh deadlines.
func (s *Server) touchLoop(stop <-chan struct{}) {
	tick := time.NewTicker(s.cfg.TickTime / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			ids := s.sessions.takeActive()
			// Decided each time: a node that joined, or a single node that
			// was given voters, learns of its peers only after it started.
			if len(ids) == 0 || (s.voters() <= 1 && !s.cfg.Observer && !s.isObserver()) {
				continue
			}
			cmd := &sm.Command{Header: sm.Header{Time: time.Now().UnixMilli()}, Op: &sm.TouchSessions{IDs: ids}}
			s.node.propose(cmd, func(_ *sm.Result, err error) {
				if err != nil {
					s.log.Debug().Err(err).Msg("session activity report failed; the next one carries it")
				}
			})
		}
	}
}

// expiryLoop proposes the expiry of quiet sessions until stop closes.
// Only the leader expires sessions; a node that becomes leader first gives
// every session a full timeout, as a new ZooKeeper leader does.
func (s *Server) expiryLoop(stop <-chan struct{}) {
	tick := time.NewTicker(s.cfg.TickTime / 2)
	defer tick.Stop()
	wasLeader := true // Start loaded the sessions with fresh deadlines
	var leaderless time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			s.dropClientsWithoutLeader(now, &leaderless)
			leader := s.node.isLeader()
			if leader && !wasLeader {
				// Let ReadIndex complete on every replica again (see Start).
				s.node.propose(noopCommand(), func(*sm.Result, error) {})
				if err := s.loadSessions(); err != nil {
					s.log.Error().Err(err).Msg("reload sessions after becoming leader")
				}
			}
			wasLeader = leader
			if !leader {
				continue
			}
			for _, id := range s.sessions.expired(now) {
				s.expireSession(id)
			}
		}
	}
}

// dropClientsWithoutLeader closes every client connection once this node
// has had no leader for two ticks (at least 2 s: longer than an election),
// so clients of a node cut off from the majority fail over to one that can
// serve them, as those of a ZooKeeper follower that lost its leader do.
func (s *Server) dropClientsWithoutLeader(now time.Time, since *time.Time) {
	if s.node.status().HasLeader {
		*since = time.Time{}
		s.leaveReadOnly()
		return
	}
	if since.IsZero() {
		*since = now
		return
	}
	if now.Sub(*since) < max(2*s.cfg.TickTime, 2*time.Second) {
		return
	}
	s.enterReadOnly()
	var conns []*conn
	for _, c := range s.snapshotConns() {
		if !c.readOnly.Load() {
			conns = append(conns, c)
		}
	}
	if len(conns) > 0 {
		s.log.Warn().Int("connections", len(conns)).Dur("without_leader", now.Sub(*since)).
			Msg("no Raft leader: closing client connections so they fail over")
	}
	for _, c := range conns {
		c.abort()
	}
}

func (s *Server) expireSession(id int64) {
	cmd := &sm.Command{
		Header: sm.Header{Session: id, Time: time.Now().UnixMilli()},
		Op:     &sm.CloseSession{Expired: true},
	}
	s.node.propose(cmd, func(res *sm.Result, err error) {
		if err != nil {
			s.log.Warn().Err(err).Str("session", sessionHex(id)).Msg("session expiry proposal failed; will retry")
			s.sessions.retry(id)
			return
		}
		s.log.Info().Str("session", sessionHex(id)).Msg("session expired")
	})
}

// loadSessions gives every replicated session a full timeout from now, as
// a new ZooKeeper leader does.
func (s *Server) loadSessions() error {
	v, err := s.store.View()
	if err != nil {
		return err
	}
	defer v.Close()
	return v.Sessions(func(info *sm.SessionInfo) error {
		s.sessions.add(info.ID, info.Timeout)
		return nil
	})
}
