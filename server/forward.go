package server

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
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
