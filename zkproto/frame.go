package zkproto

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// FrameSizeError is a frame whose length prefix is negative or larger than
// the reader's limit. ZooKeeper closes the connection without a reply.
type FrameSizeError struct {
	Length int32
	Max    int
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("zkproto: frame length %d outside [0, %d] (jute.maxbuffer)", e.Length, e.Max)
}

// frameChunk bounds how much buffer is grown ahead of the bytes that have
// actually arrived, so a peer that announces a large frame and sends
// nothing cannot make us allocate the whole of it.
const frameChunk = 64 << 10

// frameKeep is the largest buffer a FrameReader keeps between frames. A
// larger one (a 1 MB setData) goes back to a pool shared by all readers
// before the next frame is awaited, so a connection that once read a
// large request does not hold its buffer while idle (with many
// connections that was megabytes each), and one that keeps sending large
// requests takes a buffer from the pool instead of allocating it again.
const frameKeep = 64 << 10

// largeFrames pools the buffers of large frames by capacity class: class
// k holds buffers of frameKeep<<(k+1) bytes or more, less than twice that
// (the last class: any larger). A pooled buffer is taken only for a frame
// whose size it fits, and sync.Pool lets the garbage collector take back
// what is not in use.
var largeFrames [12]sync.Pool

// largeClass returns the class of a buffer of n bytes, or -1 (too small).
func largeClass(n int) int {
	k := -1
	for k+1 < len(largeFrames) && n >= frameKeep<<(k+2) {
		k++
	}
	return k
}

// getLarge returns a pooled buffer of size to max bytes, or nil: from the
// class above size's, where every buffer fits, else from size's own class
// if the one it holds is large enough. (A reader never holds more than
// its max.)
func getLarge(size, max int) []byte {
	take := func(k int) []byte {
		b, ok := largeFrames[k].Get().(*[]byte)
		if !ok {
			return nil
		}
		if cap(*b) < size || cap(*b) > max {
			largeFrames[k].Put(b)
			return nil
		}
		return (*b)[:0]
	}
	k := largeClass(size)
	if k+1 < len(largeFrames) {
		if b := take(k + 1); b != nil {
			return b
		}
	}
	if k < 0 {
		return nil
	}
	return take(k)
}

// putLarge gives a large buffer back to the pool of its class.
func putLarge(b []byte) {
	if k := largeClass(cap(b)); k >= 0 {
		largeFrames[k].Put(&b)
	}
}

// FrameReader reads length-prefixed frames bounded by a maximum length.
type FrameReader struct {
	r   io.Reader
	max int
	buf []byte
	hdr [4]byte
}

// NewFrameReader reads frames from r; max ≤ 0 means DefaultMaxBuffer.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	if max <= 0 {
		max = DefaultMaxBuffer
	}
	return &FrameReader{r: r, max: max}
}

// Max returns the largest frame payload the reader accepts.
func (f *FrameReader) Max() int { return f.max }

// Next reads one frame and returns its payload, which is valid until the
// next call. io.EOF means the stream ended cleanly between frames.
func (f *FrameReader) Next() ([]byte, error) {
	f.shrink()
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return nil, err
	}
	return f.body(int32(binary.BigEndian.Uint32(f.hdr[:])))
}

// First reads the first message of a fresh client connection. When its
// first four bytes are a four-letter word, it returns the word and no
// frame; otherwise they are the frame's length.
func (f *FrameReader) First() (frame []byte, word string, err error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return nil, "", err
	}
	if w, ok := FourLetterWord(f.hdr); ok {
		return nil, w, nil
	}
	frame, err = f.body(int32(binary.BigEndian.Uint32(f.hdr[:])))
	return frame, "", err
}

// shrink gives back a buffer past frameKeep (the previous frame's payload
// is no longer the caller's).
func (f *FrameReader) shrink() {
	if cap(f.buf) > frameKeep {
		putLarge(f.buf)
		f.buf = nil
	}
}

func (f *FrameReader) body(n int32) ([]byte, error) {
	if n < 0 || int64(n) > int64(f.max) {
		return nil, &FrameSizeError{Length: n, Max: f.max}
	}
	size := int(n)
	if size <= cap(f.buf) {
		f.buf = f.buf[:size]
		if _, err := io.ReadFull(f.r, f.buf); err != nil {
			return nil, unexpected(err)
		}
		return f.buf, nil
	}
	// Grow as the bytes arrive, fourfold: a 1 MiB frame is read into
	// buffers of 64 KiB, 320 KiB and 1 MiB (384 KiB copied), not five
	// doublings (1.6 MiB copied); a peer that announces a large frame
	// and stops still holds at most about four times what it sent.
	f.buf = f.buf[:0]
	for len(f.buf) < size {
		step := min(size-len(f.buf), frameChunk)
		if cap(f.buf)-len(f.buf) < step {
			grown := getLarge(size, f.max)
			if grown == nil {
				grown = make([]byte, 0, min(size, 4*cap(f.buf)+step))
			}
			grown = append(grown, f.buf...)
			if cap(f.buf) > frameKeep {
				putLarge(f.buf)
			}
			f.buf = grown
		}
		start := len(f.buf)
		f.buf = f.buf[:start+step]
		if _, err := io.ReadFull(f.r, f.buf[start:]); err != nil {
			return nil, unexpected(err)
		}
	}
	return f.buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendFrame appends a length prefix and payload to dst.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// WriteFrame writes one length-prefixed frame.
func WriteFrame(w io.Writer, payload []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, 4+len(payload)), payload))
	return err
}

// StartFrame reserves a length prefix and returns its offset, for
// FinishFrame to fill in once the frame's records are encoded.
func (e *Encoder) StartFrame() int {
	off := len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	return off
}

// FinishFrame writes the length of everything encoded since StartFrame.
func (e *Encoder) FinishFrame(off int) {
	binary.BigEndian.PutUint32(e.buf[off:], uint32(len(e.buf)-off-4))
}

// The four-letter words ZooKeeper recognises (FourLetterCommands).
var fourLetterWords = [...]string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
	"srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash",
}

// TelnetClose is the telnet interrupt (0xfff4fffd), which ZooKeeper also
// accepts as a four-letter command.
const TelnetClose = "\xff\xf4\xff\xfd"

// FourLetterWord reports whether the first four bytes of a connection are
// a four-letter command, and which.
func FourLetterWord(b [4]byte) (string, bool) {
	s := string(b[:])
	if s == TelnetClose {
		return s, true
	}
	for _, w := range fourLetterWords {
		if w == s {
			return w, true
		}
	}
	return "", false
}

// FourLetterWords returns every command name FourLetterWord recognises
// except the telnet interrupt.
func FourLetterWords() []string {
	out := make([]string, len(fourLetterWords))
	copy(out, fourLetterWords[:])
	return out
}
