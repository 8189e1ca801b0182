package zkproto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zkbridge/zkbridge/zkproto"
)

// fzOpcodes lists every opcode constant, and a few numbers that are not
// opcodes, for seeding the registry-driven targets.
var fzOpcodes = []zkproto.OpCode{
	zkproto.OpNotify, zkproto.OpCreate, zkproto.OpDelete, zkproto.OpExists, zkproto.OpGetData,
	zkproto.OpSetData, zkproto.OpGetACL, zkproto.OpSetACL, zkproto.OpGetChildren, zkproto.OpSync,
	zkproto.OpPing, zkproto.OpGetChildren2, zkproto.OpCheck, zkproto.OpMulti, zkproto.OpCreate2,
	zkproto.OpReconfig, zkproto.OpCheckWatches, zkproto.OpRemoveWatches, zkproto.OpCreateContainer,
	zkproto.OpDeleteContainer, zkproto.OpCreateTTL, zkproto.OpMultiRead, zkproto.OpAuth,
	zkproto.OpSetWatches, zkproto.OpSASL, zkproto.OpGetEphemerals, zkproto.OpGetAllChildrenNumber,
	zkproto.OpSetWatches2, zkproto.OpAddWatch, zkproto.OpWhoAmI, zkproto.OpCreateSession,
	zkproto.OpCloseSession, zkproto.OpError, 10, 999,
}

// fzCheckRoundTrip decodes body into rec. When that succeeds, the value
// must survive encode → decode unchanged, and encoding must be stable.
func fzCheckRoundTrip(t *testing.T, rec zkproto.Record, body []byte) {
	t.Helper()
	if err := rec.Decode(zkproto.NewDecoder(body)); err != nil {
		return
	}
	b1 := zkproto.Marshal(rec)
	again := rtNew(rec)
	if err := zkproto.Unmarshal(b1, again); err != nil {
		t.Fatalf("%T decoded from %x, but its encoding %x does not decode: %v", rec, body, b1, err)
	}
	if !reflect.DeepEqual(rec, again) {
		t.Fatalf("%T changed in a round trip:\nfirst  %#v\nsecond %#v", rec, rec, again)
	}
	if b2 := zkproto.Marshal(again); !bytes.Equal(b1, b2) {
		t.Fatalf("%T encodings differ:\n%x\n%x", rec, b1, b2)
	}
}

// fzSeedByType adds a seed (op, encoding) for every opcode whose record,
// as returned by newRecord, has the type of a sample.
func fzSeedByType(f *testing.F, newRecord func(zkproto.OpCode) (zkproto.Record, bool)) {
	for _, op := range fzOpcodes {
		rec, ok := newRecord(op)
		if !ok {
			f.Add(int32(op), []byte{0, 0, 0, 2, '/', 'a'})
			continue
		}
		for _, s := range rtSamples() {
			if reflect.TypeOf(s.rec) == reflect.TypeOf(rec) {
				f.Add(int32(op), zkproto.Marshal(s.rec))
			}
		}
	}
}

// FuzzRequest decodes a request body with the record NewRequest picks for
// the opcode: every request decoder of the package.
func FuzzRequest(f *testing.F) {
	fzSeedByType(f, zkproto.NewRequest)
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, ok := zkproto.NewRequest(zkproto.OpCode(op))
		if !ok {
			return
		}
		fzCheckRoundTrip(t, rec, body)
	})
}

// FuzzResponse does the same for every response decoder.
func FuzzResponse(f *testing.F) {
	fzSeedByType(f, zkproto.NewResponse)
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, ok := zkproto.NewResponse(zkproto.OpCode(op))
		if !ok {
			return
		}
		fzCheckRoundTrip(t, rec, body)
	})
}

// FuzzRecord covers the records no opcode selects (headers, events, Stat,
// the records zookeeper.jute defines but no opcode sends), by sample index.
func FuzzRecord(f *testing.F) {
	samples := rtSamples()
	for i, s := range samples {
		f.Add(uint8(i), zkproto.Marshal(s.rec))
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		fzCheckRoundTrip(t, rtNew(samples[int(kind)%len(samples)].rec), body)
	})
}

func FuzzMultiRequest(f *testing.F) {
	for _, s := range rtSamples() {
		if _, ok := s.rec.(*zkproto.MultiRequest); ok {
			f.Add(zkproto.Marshal(s.rec))
		}
	}
	f.Add(rtHex(f, "00000003 00 ffffffff 00000002 2f61 00 ffffffff 01 ffffffff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fzCheckRoundTrip(t, &zkproto.MultiRequest{}, body)
	})
}

func FuzzMultiResponse(f *testing.F) {
	for _, s := range rtSamples() {
		if _, ok := s.rec.(*zkproto.MultiResponse); ok {
			f.Add(zkproto.Marshal(s.rec))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fzCheckRoundTrip(t, &zkproto.MultiResponse{}, body)
	})
}

// FuzzConnect decodes the bytes as both handshake records. The form that
// was read (with or without readOnly) must be the form written back.
func FuzzConnect(f *testing.F) {
	for _, s := range rtSamples() {
		switch s.rec.(type) {
		case *zkproto.ConnectRequest, *zkproto.ConnectResponse:
			f.Add(zkproto.Marshal(s.rec))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := &zkproto.ConnectRequest{}
		fzCheckRoundTrip(t, req, body)
		if err := zkproto.Unmarshal(body, &zkproto.ConnectRequest{}); err == nil {
			if n := len(zkproto.Marshal(req)); n != len(body) {
				t.Fatalf("ConnectRequest of %d bytes re-encodes to %d", len(body), n)
			}
		}
		resp := &zkproto.ConnectResponse{}
		fzCheckRoundTrip(t, resp, body)
		if err := zkproto.Unmarshal(body, &zkproto.ConnectResponse{}); err == nil {
			if n := len(zkproto.Marshal(resp)); n != len(body) {
				t.Fatalf("ConnectResponse of %d bytes re-encodes to %d", len(body), n)
			}
		}
	})
}

