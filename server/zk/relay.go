package zk

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// A client selected by its certificate alone (no server name: kazoo 2.8
// sends none) is only known after this node's handshake, too late to pass
// its connection on unread. When this node does not host the tenant, it
// relays the client instead: it dials a hosting node's secure client port
// over the node-to-node channel, TLS under the peers' own settings
// (ssl.quorum.*, both ends' certificates checked against
// ssl.quorum.trustStore) with the application protocol NodeRelayALPN,
// sends a preamble naming the tenant and the certificate chain the client
// presented, and then copies the client's decrypted bytes both ways.
//
// The hosting node reads a preamble only from a connection whose
// handshake negotiated NodeRelayALPN under the peers' TLS settings: the
// other end holds a certificate the cluster's peer CA signed, the trust a
// node already needs to send Raft messages. A client of the public ports
// cannot offer the protocol without such a certificate (the handshake
// fails), and plaintext never reaches the preamble reader. The hosting
// node checks the chain against its own client trust store and computes
// the x509 identity from it as its handshake would, so ACLs, whoami and
// ssl.x509SuperUser see what they see on a local connection; it serves the
// tenant only if the certificate selects that tenant here and this node
// hosts it (a relayed connection is never relayed again).

// NodeRelayALPN is the application protocol (ALPN) of the node-to-node
// channel that carries a relayed client; the number is the preamble's
// version.
const NodeRelayALPN = "zkbridge-relay/1"

const (
	relayMagic   = "ZKBR"
	relayVersion = 1
	// Bounds of a preamble's fields: a relaying node that sends more is
	// not one this node understands.
	relayMaxName  = 1024
	relayMaxCerts = 10
	relayMaxChain = 64 << 10
	// relayTimeout bounds the wait for a preamble, and the relaying
	// node's wait for the answer.
	relayTimeout = 10 * time.Second
)

// RelayPreamble is what a relaying node tells the hosting node before the
// client's first byte.
type RelayPreamble struct {
	// Tenant is the tenant the client's certificate selected on the
	// relaying node.
	Tenant string
	// ClientAddr is the client's address (host:port), for the hosting
	// node's logs, cons and its per-address connection limit.
	ClientAddr string
	// Chain is the certificate chain the client presented (DER, leaf
	// first), verified by the relaying node's handshake.
	Chain [][]byte
}

// WriteRelayPreamble writes p: the magic, the version, then the tenant,
// the client's address and the chain, each length-prefixed.
func WriteRelayPreamble(w io.Writer, p RelayPreamble) error {
	if len(p.Tenant) > relayMaxName || len(p.ClientAddr) > relayMaxName {
		return errors.New("relay preamble: name too long")
	}
	if len(p.Chain) == 0 || len(p.Chain) > relayMaxCerts {
		return fmt.Errorf("relay preamble: %d certificates (1 to %d)", len(p.Chain), relayMaxCerts)
	}
	b := append([]byte(relayMagic), relayVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.Tenant)))
	b = append(b, p.Tenant...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.ClientAddr)))
	b = append(b, p.ClientAddr...)
	b = append(b, byte(len(p.Chain)))
	total := 0
	for _, c := range p.Chain {
		total += len(c)
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	if total > relayMaxChain {
		return fmt.Errorf("relay preamble: certificate chain of %d bytes (at most %d)", total, relayMaxChain)
	}
	_, err := w.Write(b)
	return err
}

