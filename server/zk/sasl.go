package zk

import (
	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/zkproto"
)

// saslState is the door's SASL setup, fixed at start: the DIGEST-MD5
// users of the JAAS file or its Kerberos service, and the schemes a
// connection must authenticate with before anything else.
type saslState struct {
	users    map[string]string // nil: no JAAS file, no SASL server
	kerberos *sasl.Kerberos    // non-nil: GSSAPI instead of DIGEST-MD5
	enforced []string
	// defaultRealm is the krb5.conf default realm: the realm whose
	// principals the default auth_to_local rule shortens.
	defaultRealm string
}

// saslMechanism is one connection's SASL exchange (sasl.Digest or
// sasl.GSSAPI).
type saslMechanism interface {
	Step(token []byte) ([]byte, error)
	Complete() bool
	AuthenticationID() string
}

func (s *Server) initSASL() {
	users, err := s.cfg.Auth.SASLUsers()
	if err != nil {
		// Validate loads the file first; reaching here means it changed
		// or vanished in between. Serve without SASL, loudly.
		s.log.Error().Err(err).Msg("JAAS file unreadable: SASL clients will not authenticate")
	}
	krb, err := s.cfg.Auth.SASLKerberos()
	if err != nil {
		s.log.Error().Err(err).Msg("JAAS Kerberos login unusable: SASL clients will not authenticate")
	}
	s.sasl = saslState{users: users, kerberos: krb, enforced: s.cfg.Auth.EnforcedSchemes(), defaultRealm: s.cfg.Auth.DefaultKerberosRealm()}
	switch {
	case krb != nil:
		// As ZooKeeper: a Kerberos login in the section makes the
		// mechanism GSSAPI, whatever DIGEST-MD5 users sit beside it.
		s.log.Info().Str("principal", krb.ServicePrincipal()).Str("jaas", s.cfg.Auth.JAASFile).Msg("SASL GSSAPI (Kerberos) enabled")
	case users != nil && len(users) == 0:
		s.log.Warn().Str("jaas", s.cfg.Auth.JAASFile).Msg("the JAAS Server section lists neither user_<name> options nor a Krb5LoginModule with keyTab and principal: every SASL client will fail")
	case users != nil:
		s.log.Info().Int("users", len(users)).Str("jaas", s.cfg.Auth.JAASFile).Msg("SASL DIGEST-MD5 enabled")
	}
}

// password is the JAAS user's password; "super" takes
// SASLAuthenticationProvider.superPassword when it is set.
func (s *Server) saslPassword(user string) (string, bool) {
	if user == "super" && s.cfg.Auth.SASLSuperPassword != "" {
		return s.cfg.Auth.SASLSuperPassword, true
	}
	p, ok := s.sasl.users[user]
	return p, ok
}

