package zk

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/zkproto"
)

// How a listener's connections speak.
type listenerMode int

const (
	modePlain   listenerMode = iota
	modeTLS                  // TLS only (secureClientPort)
	modeUnified              // TLS or plaintext, told apart by the first byte (client.portUnification)
	// modeHandshaken: a TLS connection whose handshake another door of
	// this node did (its certificate selected this door's tenant).
	modeHandshaken
	// modeRelayed: a client another node terminated TLS for and relays
	// over the node-to-node channel (relay.go); its certificate rides
	// along.
	modeRelayed
)

const (
	// tlsHandshakeTimeout bounds a TLS handshake, so a client that never
	// finishes one holds its socket no longer (Netty's SslHandler default).
	tlsHandshakeTimeout = 10 * time.Second
	// detectTimeout bounds the wait for a unified port's first byte
	// (ZooKeeper's ssl.handshakeDetectionTimeoutMillis default).
	detectTimeout = 5 * time.Second
	// tlsRecordHandshake is the first byte of a TLS ClientHello. A
	// plaintext client's first byte is the top byte of its frame length
	// (0 for any frame under 16 MiB) or a four-letter word's letter.
	tlsRecordHandshake = 0x16
)

// clientListener merges the client listeners of this door (the client
// port, and the secure client port beside it) into one, so the accept loop
// serves them all. Each accepted connection carries its listener's mode;
// the connection's goroutine does the TLS handshake, never the accept
// loop.
type clientListener struct {
	main      net.Listener
	secure    net.Listener // nil: no secureClientPort beside the main one
	mainMode  listenerMode
	tlsConfig *tls.Config
	source    *tlsconf.Source
	// handshakeFailures counts refused handshakes (tests read it).
	handshakeFailures atomic.Int64

	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	acceptErr func(error) // logs an accept failure of an underlying listener
}

// acceptedConn is a connection with the mode of the listener it came in on.
type acceptedConn struct {
	net.Conn
	mode listenerMode
	// cert is a relayed client's certificate (modeRelayed only).
	cert *x509.Certificate
}

// cnxnKey is what maxClientCnxns counts a connection under: its address,
// per listener as ZooKeeper counts (each of its ports is a connection
// factory of its own), so plaintext connections up to the limit leave a
// TLS-only port open. Fixed at accept: startTLS replaces c.nc later.
func (c *conn) cnxnKey() string {
	if ac, ok := c.nc.(*acceptedConn); ok && (ac.mode == modeTLS || ac.mode == modeHandshaken || ac.mode == modeRelayed) {
		c.secure = true
	}
	if c.secure {
		return "tls " + c.ip
	}
	return c.ip
}

// listenClients opens the client listeners cfg asks for.
func (s *Server) listenClients() (net.Listener, error) {
	t := s.cfg.TLS
	ln, err := net.Listen("tcp", s.cfg.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on client address %s: %w (is another server running there? use --client-addr)", s.cfg.ClientAddr, err)
	}
	if !t.ClientTLSEnabled() {
		return ln, nil
	}
	src, err := tlsconf.NewSource(t.Client, "ssl", s.log.With().Str("component", "tls").Logger())
	if err != nil {
		ln.Close()
		return nil, err
	}
	cl := &clientListener{
		main: ln, mainMode: modePlain, source: src, tlsConfig: src.ServerConfig(),
		conns: make(chan net.Conn), done: make(chan struct{}),
		acceptErr: func(err error) { s.log.Warn().Err(err).Msg("accept failed") },
	}
	switch {
	case t.ClientPortTLS:
		cl.mainMode = modeTLS
	case t.PortUnification:
		cl.mainMode = modeUnified
	}
	if t.SecureClientAddr != "" {
		if cl.secure, err = net.Listen("tcp", t.SecureClientAddr); err != nil {
			ln.Close()
			return nil, fmt.Errorf("listen on secure client address %s: %w", t.SecureClientAddr, err)
		}
	}
	go cl.feed(cl.main, cl.mainMode)
	if cl.secure != nil {
		go cl.feed(cl.secure, modeTLS)
	}
	s.log.Info().Str("client_addr", ln.Addr().String()).Str("secure_client_addr", cl.SecureAddr()).
		Str("client_auth", t.Client.ClientAuth).Str("subject", tlsconf.JavaDN(src.Certificate())).
		Msg("client TLS on")
	return cl, nil
}

func (l *clientListener) feed(ln net.Listener, mode listenerMode) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.acceptErr(err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case l.conns <- &acceptedConn{Conn: nc, mode: mode}:
		case <-l.done:
			nc.Close()
			return
		}
	}
}

