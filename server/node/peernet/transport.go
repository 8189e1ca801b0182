package peernet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
)

const (
	dialTimeout = 5 * time.Second
	// preambleTimeout: a dialer sends the preamble with its first frame,
	// which it dials for, so an accepted connection that stays silent this
	// long is not a peer.
	preambleTimeout = 5 * time.Second
	// writeTimeout bounds one frame's write: a peer that stops reading
	// fails the send, and dragonboat drops the connection and dials again.
	writeTimeout = 10 * time.Second
	// idleTimeout closes an incoming connection that carries nothing for
	// this long. A live Raft link carries heartbeats many times a second.
	idleTimeout     = 60 * time.Second
	keepAlivePeriod = 15 * time.Second
	readBufferSize  = 64 << 10
)

// Factory creates the transport; it is dragonboat's
// NodeHostConfig.Expert.TransportFactory.
type Factory struct {
	Log zerolog.Logger
	// TLS, when set, makes every peer connection mutual TLS (tls.go).
	TLS *tlsconf.Source
}

// Create returns a transport that listens on the node host's listen
// address once started.
func (f Factory) Create(nhc config.NodeHostConfig, onBatch raftio.MessageHandler, onChunk raftio.ChunkHandler) raftio.ITransport {
	return &Transport{
		listenAddr: nhc.GetListenAddress(),
		onBatch:    onBatch,
		onChunk:    onChunk,
		log:        f.Log,
		conns:      map[net.Conn]struct{}{},
		tls:        newPeerTLS(f.TLS),
		faults:     FaultsFor(nhc.GetListenAddress()),
	}
}

// Validate reports whether addr is a host:port this transport can dial.
func (Factory) Validate(addr string) bool { return ValidAddress(addr) }

// ValidAddress reports whether addr is host:port with a non-empty host and
// a port in 1..65535.
func ValidAddress(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p <= 65535
}

// Transport is one node host's peer transport (raftio.ITransport).
type Transport struct {
	listenAddr string
	onBatch    raftio.MessageHandler
	onChunk    raftio.ChunkHandler
	log        zerolog.Logger
	tls        *peerTLS // nil: plaintext
	faults     *Faults  // what a test or the fault suite injects (usually nothing)
	flows      flows    // what each peer replica has not answered yet (flow.go)

	stopFaults chan struct{} // ends the fault file watcher (FaultFileEnv)
	stopStalls chan struct{} // ends watchStalls
	stalls     atomic.Int64  // stalls noticed (stall.go)
	lastRun    atomic.Int64  // when the process was last seen running, ns after processStart (stall.go)

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{} // incoming, closed by Close
	closed bool
	wg     sync.WaitGroup
}

// Name names the transport in dragonboat's logs.
func (t *Transport) Name() string { return "zkbridge-peernet" }

// Start listens and serves incoming connections in the background.
func (t *Transport) Start() error {
	ln, err := net.Listen("tcp", t.listenAddr)
	if err != nil {
		return fmt.Errorf("peernet: listen on %s: %w", t.listenAddr, err)
	}
	t.mu.Lock()
	t.ln = ln
	t.mu.Unlock()
	t.wg.Add(1)
	go t.acceptLoop(ln)
	t.stopStalls = make(chan struct{})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.watchStalls(t.stopStalls)
	}()
	if path := os.Getenv(FaultFileEnv); path != "" {
		t.stopFaults = make(chan struct{})
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			watchFaultFile(path, t.faults, t.stopFaults, t.log)
		}()
	}
	return nil
}

// Addr is the address the transport listens on once started.
func (t *Transport) Addr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// Close stops listening, closes every incoming connection and waits for
// their readers to end. Outgoing connections are dragonboat's to close.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	if t.stopFaults != nil {
		close(t.stopFaults)
		t.stopFaults = nil
	}
	if t.stopStalls != nil {
		close(t.stopStalls)
		t.stopStalls = nil
	}
	ln := t.ln
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	t.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("peernet: close listener: %w", err)
	}
	return nil
}

func (t *Transport) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if t.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: keep listening.
			t.log.Warn().Err(err).Str("addr", t.listenAddr).Msg("peer accept failed; retrying")
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !t.track(c) {
			_ = c.Close()
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.untrack(c)
			t.serve(c)
		}()
	}
}

func (t *Transport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	_ = c.Close()
}

