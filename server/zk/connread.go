package zk

import (
	"io"
	"sync"
)

// readBufferSize is the read buffer a connection borrows while its client
// sends faster than one small read takes in: a pipelining client's
// requests arrive together, and reading each one's header and body
// straight from the socket would cost two syscalls per request.
const readBufferSize = 32 << 10

var readBuffers = sync.Pool{New: func() any { return new([readBufferSize]byte) }}

// connReader buffers a connection's input without holding a large buffer
// while the connection is idle. A read waits for input in a small buffer
// of its own; only when that read fills it (more input is likely waiting)
// does the connection borrow a large buffer from a pool, and it gives it
// back as soon as a read of the socket comes back short (the socket was
// drained) and the buffered bytes are consumed. A held idle session so
// costs sessionlessBuffer bytes here, not 32 KiB.
type connReader struct {
	src   io.Reader
	small [sessionlessBuffer]byte
	big   *[readBufferSize]byte // borrowed; nil while idle
	buf   []byte                // small[:] or big[:]
	r, w  int                   // unread input is buf[r:w]
	// keepBig: the last read of the socket filled the buffer, so the next
	// one goes straight to the large buffer.
	keepBig bool
}

func newConnReader(src io.Reader) *connReader { return &connReader{src: src} }

// Read implements io.Reader.
func (cr *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if cr.r == cr.w {
		if !cr.keepBig && cr.big != nil {
			readBuffers.Put(cr.big)
			cr.big = nil
		}
		if len(p) >= readBufferSize {
			// A large frame's body: straight into it, no copy.
			return cr.src.Read(p)
		}
		if err := cr.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, cr.buf[cr.r:cr.w])
	cr.r += n
	return n, nil
}

// fill reads the socket once into an empty buffer.
func (cr *connReader) fill() error {
	if cr.keepBig {
		cr.buf = cr.big[:]
	} else {
		cr.buf = cr.small[:]
	}
	n, err := cr.src.Read(cr.buf)
	cr.r, cr.w = 0, n
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	// An error with data is returned again by the next read of the socket.
	full := n == len(cr.buf)
	if full && !cr.keepBig {
		// The small buffer filled up: continue in a large one.
		cr.big = readBuffers.Get().(*[readBufferSize]byte)
		copy(cr.big[:], cr.small[:n])
		cr.buf = cr.big[:]
	}
	cr.keepBig = full
	return nil
}

// release gives back the large buffer (the connection ended).
func (cr *connReader) release() {
	if cr.big != nil {
		readBuffers.Put(cr.big)
		cr.big = nil
	}
	cr.buf, cr.r, cr.w, cr.keepBig = nil, 0, 0, false
}