// fzCountingReader records the largest read it was asked for.
type fzCountingReader struct {
	r       io.Reader
	maxRead int
}

func (c *fzCountingReader) Read(p []byte) (int, error) {
	c.maxRead = max(c.maxRead, len(p))
	if len(p) > 3 {
		p = p[:len(p)/2+1] // short reads exercise reassembly
	}
	return c.r.Read(p)
}

// FuzzFrameReader reads a stream of frames and compares every result with
// a straightforward parse of the same bytes. No buffer may exceed max.
func FuzzFrameReader(f *testing.F) {
	f.Add(rtFrames([]byte("abc"), nil, []byte("defgh")), uint16(16), false)
	f.Add(zkproto.AppendFrame(nil, zkproto.Marshal(rtSamples()[0].rec)), uint16(100), true)
	f.Add([]byte("ruok"), uint16(0), true)
	f.Add([]byte("stmk\x00\x00\x00\x00\x00\x00\x01\x32"), uint16(0), true)
	f.Add([]byte(zkproto.TelnetClose), uint16(0), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xfe}, uint16(10), false)
	f.Add([]byte{0, 0, 1, 0, 1, 2}, uint16(1000), false)
	f.Add([]byte{0, 0, 0}, uint16(1), true)
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16, first bool) {
		maxLen := int(limit)
		if maxLen == 0 {
			maxLen = zkproto.DefaultMaxBuffer
		}
		cr := &fzCountingReader{r: bytes.NewReader(stream)}
		fr := zkproto.NewFrameReader(cr, int(limit))
		if fr.Max() != maxLen {
			t.Fatalf("Max() = %d, want %d", fr.Max(), maxLen)
		}
		off := 0
		for i := 0; ; i++ {
			var (
				frame []byte
				word  string
				err   error
			)
			if first && i == 0 {
				frame, word, err = fr.First()
			} else {
				frame, err = fr.Next()
			}
			if cap(frame) > maxLen || cr.maxRead > max(4, maxLen) {
				t.Fatalf("frame cap %d, largest read %d, max %d", cap(frame), cr.maxRead, maxLen)
			}

			rest := stream[off:]
			switch {
			case len(rest) == 0:
				if err != io.EOF {
					t.Fatalf("at end of stream: %v, want io.EOF", err)
				}
				return
			case len(rest) < 4:
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("%d header bytes: %v, want io.ErrUnexpectedEOF", len(rest), err)
				}
				return
			}
			if first && i == 0 {
				if w, ok := zkproto.FourLetterWord([4]byte(rest)); ok {
					if err != nil || word != w || frame != nil {
						t.Fatalf("First on %q: %x, %q, %v", w, frame, word, err)
					}
					off += 4
					continue
				}
			}
			if word != "" {
				t.Fatalf("unexpected word %q", word)
			}
			n := int32(binary.BigEndian.Uint32(rest))
			var fse *zkproto.FrameSizeError
			switch {
			case n < 0 || int(n) > maxLen:
				if !errors.As(err, &fse) || fse.Length != n || fse.Max != maxLen || frame != nil {
					t.Fatalf("length %d, max %d: %x, %v; want *FrameSizeError", n, maxLen, frame, err)
				}
				return
			case len(rest)-4 < int(n):
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("length %d with %d bytes: %v, want io.ErrUnexpectedEOF", n, len(rest)-4, err)
				}
				return
			}
			if err != nil || !bytes.Equal(frame, rest[4:4+n]) {
				t.Fatalf("frame %d: %x, %v; want %x", i, frame, err, rest[4:4+n])
			}
			off += 4 + int(n)
		}
	})
}

// fzJavaValidatePath states PathUtils.validatePath over UTF-16 code units,
// as Java sees the path, to cross-check ValidatePath. A byte sequence that
// is not UTF-8 reaches Java as U+FFFD, which the rules reject.
func fzJavaValidatePath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if path == "/" {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	cs := utf16.Encode([]rune(path)) // invalid UTF-8 becomes U+FFFD
	for i := 1; i < len(cs); i++ {
		c, last := cs[i], cs[i-1]
		endOfSegment := i+1 == len(cs) || cs[i+1] == '/'
		switch {
		case c == 0:
			return false
		case c == '/' && last == '/':
			return false
		case c == '.' && last == '.' && cs[i-2] == '/' && endOfSegment:
			return false
		case c == '.' && last == '/' && endOfSegment:
			return false
		case c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return false
		}
	}
	return true
}

func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"/", "/a/b", "/a/..", "/a/.b", "//", "/\u009f", "/\ue000", "/😀", "/\xff", "/a/", "/..."} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		err := zkproto.ValidatePath(path)
		if want := fzJavaValidatePath(path); (err == nil) != want {
			t.Fatalf("ValidatePath(%q) = %v, Java rules say valid=%v", path, err, want)
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(path) {
			t.Fatalf("ValidatePath accepted invalid UTF-8 %q", path)
		}
		if path != "/" {
			if got := zkproto.JoinPath(zkproto.ParentPath(path), zkproto.BaseName(path)); got != path {
				t.Fatalf("JoinPath(ParentPath, BaseName) of %q = %q", path, got)
			}
			if err := zkproto.ValidatePath(zkproto.ParentPath(path)); err != nil {
				t.Fatalf("parent of valid %q is invalid: %v", path, err)
			}
		}
	})
}
