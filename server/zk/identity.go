package zk

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// A node's secure client port is shared by its tenants: a TLS client is
// served by the tenant whose registered identity is the server name it
// asked for (SNI), or else the tenant one of whose identities its client
// certificate carries (subject CN, a DNS SAN, or the whole subject DN in
// Java's RFC 2253 form, as the x509 auth scheme names it). The client
// changes nothing: a Java client with hostname verification, kazoo and
// go's crypto/tls all send the host name they connect to as SNI.
//
// The server name is read from the ClientHello before the handshake,
// without consuming it (MSG_PEEK). A tenant this node does not host gets
// the connection forwarded byte for byte, still unread, to the same
// secure port of a node that hosts it: the handshake is end to end
// between the client and that node, which sees the client's certificate
// (its x509 identity for ACLs) and selects the tenant by the same name.
// A tenant hosted here gets the connection after this door's handshake
// (same key store), its x509 identity included. A certificate is only
// known after the handshake: a connection selected by it is handed to the
// tenant's door here when this node hosts the tenant, else relayed to a
// hosting node over the node-to-node channel (relay.go), or refused, with
// a log line naming the nodes that do, when the cluster has no peer TLS
// to relay on.

// IdentityRoute is where an identity sends a connection.
type IdentityRoute struct {
	// Tenant is the tenant selected ("" when the identity names none).
	Tenant string
	// Door serves the tenant on this node (nil when it does not host it).
	Door *Server
	// Forward hands a connection, unread, to a node hosting the tenant
	// (nil when this node hosts it; nil with Door nil: this node is placed
	// to host it and has not started it yet).
	Forward func(net.Conn)
	// Relay relays a client whose certificate selected the tenant, after
	// this node's handshake, to a hosting node over the node-to-node
	// channel (relay.go). nil when Door is set, when this node is placed
	// to host the tenant, or without peer TLS (sslQuorum) to relay on.
	Relay func(client *tls.Conn)
	// Hosts names the nodes hosting the tenant, for log lines.
	Hosts string
}

// IdentityRouter maps TLS identities to tenants for a door's secure port.
type IdentityRouter struct {
	// Lookup returns the route of an identity (a server name, a subject
	// CN, a DNS SAN or a subject DN); ok is false for one no tenant has.
	Lookup func(identity string) (IdentityRoute, bool)
	// RefuseUnknown: a connection whose identities name no tenant is
	// closed instead of served by this door's (the default) tenant.
	RefuseUnknown bool
	// RelayTLS is the server side of the node-to-node channel relayed
	// clients arrive on (the peers' TLS settings, a peer certificate
	// required); nil without peer TLS: relayed connections are refused.
	RelayTLS *tls.Config
	// RelayFrom, when set, must also accept the relaying node's verified
	// certificate (a member's identity, not only the peer CA's).
	RelayFrom func(node *x509.Certificate) error
}

// identityRouter is the door's router (nil: identities select nothing).
type identityRouterRef struct {
	p atomic.Pointer[IdentityRouter]
}

// SetIdentityRouter sets (nil: clears) the tenant selection by TLS
// identity on this door's TLS connections.
func (s *Server) SetIdentityRouter(r *IdentityRouter) { s.identity.p.Store(r) }

// certIdentities are the names a client certificate can select a tenant
// by: its subject DN (Java's form), its CN and its DNS SANs.
func certIdentities(cert *x509.Certificate) []string {
	ids := []string{tlsconf.JavaDN(cert)}
	if cert.Subject.CommonName != "" {
		ids = append(ids, cert.Subject.CommonName)
	}
	return append(ids, cert.DNSNames...)
}

// routeBeforeHandshake selects a tenant by the ClientHello's server name.
// A tenant hosted elsewhere gets the connection forwarded, unread
// (handled); one hosted here is returned, to be handed its connection
// after this door's handshake. sni is the server name read ("" if none).
func (c *conn) routeBeforeHandshake(r *IdentityRouter, raw net.Conn) (sni string, local *IdentityRoute, handled bool) {
	sni, protos, err := peekHello(raw, tlsHandshakeTimeout)
	if err != nil {
		if c.plainRelay(raw) {
			return "", nil, true
		}
		c.log.Debug().Err(err).Msg("reading the TLS server name (SNI) from the ClientHello")
		return "", nil, false
	}
	if slices.Contains(protos, NodeRelayALPN) {
		// Another node relaying a client, or someone posing as one:
		// never a tenant's client by its server name.
		c.acceptRelay(r, raw)
		return "", nil, true
	}
	if sni == "" {
		return "", nil, false
	}
	rt, ok := r.Lookup(strings.ToLower(sni))
	if !ok {
		return sni, nil, false
	}
	c.log.Debug().Str("sni", sni).Str("tenant", rt.Tenant).Msg("TLS server name selects a tenant")
	if rt.Door != nil {
		return sni, &rt, false
	}
	if rt.Forward == nil {
		c.log.Info().Str("sni", sni).Str("tenant", rt.Tenant).
			Msg("closing a TLS client: its server name selects a tenant this node is starting; the client reconnects")
		c.abort()
		return sni, nil, true
	}
	c.detach()
	go rt.Forward(raw)
	return sni, nil, true
}

