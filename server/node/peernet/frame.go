package peernet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"
)

const (
	magic   = "ZKBP"
	version = 1

	kindBatch byte = 1
	kindChunk byte = 2

	preambleSize = len(magic) + 2
	headerSize   = 8 // payload length, payload CRC-32C

	// MaxFrame bounds a payload: dragonboat's largest message batch
	// (64 MiB) with room to spare. A larger length is corruption.
	MaxFrame = 65 << 20
	// keepBuffer: a reader or writer drops a buffer grown beyond this by
	// a large frame (a snapshot chunk, a big batch) instead of holding it.
	keepBuffer = 4 << 20
)

var (
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
	errCorrupt  = errors.New("peernet: corrupt frame")
	errPreamble = errors.New("peernet: bad preamble")
	errRejected = errors.New("peernet: refused by the receiver")
	// errStale: read while this node had not run for a while (stall.go).
	errStale = errors.New("peernet: this node did not run for a while; its backlog from this peer is discarded")
)

// readPreamble reads and checks a connection's preamble and returns its kind.
func readPreamble(r io.Reader) (byte, error) {
	var p [preambleSize]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return 0, fmt.Errorf("peernet: read preamble: %w", err)
	}
	if string(p[:len(magic)]) != magic {
		return 0, fmt.Errorf("%w: not a zkbridge peer connection (% x); is another program or an older zkbridge dialing the peer port?", errPreamble, p[:])
	}
	if v := p[len(magic)]; v != version {
		return 0, fmt.Errorf("%w: the peer speaks version %d, this node %d: run one zkbridge version on every node", errPreamble, v, version)
	}
	kind := p[len(magic)+1]
	if kind != kindBatch && kind != kindChunk {
		return 0, fmt.Errorf("%w: unknown connection kind %d", errPreamble, kind)
	}
	return kind, nil
}

// frameReader reads frames from a buffered connection. The payload next
// returns is valid until the following call.
type frameReader struct {
	r   *bufio.Reader
	hdr [headerSize]byte
	buf []byte
}

func (f *frameReader) next() ([]byte, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(f.hdr[:4])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: length %d exceeds the %d-byte limit", errCorrupt, n, MaxFrame)
	}
	if cap(f.buf) > keepBuffer {
		f.buf = nil
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	p := f.buf[:n]
	if _, err := io.ReadFull(f.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("peernet: read %d-byte frame: %w", n, err)
	}
	if got, want := crc32.Checksum(p, castagnoli), binary.BigEndian.Uint32(f.hdr[4:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, header says %08x", errCorrupt, got, want)
	}
	return p, nil
}

// frameWriter writes each frame with one write call; the connection's
// preamble goes out with the first frame.
type frameWriter struct {
	c   net.Conn
	pre []byte
	buf []byte
}

func newFrameWriter(c net.Conn, kind byte) *frameWriter {
	return &frameWriter{c: c, pre: append([]byte(magic), version, kind)}
}

// write frames the size bytes that marshal writes.
func (w *frameWriter) write(size int, marshal func([]byte) (int, error)) error {
	if size > MaxFrame {
		return fmt.Errorf("peernet: a %d-byte frame exceeds the %d-byte limit", size, MaxFrame)
	}
	need := len(w.pre) + headerSize + size
	if cap(w.buf) < need {
		w.buf = make([]byte, need)
	}
	b := w.buf[:need]
	copy(b, w.pre)
	h := b[len(w.pre) : len(w.pre)+headerSize]
	p := b[len(w.pre)+headerSize:]
	n, err := marshal(p)
	if err != nil {
		return fmt.Errorf("peernet: marshal: %w", err)
	}
	if n != size {
		return fmt.Errorf("peernet: marshalled %d bytes, expected %d", n, size)
	}
	binary.BigEndian.PutUint32(h, uint32(size))
	binary.BigEndian.PutUint32(h[4:], crc32.Checksum(p, castagnoli))
	_ = w.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := w.c.Write(b); err != nil {
		return fmt.Errorf("peernet: send to %s: %w", w.c.RemoteAddr(), err)
	}
	w.pre = nil
	if cap(w.buf) > keepBuffer {
		w.buf = nil
	}
	return nil
}

func (w *frameWriter) close() { _ = w.c.Close() }
