package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/zk"
)

// A node that does not host a tenant's shard still serves the tenant's
// ports, so any node is a valid address for any tenant: it forwards each
// client connection, byte for byte, to the same port of a node that hosts
// the shard. The hosting node's door holds the session, its watches and
// its order, so the client sees exactly what a client of that node sees,
// pings included; the four-letter words answer for that node. If the
// hosting node goes, the forwarded connection closes and the client
// reconnects, as to any ZooKeeper server that went away; the next
// connection goes to another hosting node.
type forwarder struct {
	log zerolog.Logger
	// targets lists the hosting nodes' addresses of this port, in the
	// order they are tried: every connection goes to the first that
	// accepts, so the connections of one client application land on one
	// node while it lives (its reads then follow its own writes).
	targets func() []string
	// nodeTLS is the peers' TLS material (ssl.quorum.*) a relay dials
	// hosting nodes with (nil: no peer TLS, no relaying).
	nodeTLS *tlsconf.Source

	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// forwardDialTimeout bounds the dial of one hosting node.
const forwardDialTimeout = 2 * time.Second

func listenForwarder(addr string, targets func() []string, log zerolog.Logger) (*forwarder, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &forwarder{log: log, targets: targets, ln: ln, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.accept() }()
	return f, nil
}

func (f *forwarder) Addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			f.log.Warn().Err(err).Msg("forwarder: accept failed")
			time.Sleep(50 * time.Millisecond)
			continue
		}
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.forward(c) }()
	}
}

func (f *forwarder) track(c net.Conn, on bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false // closed
	}
	if on {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) forward(client net.Conn) { f.forwardTo(client, f.targets()) }

// newConnForwarder is a forwarder without a listener of its own: another
// door hands it connections (forwardAsync), each with its targets.
func newConnForwarder(log zerolog.Logger) *forwarder {
	return &forwarder{log: log, conns: map[net.Conn]struct{}{}}
}

// forwardAsync forwards client to the first of targets that accepts, in
// the background (tracked: close ends it).
func (f *forwarder) forwardAsync(client net.Conn, targets []string) {
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.forwardTo(client, targets) }()
}

// forwardTo pipes client, byte for byte, to the first of targets that
// accepts a connection.
func (f *forwarder) forwardTo(client net.Conn, targets []string) {
	defer client.Close()
	var up net.Conn
	var last error
	for _, addr := range targets {
		c, err := net.DialTimeout("tcp", addr, forwardDialTimeout)
		if err == nil {
			up = c
			break
		}
		last = err
	}
	if up == nil {
		if last == nil {
			last = errors.New("no node to forward to")
		}
		f.log.Warn().Err(last).Str("remote", client.RemoteAddr().String()).
			Msg("forwarder: no node hosting the tenant accepts connections; closing the client's")
		return
	}
	f.splice(client, up)
}

// splice copies bytes both ways between client and up until either ends,
// then closes both (tracked: close ends it).
func (f *forwarder) splice(client, up net.Conn) {
	defer up.Close()
	if !f.track(client, true) || !f.track(up, true) {
		return
	}
	defer f.track(client, false)
	defer f.track(up, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// One side ended: end both (a ZooKeeper connection is not
		// half-closed).
		client.Close()
		up.Close()
		done <- struct{}{}
	}
	go pipe(up, client)
	go pipe(client, up)
	<-done
	<-done
}

// relayAsync relays a TLS client whose certificate selected tenant (this
// node terminated its TLS) to the first of targets, hosting nodes' secure
// client ports, that accepts it over the node-to-node channel: TLS under
// the peers' settings (f.nodeTLS, ssl.quorum.*) with the relay protocol, a
// preamble with the tenant and the client's certificate chain, then the
// client's decrypted bytes both ways (server/zk/relay.go).
func (f *forwarder) relayAsync(client *tls.Conn, tenant string, targets []relayTarget) {
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.relayTo(client, tenant, targets) }()
}

func (f *forwarder) relayTo(client *tls.Conn, tenant string, targets []relayTarget) {
	defer client.Close()
	preamble := zk.RelayPreamble{Tenant: tenant, ClientAddr: client.RemoteAddr().String(), Chain: zk.CertChain(client)}
	var last error
	for _, t := range targets {
		up, err := relayDial(t.addr, t.peerName, preamble, f.nodeTLS)
		if err == nil {
			f.splice(client, up)
			return
		}
		last = fmt.Errorf("%s: %w", t.addr, err)
		f.log.Info().Err(err).Str("node", t.addr).Str("tenant", tenant).Msg("relay: a hosting node did not take the client; trying the next")
	}
	if last == nil {
		last = errors.New("no node to relay to")
	}
	f.log.Warn().Err(last).Str("remote", client.RemoteAddr().String()).Str("tenant", tenant).
		Msg("relay: no node hosting the tenant accepts the relayed client; closing its connection (it reconnects)")
}

// relayTarget is a hosting node to relay to: the address of its secure
// client port, and its Raft address, whose host its peer certificate names.
type relayTarget struct {
	addr, peerName string
}

// relayDial opens the node-to-node channel to addr, checking that the
// node's certificate names the host of peerName (its Raft address; addr
// when empty) as a peer connection does, and has the preamble accepted.
func relayDial(addr, peerName string, p zk.RelayPreamble, nodeTLS *tlsconf.Source) (net.Conn, error) {
	raw, err := net.DialTimeout("tcp", addr, forwardDialTimeout)
	if err != nil {
		return nil, err
	}
	if peerName == "" {
		peerName = addr
	}
	up := tls.Client(raw, nodeTLS.ClientConfig(peerName, zk.NodeRelayALPN))
	_ = raw.SetDeadline(time.Now().Add(relayAnswerTimeout))
	if err := up.Handshake(); err != nil {
		raw.Close()
		return nil, fmt.Errorf("node-to-node TLS handshake (ssl.quorum): %w", err)
	}
	if got := up.ConnectionState().NegotiatedProtocol; got != zk.NodeRelayALPN {
		up.Close()
		return nil, fmt.Errorf("the node does not take relayed clients (it negotiated %q, not %s: an older version, or no sslQuorum there)", got, zk.NodeRelayALPN)
	}
	if err := zk.WriteRelayPreamble(up, p); err != nil {
		up.Close()
		return nil, err
	}
	if err := zk.ReadRelayAnswer(up); err != nil {
		up.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	return up, nil
}

// relayAnswerTimeout bounds the node-to-node handshake and the wait for
// the hosting node's answer to the preamble.
const relayAnswerTimeout = 10 * time.Second

// close stops accepting and closes every forwarded connection.
func (f *forwarder) close() {
	if f.ln != nil {
		f.ln.Close()
	}
	f.mu.Lock()
	conns := f.conns
	f.conns = nil
	f.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	f.wg.Wait()
}

// hostPort joins the host of addr (host:port) with port.
func hostPort(addr string, port int) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
