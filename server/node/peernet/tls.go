package peernet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// Mutual TLS between peers (sslQuorum=true, ssl.quorum.*): both ends
// present a certificate and verify the other's against the quorum trust
// store, so a node with a certificate from another CA, or an expired one,
// can neither send Raft messages to the cluster nor receive its entries.
// The handshake happens before the preamble; a refused one is logged on
// both sides with the reason.

// handshakeTimeout bounds a peer's TLS handshake.
const handshakeTimeout = 10 * time.Second

// refusalLogEvery spaces out the log lines about one dial target that
// keeps failing its handshake (dragonboat redials it many times a second).
const refusalLogEvery = 10 * time.Second

// peerTLS is a transport's TLS state; nil means plaintext.
type peerTLS struct {
	source *tlsconf.Source
	mu     sync.Mutex
	logged map[string]time.Time // dial target → last refusal logged
}

func newPeerTLS(src *tlsconf.Source) *peerTLS {
	if src == nil {
		return nil
	}
	return &peerTLS{source: src, logged: map[string]time.Time{}}
}

// secureIncoming does the server side of the handshake on an accepted
// connection. It returns the connection to read from, or false if the
// peer was refused (c is then to be closed by the caller).
func (t *Transport) secureIncoming(c net.Conn) (net.Conn, bool) {
	if t.tls == nil {
		return c, true
	}
	setKeepAlive(c)
	tc := tls.Server(c, t.tls.source.ServerConfig())
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		t.log.Warn().Err(err).Str("peer", c.RemoteAddr().String()).
			Msg("peer TLS handshake failed: refusing the connection (sslQuorum: its certificate must be valid and chain to ssl.quorum.trustStore)")
		return nil, false
	}
	_ = c.SetDeadline(time.Time{})
	return tc, true
}

// dialPeer dials target, with TLS when the transport has it: the peer's
// certificate must chain to the quorum trust store and name the host
// dialed (unless ssl.quorum.hostnameVerification=false).
func (t *Transport) dialPeer(ctx context.Context, target string) (net.Conn, error) {
	c, err := dial(ctx, target)
	if err != nil || t.tls == nil {
		return c, err
	}
	tc := tls.Client(c, t.tls.source.ClientConfig(target))
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = c.Close()
		err = fmt.Errorf("peernet: TLS handshake with %s: %w", target, err)
		t.tls.logRefusal(t, target, err)
		return nil, err
	}
	return tc, nil
}

func (p *peerTLS) logRefusal(t *Transport, target string, err error) {
	p.mu.Lock()
	last := p.logged[target]
	now := time.Now()
	due := now.Sub(last) >= refusalLogEvery
	if due {
		p.logged[target] = now
	}
	p.mu.Unlock()
	if due {
		t.log.Warn().Err(err).Str("peer", target).
			Msg("peer TLS handshake failed: not sending to it (sslQuorum: both certificates must be valid and chain to the other's ssl.quorum.trustStore)")
	}
}