func (l *clientListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *clientListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.main.Close()
		if l.secure != nil {
			l.secure.Close()
		}
	})
	return nil
}

func (l *clientListener) Addr() net.Addr { return l.main.Addr() }

// SecureAddr is the secure client port's bound address ("" when none).
func (l *clientListener) SecureAddr() string {
	if l.secure == nil {
		return ""
	}
	return l.secure.Addr().String()
}

// SecureAddr returns the address the secure client listener is bound to:
// the secureClientPort beside the client port, or the client port itself
// when it speaks TLS; "" without client TLS.
func (s *Server) SecureAddr() string {
	cl, ok := s.listener.(*clientListener)
	if !ok {
		return ""
	}
	if cl.secure != nil {
		return cl.SecureAddr()
	}
	if cl.mainMode != modePlain {
		return cl.Addr().String()
	}
	return ""
}

// startTLS runs before the connection's reader and writer: on a TLS (or a
// unified port's TLS) connection it does the handshake and adds the client
// certificate's x509 identity. It reports false when the connection must
// close (it is then closed).
func (c *conn) startTLS() bool {
	ac, ok := c.nc.(*acceptedConn)
	if !ok {
		return true
	}
	raw := ac.Conn
	c.nc = raw
	mode := ac.mode
	switch mode {
	case modeHandshaken:
		c.addCertIdentity(raw.(*tls.Conn).ConnectionState().PeerCertificates)
		return true
	case modeRelayed:
		c.addCertIdentity([]*x509.Certificate{ac.cert})
		return true
	}
	if mode == modeUnified {
		b, err := peekFirstByte(raw, detectTimeout)
		if err != nil {
			c.log.Debug().Err(err).Msg("unified client port: nothing to tell TLS from plaintext by; closing")
			c.abort()
			return false
		}
		if b != tlsRecordHandshake {
			return b != relayMagic[0] || !c.plainRelay(raw)
		}
	} else if mode == modePlain {
		return true
	}
	router := c.srv.identity.p.Load()
	var sni string
	var bySNI *IdentityRoute
	if router != nil {
		var handled bool
		if sni, bySNI, handled = c.routeBeforeHandshake(router, raw); handled {
			return false
		}
	}
	cl := c.srv.listener.(*clientListener)
	tc := tls.Server(raw, cl.tlsConfig)
	_ = raw.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		cl.handshakeFailures.Add(1)
		c.log.Info().Err(err).Msg("TLS handshake failed; closing connection")
		c.nc = tc
		c.abort()
		return false
	}
	_ = raw.SetDeadline(time.Time{})
	c.nc = tc
	if router != nil && !c.routeAfterHandshake(router, tc, sni, bySNI) {
		return false
	}
	c.addCertIdentity(tc.ConnectionState().PeerCertificates)
	return true
}

// addCertIdentity adds the client certificate's x509 identity (and super,
// for ssl.x509SuperUser) to the connection's; certs is the chain the
// client presented (leaf first).
func (c *conn) addCertIdentity(certs []*x509.Certificate) {
	if len(certs) > 0 {
		dn := tlsconf.JavaDN(certs[0])
		ids := []zkproto.Id{{Scheme: "x509", ID: dn}}
		if su := c.srv.cfg.TLS.X509SuperUser; su != "" && dn == su {
			ids = append(ids, zkproto.Id{Scheme: "super", ID: dn})
		}
		c.stats.mu.Lock()
		c.auth = append(append([]zkproto.Id(nil), c.auth...), ids...)
		c.stats.mu.Unlock()
		c.log = c.log.With().Str("x509", dn).Logger()
	}
}

// tlsWriteBuffers holds the buffers TLS connections gather frames in.
var tlsWriteBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// writeFrames writes a batch of frames. A plain socket takes them in one
// writev. A TLS connection would seal each frame into a record of its own
// and write it with a syscall of its own, so the frames are copied
// together first and leave in as few records (16 KiB each) as they fill.
func (c *conn) writeFrames(batch *net.Buffers) error {
	nc := c.nc
	if rc, ok := nc.(*relayedConn); ok {
		nc = rc.Conn
	}
	if _, ok := nc.(*tls.Conn); !ok || len(*batch) < 2 {
		_, err := batch.WriteTo(c.nc)
		return err
	}
	bp := tlsWriteBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, f := range *batch {
		buf = append(buf, f...)
	}
	_, err := c.nc.Write(buf)
	if cap(buf) <= 1<<20 { // a huge batch's buffer is not kept
		*bp = buf[:0]
		tlsWriteBuffers.Put(bp)
	}
	return err
}