// routeAfterHandshake hands the connection to the tenant its server name
// (bySNI) or else its client certificate selects, or applies the
// unknown-identity policy. It reports whether this door goes on serving
// the connection (false: handed over, or closed).
func (c *conn) routeAfterHandshake(r *IdentityRouter, tc *tls.Conn, sni string, bySNI *IdentityRoute) bool {
	var ids []string
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		ids = certIdentities(certs[0])
	}
	route, by := bySNI, sni
	for _, id := range ids {
		if route != nil {
			break
		}
		rt, ok := r.Lookup(id)
		if !ok {
			continue
		}
		if rt.Door == nil {
			switch {
			case rt.Relay != nil:
				c.log.Debug().Str("identity", id).Str("tenant", rt.Tenant).Str("hosted_by", rt.Hosts).
					Msg("TLS certificate selects a tenant hosted elsewhere: relaying the client")
				c.detach()
				go rt.Relay(tc)
			case rt.Forward == nil:
				c.log.Info().Str("identity", id).Str("tenant", rt.Tenant).
					Msg("closing a TLS client: its certificate selects a tenant this node is starting; the client reconnects")
				c.abort()
			default:
				c.log.Warn().Str("identity", id).Str("tenant", rt.Tenant).Str("hosted_by", rt.Hosts).
					Msg("refusing a TLS client: its certificate selects a tenant this node does not host, and without peer TLS (sslQuorum) there is no authenticated node-to-node channel to relay its identity on; connect to a node hosting the tenant, send the tenant's identity as the TLS server name, use the tenant's own port, or turn on sslQuorum")
				c.abort()
			}
			return false
		}
		route, by = &rt, id
	}
	if route != nil {
		if route.Door == c.srv {
			return true
		}
		c.log.Debug().Str("identity", by).Str("tenant", route.Tenant).Msg("TLS identity selects a tenant served here")
		c.detach()
		route.Door.serveHanded(&acceptedConn{Conn: tc, mode: modeHandshaken})
		return false
	}
	if r.RefuseUnknown {
		c.log.Warn().Str("sni", sni).Strs("certificate_identities", ids).
			Msg("refusing a TLS client: neither its server name nor its certificate is a tenant's identity, and unknown identities are refused (--tenant-unknown-identity=refuse); register the name with `zkbridge tenant update --identity NAME TENANT`, or set --tenant-unknown-identity=default")
		c.abort()
		return false
	}
	return true
}

// detach gives the connection's socket up to another door: this
// connection's shutdown then closes nothing of it.
func (c *conn) detach() {
	placeholder, other := net.Pipe()
	other.Close()
	c.nc = placeholder
}

// serveHanded serves a connection another door of this node accepted (on
// its shared secure port) and selected this tenant for.
func (s *Server) serveHanded(nc net.Conn) {
	c := newConn(s, nc)
	if !s.registerConn(c) {
		c.log.Warn().Int("max_client_cnxns", s.cfg.MaxClientCnxns).Msg("too many connections from this address; closing")
		nc.Close()
		return
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); c.serve() }()
}

// maxClientHello bounds the ClientHello record read for its server name.
const maxClientHello = 16 << 10

// peekServerName reads the server name of the TLS ClientHello waiting on
// nc without consuming it.
func peekServerName(nc net.Conn, timeout time.Duration) (string, error) {
	name, _, err := peekHello(nc, timeout)
	return name, err
}

// peekHello reads the server name and the offered application protocols
// (ALPN) of the TLS ClientHello waiting on nc without consuming it.
func peekHello(nc net.Conn, timeout time.Duration) (string, []string, error) {
	deadline := time.Now().Add(timeout)
	var hdr [5]byte
	if err := peekFull(nc, hdr[:], deadline); err != nil {
		return "", nil, err
	}
	if hdr[0] != tlsRecordHandshake {
		return "", nil, errors.New("not a TLS handshake record")
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	if n > maxClientHello {
		return "", nil, errors.New("ClientHello record too large")
	}
	rec := make([]byte, 5+n)
	if err := peekFull(nc, rec, deadline); err != nil {
		return "", nil, err
	}
	// crypto/tls parses the hello: a server over the peeked bytes that
	// stops at the ClientHello callback and writes nowhere.
	var name string
	var protos []string
	stop := errors.New("server name read")
	srv := tls.Server(&helloConn{r: bytes.NewReader(rec)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name, protos = h.ServerName, h.SupportedProtos
			return nil, stop
		},
	})
	if err := srv.Handshake(); !errors.Is(err, stop) && name == "" && protos == nil {
		return "", nil, err
	}
	return name, protos, nil
}

// peekFull peeks len(b) bytes, waiting for them until deadline.
func peekFull(nc net.Conn, b []byte, deadline time.Time) error {
	for {
		n, err := peekBytes(nc, b, deadline)
		if err != nil {
			return err
		}
		if n == len(b) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for the ClientHello")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// helloConn is a net.Conn over peeked bytes that discards what is written.
type helloConn struct {
	net.Conn
	r io.Reader
}

func (h *helloConn) Read(b []byte) (int, error)       { return h.r.Read(b) }
func (h *helloConn) Write(b []byte) (int, error)      { return len(b), nil }
func (h *helloConn) Close() error                     { return nil }
func (h *helloConn) SetDeadline(time.Time) error      { return nil }
func (h *helloConn) SetReadDeadline(time.Time) error  { return nil }
func (h *helloConn) SetWriteDeadline(time.Time) error { return nil }
func (h *helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (h *helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
