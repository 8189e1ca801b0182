package zk

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Read-only mode (ZooKeeper's readonlymode.enabled): a node that has lost
// its leader for longer than an election closes its connections, as always,
// and then accepts the clients that said canBeReadOnly. They read the
// local replica, possibly stale; every write and sync fails with
// NotReadOnly. When a leader is back the node closes those connections so
// the clients reconnect read-write.

// readOnly reports whether this node currently serves read-only.
func (s *Server) readOnly() bool { return s.ro.Load() }

// enterReadOnly switches the node to read-only mode, if enabled.
func (s *Server) enterReadOnly() {
	if s.cfg.ReadOnlyMode && !s.ro.Swap(true) {
		s.log.Warn().Msg("no Raft leader: serving read-only clients (readonlymode.enabled)")
	}
}

// leaveReadOnly ends read-only mode and closes the read-only connections.
func (s *Server) leaveReadOnly() {
	if !s.ro.Swap(false) {
		return
	}
	n := 0
	for _, c := range s.snapshotConns() {
		if c.readOnly.Load() {
			c.abort()
			n++
		}
	}
	s.log.Info().Int("connections", n).Msg("Raft leader back: leaving read-only mode; read-only clients reconnect read-write")
}

// readOnlyHandshake admits a client to a read-only node: a new session is
// local to this node (the client will create a real one once it finds a
// read-write server, as ZooKeeper's clients do); an existing session is
// checked against the local replica.
func (c *conn) readOnlyHandshake(req *zkproto.ConnectRequest) bool {
	if !req.ReadOnly {
		c.log.Info().Msg("refusing session: node is read-only and the client did not allow read-only")
		return false
	}
	timeout := c.srv.node.NegotiateTimeout(req.TimeOut)
	id, passwd := req.SessionID, req.Passwd
	if id == 0 {
		var b [8 + zkproto.PasswordLength]byte
		if _, err := rand.Read(b[:]); err != nil {
			c.log.Error().Err(err).Msg("no randomness for a read-only session")
			return false
		}
		// The replica id in the top byte, as ZooKeeper's session ids; never
		// stored, so never in conflict with a replicated one for long.
		id = int64(c.srv.cfg.ReplicaID&0xff)<<56 | int64(binary.BigEndian.Uint64(b[:8])>>8)
		passwd = b[8:]
	} else if info, err := c.srv.node.SessionInfo(id); err != nil || string(info.Password) != string(req.Passwd) {
		c.log.Info().Str("session", sessionHex(id)).Msg("read-only reconnect refused: session expired or wrong password")
		c.sendExpired(req)
		return false
	}
	c.readOnly.Store(true)
	c.setSession(id, timeout)
	c.log.Info().Str("session", sessionHex(id)).Msg("read-only session")
	c.sendConnectResponse(req, timeout, id, passwd)
	return true
}

// refuseReadOnly answers a state-changing request on a read-only
// connection with NotReadOnly, as ZooKeeper's ReadOnlyRequestProcessor.
func (c *conn) refuseReadOnly(h zkproto.RequestHeader) bool {
	if !c.readOnly.Load() {
		return false
	}
	switch h.Type {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpDeleteContainer, zkproto.OpSetData, zkproto.OpSetACL,
		zkproto.OpMulti, zkproto.OpCheck, zkproto.OpReconfig, zkproto.OpSync:
	default:
		return false
	}
	if c.waitIdle() {
		c.replyNow(h.Xid, h.Type, c.srv.lastZxid(), zkproto.ErrNotReadOnly, nil)
	}
	return true
}

// readOnlyClose ends a read-only session's connection: the session is not
// replicated, so there is nothing to propose.
func (c *conn) readOnlyClose(h zkproto.RequestHeader) {
	if c.waitIdle() {
		p := c.addPending(h.Xid, h.Type)
		c.complete(p, replyFrame(h.Xid, c.srv.lastZxid(), zkproto.ErrOK, nil), true)
	}
}

// ReadOnly reports whether the door currently serves read-only clients
// (no leader, readonlymode.enabled).
func (s *Server) ReadOnly() bool { return s.readOnly() }