// handleSASL answers one SASL token (op 102) as ZooKeeper's processSasl:
// on the reader, straight to the output (not in request order), zxid 0.
// A failed exchange answers AuthFailed (SessionClosedRequireSASLAuth when
// SASL is required) with a null token and closes the connection.
func (c *conn) handleSASL(xid int32, token []byte) bool {
	s := c.srv
	if token == nil {
		// A null buffer (length -1): ZooKeeper 3.8 fails on it before its
		// SASL server sees it and closes the connection without a reply.
		c.log.Warn().Msg("null SASL token; closing the connection")
		s.metrics.authFailed.Add(1)
		c.closeAfterFlush()
		return false
	}
	if s.sasl.users == nil {
		// ZooKeeper without a JAAS Server section has no SASL server on
		// the connection: it answers OK with a null token.
		c.log.Warn().Msg("SASL token received but no JAAS file is configured (--jaas); answering with an empty token")
		c.enqueue(saslFrame(xid, zkproto.ErrOK, nil))
		return true
	}
	if c.saslExchange == nil {
		if s.sasl.kerberos != nil {
			c.saslExchange = sasl.NewGSSAPI(s.sasl.kerberos)
		} else {
			c.saslExchange = sasl.NewDigest(s.saslPassword)
		}
	}
	answer, err := c.saslExchange.Step(token)
	if err != nil {
		s.metrics.authFailed.Add(1)
		required := containsString(s.sasl.enforced, "sasl")
		if s.cfg.Auth.AllowSASLFailedClients && !required {
			c.log.Warn().Err(err).Msg("SASL authentication failed; keeping the connection (allowSaslFailedClients)")
			c.enqueue(saslFrame(xid, zkproto.ErrOK, nil))
			return true
		}
		code := zkproto.ErrAuthFailed
		if required {
			code = zkproto.ErrSessionClosedRequireSASLAuth
		}
		c.log.Warn().Err(err).Msg("SASL authentication failed; closing the connection")
		c.enqueue(saslFrame(xid, code, nil))
		c.closeAfterFlush()
		return false
	}
	if c.saslExchange.Complete() {
		name := c.saslExchange.AuthenticationID()
		id, perr := sasl.Principal(name, s.cfg.Auth.RemoveHostFromPrincipal, s.cfg.Auth.RemoveRealmFromPrincipal)
		if perr == nil && !sasl.DefaultRuleMaps(name, s.sasl.defaultRealm) {
			// ZooKeeper's default rule maps no name of another realm: its
			// callback then leaves the SASL authorization id as the
			// identity, unstripped. That id is the principal unless the
			// client asked for another, which ZooKeeper then grants
			// unchecked (any name, "super" too): zkbridge keeps the
			// authenticated principal instead (docs/security.md).
			id = name
		}
		if perr != nil {
			// ZooKeeper logs and keeps the name as authenticated.
			c.log.Warn().Err(perr).Str("user", name).Msg("SASL name is not a Kerberos principal; using it whole")
			id = name
		}
		add := []zkproto.Id{{Scheme: "sasl", ID: id}}
		if containsString(s.cfg.Auth.SASLSuperUsers, id) {
			add = append(add, zkproto.Id{Scheme: "super", ID: ""})
		}
		c.addAuthIDs(add)
		c.log.Info().Str("session", sessionHex(c.sessionID())).Str("id", id).Msg("SASL authenticated")
	}
	c.enqueue(saslFrame(xid, zkproto.ErrOK, answer))
	return true
}

// saslFrame is a reply with a SetSASLResponse body, sent also with an
// error code (ZooKeeper's failure reply carries a null token).
func saslFrame(xid int32, code zkproto.ErrCode, token []byte) []byte {
	var e zkproto.Encoder
	off := e.StartFrame()
	h := zkproto.ReplyHeader{Xid: xid, Zxid: 0, Err: code}
	h.Encode(&e)
	(&zkproto.SetSASLResponse{Token: token}).Encode(&e)
	e.FinishFrame(off)
	return e.Bytes()
}

// addAuthIDs adds identities to the connection's, once each.
func (c *conn) addAuthIDs(add []zkproto.Id) {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	ids := append([]zkproto.Id(nil), c.auth...)
	for _, id := range add {
		if !containsID(ids, id) {
			ids = append(ids, id)
		}
	}
	c.auth = ids
}

// enforceAuth is ZooKeeper's AuthenticationHelper.enforceAuthentication:
// with enforced schemes, a request other than auth or sasl from a
// connection holding none of their ids is answered
// SessionClosedRequireSASLAuth (zxid 0) and the connection closes. It
// reports whether the request may proceed.
func (c *conn) enforceAuth(xid int32) bool {
	enforced := c.srv.sasl.enforced
	if len(enforced) == 0 {
		return true
	}
	for _, id := range c.authIDs() {
		if containsString(enforced, id.Scheme) {
			return true
		}
	}
	c.log.Warn().Strs("required_schemes", enforced).Msg("request before authentication; closing the connection")
	c.enqueue(replyFrame(xid, 0, zkproto.ErrSessionClosedRequireSASLAuth, nil))
	c.closeAfterFlush()
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