// readRelayPreamble reads a preamble WriteRelayPreamble wrote.
func readRelayPreamble(r io.Reader) (RelayPreamble, error) {
	var p RelayPreamble
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return p, fmt.Errorf("reading the preamble: %w", err)
	}
	if string(head[:4]) != relayMagic {
		return p, errors.New("not a relay preamble")
	}
	if head[4] != relayVersion {
		return p, fmt.Errorf("relay preamble version %d, this node speaks %d", head[4], relayVersion)
	}
	str := func() (string, error) {
		var n [2]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		l := int(binary.BigEndian.Uint16(n[:]))
		if l > relayMaxName {
			return "", errors.New("name too long")
		}
		b := make([]byte, l)
		_, err := io.ReadFull(r, b)
		return string(b), err
	}
	var err error
	if p.Tenant, err = str(); err != nil {
		return p, fmt.Errorf("relay preamble tenant: %w", err)
	}
	if p.ClientAddr, err = str(); err != nil {
		return p, fmt.Errorf("relay preamble client address: %w", err)
	}
	var count [1]byte
	if _, err := io.ReadFull(r, count[:]); err != nil {
		return p, fmt.Errorf("relay preamble: %w", err)
	}
	if count[0] == 0 || count[0] > relayMaxCerts {
		return p, fmt.Errorf("relay preamble: %d certificates (1 to %d)", count[0], relayMaxCerts)
	}
	total := 0
	for range int(count[0]) {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return p, fmt.Errorf("relay preamble certificate: %w", err)
		}
		l := int(binary.BigEndian.Uint32(n[:]))
		if total += l; l > relayMaxChain || total > relayMaxChain {
			return p, errors.New("relay preamble: certificate chain too large")
		}
		c := make([]byte, l)
		if _, err := io.ReadFull(r, c); err != nil {
			return p, fmt.Errorf("relay preamble certificate: %w", err)
		}
		p.Chain = append(p.Chain, c)
	}
	return p, nil
}

// The hosting node's answer to a preamble: one status byte, then (refused)
// the reason, length-prefixed.
const (
	relayAccepted = 0
	relayRefused  = 1
)

func writeRelayAnswer(w io.Writer, refusal string) error {
	if refusal == "" {
		_, err := w.Write([]byte{relayAccepted})
		return err
	}
	if len(refusal) > relayMaxName {
		refusal = refusal[:relayMaxName]
	}
	b := binary.BigEndian.AppendUint16([]byte{relayRefused}, uint16(len(refusal)))
	_, err := w.Write(append(b, refusal...))
	return err
}

// ReadRelayAnswer reads the hosting node's answer to a preamble: nil when
// it serves the client, else an error with its reason.
func ReadRelayAnswer(r io.Reader) error {
	var status [1]byte
	if _, err := io.ReadFull(r, status[:]); err != nil {
		return fmt.Errorf("reading the hosting node's answer: %w", err)
	}
	if status[0] == relayAccepted {
		return nil
	}
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("reading the hosting node's refusal: %w", err)
	}
	reason := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(r, reason); err != nil {
		return fmt.Errorf("reading the hosting node's refusal: %w", err)
	}
	return fmt.Errorf("refused by the hosting node: %s", reason)
}

// relayedConn is a relayed client's connection on the hosting node: the
// node-to-node TLS connection, named by the client's own address.
type relayedConn struct {
	net.Conn
	client net.Addr
}

func (r *relayedConn) RemoteAddr() net.Addr { return r.client }