// serve reads one incoming connection's frames and hands them to
// dragonboat until the connection ends or misbehaves.
func (t *Transport) serve(c net.Conn) {
	c, ok := t.secureIncoming(c)
	if !ok {
		return
	}
	if err := t.readFrames(c); err != nil {
		t.logDrop(c, err)
	}
}

// readFrames delivers c's frames; it returns only with the error that
// ended the connection.
func (t *Transport) readFrames(c net.Conn) error {
	setKeepAlive(c)
	r := bufio.NewReaderSize(c, readBufferSize)
	_ = c.SetReadDeadline(time.Now().Add(preambleTimeout))
	kind, err := readPreamble(r)
	if err != nil {
		return err
	}
	fr := frameReader{r: r}
	for {
		_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		payload, err := fr.next()
		if err != nil {
			return err
		}
		if t.stale() {
			return errStale
		}
		if err := t.deliver(kind, payload); err != nil {
			return err
		}
	}
}

// deliver decodes one payload and passes it on.
func (t *Transport) deliver(kind byte, payload []byte) error {
	switch kind {
	case kindBatch:
		var b raftpb.MessageBatch
		if err := decode(b.Unmarshal, payload); err != nil {
			return fmt.Errorf("%w: message batch: %v", errCorrupt, err)
		}
		t.faults.filter(&b)
		for i := range b.Requests {
			if m := &b.Requests[i]; isAnswer(m.Type) {
				t.flows.answered(flowKey{m.ShardID, m.From})
			}
		}
		t.onBatch(b)
	case kindChunk:
		var ch raftpb.Chunk
		if err := decode(ch.Unmarshal, payload); err != nil {
			return fmt.Errorf("%w: snapshot chunk: %v", errCorrupt, err)
		}
		if t.faults.cutChunk(ch.From) {
			return fmt.Errorf("%w: snapshot chunk from replica %d: cut off by an injected partition", errRejected, ch.From)
		}
		if !t.onChunk(ch) {
			return fmt.Errorf("%w: snapshot chunk %d of shard %d from replica %d rejected", errRejected, ch.ChunkId, ch.ShardID, ch.From)
		}
	}
	return nil
}

// decode runs a generated Unmarshal, turning a panic into an error: a
// peer's bytes must not crash the node. (Only the decoding is guarded;
// dragonboat's handlers keep their own panics.)
func decode(unmarshal func([]byte) error, payload []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoding panicked: %v", p)
		}
	}()
	return unmarshal(payload)
}

// logDrop logs why an incoming connection ends: bad bytes and refused
// chunks as warnings, a peer that went away (closed, reset, timed out) at
// debug level, as that is routine while nodes restart.
func (t *Transport) logDrop(c net.Conn, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || t.isClosed() {
		return
	}
	ev := t.log.Debug()
	if errors.Is(err, errStale) {
		ev = t.log.Info()
	}
	if errors.Is(err, errCorrupt) || errors.Is(err, errRejected) || errors.Is(err, errPreamble) {
		ev = t.log.Warn()
	}
	ev.Err(err).Str("peer", c.RemoteAddr().String()).Msg("closing peer connection")
}

// GetConnection dials target for Raft message batches. A peer that is
// down is not an error: the connection redials it (redial.go).
func (t *Transport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	c, err := t.dialPeer(ctx, target)
	if err != nil && !peerDown(err) {
		return nil, err
	}
	return newBatchConn(t, target, c), nil
}

// GetSnapshotConnection dials target for one snapshot's chunks.
func (t *Transport) GetSnapshotConnection(ctx context.Context, target string) (raftio.ISnapshotConnection, error) {
	c, err := t.dialPeer(ctx, target)
	if err != nil {
		return nil, err
	}
	return &chunkConn{w: newFrameWriter(c, kindChunk)}, nil
}

func dial(ctx context.Context, target string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlivePeriod}
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("peernet: dial %s: %w", target, err)
	}
	return c, nil
}

func setKeepAlive(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(keepAlivePeriod)
	}
}

// chunkConn sends one snapshot's chunks.
type chunkConn struct{ w *frameWriter }

func (s *chunkConn) SendChunk(chunk raftpb.Chunk) error {
	return s.w.write(chunk.Size(), chunk.MarshalTo)
}

func (s *chunkConn) Close() { s.w.close() }