// acceptRelay serves a connection that offered NodeRelayALPN in its
// ClientHello: a node relaying a client. Anything but a cluster node with
// a well-formed preamble for a tenant hosted here is refused, logged, and
// closed before any session.
func (c *conn) acceptRelay(r *IdentityRouter, raw net.Conn) {
	// Not a client of this door: its handshake does not hold one of the
	// relaying node's maxClientCnxns places (the client is counted under
	// its own address by the tenant's door).
	c.srv.unregisterConn(c)
	refuse := func(err error, nc net.Conn, answer string) {
		c.log.Warn().Err(err).
			Msg("refusing a relayed client: the relay protocol (" + NodeRelayALPN + ") is only accepted from a cluster node, authenticated by its ssl.quorum certificate, with a preamble naming a tenant this node hosts; no session was opened")
		if answer != "" {
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
			_ = writeRelayAnswer(nc, answer)
		}
		c.nc = nc
		c.abort()
	}
	if r.RelayTLS == nil {
		refuse(errors.New("this node has no peer TLS (sslQuorum=false): no node can be authenticated to relay a client's identity"), raw, "")
		return
	}
	tc := tls.Server(raw, r.RelayTLS)
	_ = raw.SetDeadline(time.Now().Add(relayTimeout))
	if err := tc.Handshake(); err != nil {
		refuse(fmt.Errorf("not a cluster node: the TLS handshake under ssl.quorum failed (its certificate must chain to ssl.quorum.trustStore): %w", err), tc, "")
		return
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != NodeRelayALPN {
		refuse(fmt.Errorf("the handshake negotiated %q, not %s", p, NodeRelayALPN), tc, "")
		return
	}
	node := tc.ConnectionState().PeerCertificates[0]
	if r.RelayFrom != nil {
		if err := r.RelayFrom(node); err != nil {
			refuse(fmt.Errorf("not a cluster member: %w", err), tc, "")
			return
		}
	}
	br := bufio.NewReaderSize(tc, 4096)
	p, err := readRelayPreamble(br)
	if err != nil {
		refuse(err, tc, err.Error())
		return
	}
	if br.Buffered() > 0 {
		// The relaying node waits for the answer before the client's
		// first byte: bytes past the preamble are a protocol error.
		refuse(errors.New("bytes after the preamble before its answer"), tc, "bytes after the preamble before its answer")
		return
	}
	cl := c.srv.listener.(*clientListener)
	leaf, err := cl.source.VerifyClientChain(p.Chain)
	if err != nil {
		refuse(fmt.Errorf("relayed by %s for tenant %q: %w", c.remote, p.Tenant, err), tc, "the client's certificate does not verify against this node's ssl.trustStore")
		return
	}
	route, by := IdentityRoute{}, ""
	for _, id := range certIdentities(leaf) {
		if rt, ok := r.Lookup(id); ok {
			route, by = rt, id
			break
		}
	}
	switch {
	case by == "" || route.Tenant != p.Tenant:
		msg := fmt.Sprintf("the client's certificate selects tenant %q here, not %q", route.Tenant, p.Tenant)
		refuse(errors.New(msg), tc, msg)
		return
	case route.Door == nil:
		msg := fmt.Sprintf("this node does not serve tenant %q (a relayed client is never relayed again)", p.Tenant)
		refuse(errors.New(msg), tc, msg)
		return
	}
	_ = tc.SetDeadline(time.Time{})
	if err := writeRelayAnswer(tc, ""); err != nil {
		refuse(fmt.Errorf("answering the relaying node: %w", err), tc, "")
		return
	}
	client, err := net.ResolveTCPAddr("tcp", p.ClientAddr)
	if err != nil {
		client = &net.TCPAddr{}
	}
	c.log.Debug().Str("relayed_by", tlsconf.JavaDN(node)).Str("identity", by).Str("tenant", p.Tenant).
		Str("client", p.ClientAddr).Msg("serving a client relayed by another node")
	c.nc = tc
	c.detach()
	route.Door.serveHanded(&acceptedConn{Conn: &relayedConn{Conn: tc, client: client}, mode: modeRelayed, cert: leaf})
}

// plainRelay refuses (and closes) a connection that starts with a relay
// preamble in plaintext: a relayed client only ever arrives over TLS from
// a cluster node. It reports whether it did.
func (c *conn) plainRelay(raw net.Conn) bool {
	var head [len(relayMagic)]byte
	if err := peekFull(raw, head[:], time.Now().Add(time.Second)); err != nil || string(head[:]) != relayMagic {
		return false
	}
	c.log.Warn().Msg("refusing a relayed client: a relay preamble arrived in plaintext; relayed clients are only accepted over TLS (" + NodeRelayALPN + ") from a cluster node authenticated by its ssl.quorum certificate; no session was opened")
	c.abort()
	return true
}

// CertChain is the DER chain the client of tc presented (leaf first), for
// a relay preamble.
func CertChain(tc *tls.Conn) [][]byte {
	var out [][]byte
	for _, c := range tc.ConnectionState().PeerCertificates {
		out = append(out, c.Raw)
	}
	return out
}
