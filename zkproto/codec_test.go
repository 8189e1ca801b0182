package zkproto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestEncoderPrimitives(t *testing.T) {
	tests := []struct {
		name string
		enc  func(e *zkproto.Encoder)
		hex  string
	}{
		{"boolFalse", func(e *zkproto.Encoder) { e.Bool(false) }, "00"},
		{"boolTrue", func(e *zkproto.Encoder) { e.Bool(true) }, "01"},
		{"int", func(e *zkproto.Encoder) { e.Int(0x01020304) }, "01020304"},
		{"intNegative", func(e *zkproto.Encoder) { e.Int(-2) }, "fffffffe"},
		{"long", func(e *zkproto.Encoder) { e.Long(0x0102030405060708) }, "0102030405060708"},
		{"longMin", func(e *zkproto.Encoder) { e.Long(-1 << 63) }, "8000000000000000"},
		{"string", func(e *zkproto.Encoder) { e.String("/é") }, "00000003 2fc3a9"},
		{"stringEmpty", func(e *zkproto.Encoder) { e.String("") }, "00000000"},
		{"bufferNull", func(e *zkproto.Encoder) { e.Buffer(nil) }, "ffffffff"},
		{"bufferEmpty", func(e *zkproto.Encoder) { e.Buffer([]byte{}) }, "00000000"},
		{"buffer", func(e *zkproto.Encoder) { e.Buffer([]byte{0xde, 0xad}) }, "00000002 dead"},
		{"stringsNull", func(e *zkproto.Encoder) { e.Strings(nil) }, "ffffffff"},
		{"stringsEmpty", func(e *zkproto.Encoder) { e.Strings([]string{}) }, "00000000"},
		{"strings", func(e *zkproto.Encoder) { e.Strings([]string{"a", ""}) }, "00000002 00000001 61 00000000"},
		{"raw", func(e *zkproto.Encoder) { e.Raw([]byte{1, 2}) }, "0102"},
		{"frame", func(e *zkproto.Encoder) {
			off := e.StartFrame()
			e.Int(7)
			e.Bool(true)
			e.FinishFrame(off)
		}, "00000005 00000007 01"},
		{"frameAfterData", func(e *zkproto.Encoder) {
			e.Raw([]byte{0xaa})
			off := e.StartFrame()
			e.FinishFrame(off)
		}, "aa 00000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e zkproto.Encoder
			tt.enc(&e)
			want := rtHex(t, tt.hex)
			if !bytes.Equal(e.Bytes(), want) || e.Len() != len(want) {
				t.Fatalf("encoded %x (Len %d), want %x", e.Bytes(), e.Len(), want)
			}
		})
	}
}

func TestEncoderReuse(t *testing.T) {
	buf := make([]byte, 3, 64)
	e := zkproto.NewEncoder(buf)
	if e.Len() != 0 {
		t.Fatalf("NewEncoder kept %d bytes", e.Len())
	}
	e.Int(1)
	if &e.Bytes()[0] != &buf[:1][0] {
		t.Error("NewEncoder did not append into the given buffer")
	}
	e.Reset()
	e.Bool(true)
	if got := e.Bytes(); !bytes.Equal(got, []byte{1}) || cap(got) != 64 {
		t.Errorf("after Reset: %x cap %d", got, cap(got))
	}
}

func TestDecoderPrimitives(t *testing.T) {
	d := zkproto.NewDecoder(rtHex(t, "00 01 ff fffffffe 8000000000000000 00000002 6869 ffffffff 00000000 00000001 7a ffffffff 00000000"))
	if d.Bool() || !d.Bool() || !d.Bool() {
		t.Error("Bool: want false, true, true (any non-zero byte is true)")
	}
	if v := d.Int(); v != -2 {
		t.Errorf("Int = %d", v)
	}
	if v := d.Long(); v != -1<<63 {
		t.Errorf("Long = %d", v)
	}
	if v := d.String(); v != "hi" {
		t.Errorf("String = %q", v)
	}
	if v := d.String(); v != "" {
		t.Errorf("null String = %q", v)
	}
	if v := d.Buffer(); v == nil || len(v) != 0 {
		t.Errorf("empty Buffer = %#v, want non-nil empty", v)
	}
	if v := d.Buffer(); !bytes.Equal(v, []byte("z")) {
		t.Errorf("Buffer = %q", v)
	}
	if v := d.Buffer(); v != nil {
		t.Errorf("null Buffer = %#v, want nil", v)
	}
	if v := d.Strings(); v == nil || len(v) != 0 {
		t.Errorf("empty Strings = %#v, want non-nil empty", v)
	}
	if d.Err() != nil || d.Remaining() != 0 || d.Offset() != 42 {
		t.Errorf("Err %v, Remaining %d, Offset %d", d.Err(), d.Remaining(), d.Offset())
	}
	// Reading past the end fails and the failure sticks.
	if v := d.Int(); v != 0 || !errors.Is(d.Err(), zkproto.ErrShortBuffer) {
		t.Errorf("Int past end = %d, err %v", v, d.Err())
	}
	d.Fail(errors.New("later"))
	if !errors.Is(d.Err(), zkproto.ErrShortBuffer) {
		t.Errorf("Fail replaced the first error: %v", d.Err())
	}
	d.Reset([]byte{0, 0, 0, 9})
	if d.Err() != nil || d.Int() != 9 {
		t.Errorf("after Reset: err %v", d.Err())
	}
}

func TestDecoderBufferCopyAndAlias(t *testing.T) {
	in := rtHex(t, "00000002 6869 00000002 6869 ffffffff")
	d := zkproto.NewDecoder(in)
	cp := d.Buffer()
	alias := d.BufferAlias()
	null := d.BufferAlias()
	if d.Err() != nil || null != nil {
		t.Fatalf("err %v, null alias %#v", d.Err(), null)
	}
	if cap(alias) != 2 {
		t.Errorf("BufferAlias cap %d, want 2 (appending must not overwrite the input)", cap(alias))
	}
	in[4], in[10] = 'X', 'X'
	if string(cp) != "hi" {
		t.Errorf("Buffer aliases its input: %q", cp)
	}
	if string(alias) != "Xi" {
		t.Errorf("BufferAlias does not alias its input: %q", alias)
	}
}

// TestDecoderRejectsBadLengths checks every length prefix: -1 is null, any
// other negative value and anything beyond the remaining bytes is an error.
func TestDecoderRejectsBadLengths(t *testing.T) {
	type decodeFunc func(d *zkproto.Decoder) any
	var (
		str   decodeFunc = func(d *zkproto.Decoder) any { return d.String() }
		buf   decodeFunc = func(d *zkproto.Decoder) any { return d.Buffer() }
		alias decodeFunc = func(d *zkproto.Decoder) any { return d.BufferAlias() }
		strs  decodeFunc = func(d *zkproto.Decoder) any { return d.Strings() }
		vec12 decodeFunc = func(d *zkproto.Decoder) any {
			n := d.VectorLen(12)
			for i := 0; i < n; i++ { // elements of three ints
				d.Int()
				d.Int()
				d.Int()
			}
			return n
		}
		acls    decodeFunc = func(d *zkproto.Decoder) any { r := &zkproto.SetACLRequest{}; _ = r.Decode(d); return r }
		whoami  decodeFunc = func(d *zkproto.Decoder) any { r := &zkproto.WhoAmIResponse{}; _ = r.Decode(d); return r }
		okCases            = []struct {
			name string
			f    decodeFunc
			hex  string
		}{
			{"string/null", str, "ffffffff"},
			{"string/exact", str, "00000001 61"},
			{"buffer/null", buf, "ffffffff"},
			{"buffer/exact", buf, "00000002 6161"},
			{"strings/null", strs, "ffffffff"},
			{"strings/exact", strs, "00000002 00000000 00000000"},
			{"vector/exact", vec12, "00000001 000000000000000000000000"},
		}
		badCases = []struct {
			name string
			f    decodeFunc
			hex  string
		}{
			{"string/-2", str, "fffffffe"},
			{"string/minInt", str, "80000000 61"},
			{"string/beyond", str, "00000003 6161"},
			{"string/huge", str, "7fffffff 61"},
			{"string/noLength", str, "0000"},
			{"buffer/-2", buf, "fffffffe 61"},
			{"buffer/minInt", buf, "80000000"},
			{"buffer/beyond", buf, "00000002 61"},
			{"buffer/huge", buf, "7fffffff"},
			{"alias/-2", alias, "fffffffe"},
			{"alias/beyond", alias, "00000009 6162"},
			{"strings/-2", strs, "fffffffe"},
			{"strings/countCannotFit", strs, "00000003 00000000 00000000"},
			{"strings/hugeCount", strs, "7fffffff 00000000"},
			{"strings/elementBeyond", strs, "00000001 00000005 6161"},
			{"strings/badElement", strs, "00000002 00000000 fffffffe"},
			{"vector/-2", vec12, "fffffffe"},
			{"vector/countCannotFit", vec12, "00000001 0000000000000000000000"},
			{"vector/hugeCount", vec12, "40000000 000000000000000000000000"},
			{"acl/countCannotFit", acls, "00000000 00000002 00000001 00000000 00000000 00000000"},
			{"acl/badScheme", acls, "00000000 00000001 00000001 fffffffd 00000000 00000000"},
			{"clientInfo/countCannotFit", whoami, "00000002 00000000 00000000"},
		}
	)
	for _, tt := range okCases {
		d := zkproto.NewDecoder(rtHex(t, tt.hex))
		tt.f(d)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Errorf("%s: err %v, %d bytes left", tt.name, d.Err(), d.Remaining())
		}
	}
	for _, tt := range badCases {
		d := zkproto.NewDecoder(rtHex(t, tt.hex))
		got := tt.f(d)
		if d.Err() == nil {
			t.Errorf("%s: decoded %#v without error", tt.name, got)
		}
	}
}

// TestTruncatedRecords decodes every proper prefix of every sample: each
// must fail cleanly (never panic), except a handshake record cut right
// before its optional readOnly byte, which is the older valid form.
func TestTruncatedRecords(t *testing.T) {
	for _, s := range rtSamples() {
		full := zkproto.Marshal(s.rec)
		for n := 0; n < len(full); n++ {
			prefix := bytes.Clone(full[:n])
			got := rtNew(s.rec)
			err := got.Decode(zkproto.NewDecoder(prefix))
			if n == len(full)-1 && rtHasReadOnly(s.rec) {
				if err != nil {
					t.Errorf("%s: %d-byte handshake form: %v", s.name, n, err)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: %d of %d bytes decoded without error: %+v", s.name, n, len(full), got)
			}
		}
	}
}

// rtHasReadOnly reports whether r is a handshake record in its long form.
func rtHasReadOnly(r zkproto.Record) bool {
	switch r := r.(type) {
	case *zkproto.ConnectRequest:
		return r.HasReadOnly
	case *zkproto.ConnectResponse:
		return r.HasReadOnly
	}
	return false
}

func TestUnmarshalTrailingBytes(t *testing.T) {
	b := append(zkproto.Marshal(&zkproto.DeleteRequest{Path: "/a", Version: 1}), 0)
	err := zkproto.Unmarshal(b, &zkproto.DeleteRequest{})
	if err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Fatalf("Unmarshal with a trailing byte: %v", err)
	}
	if err := zkproto.Unmarshal(nil, &zkproto.Empty{}); err != nil {
		t.Fatalf("Unmarshal(Empty): %v", err)
	}
	if err := zkproto.Unmarshal([]byte{0}, &zkproto.Empty{}); err == nil {
		t.Fatal("Unmarshal(Empty) accepted a byte")
	}
}

func rtFrames(payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		b = zkproto.AppendFrame(b, p)
	}
	return b
}

func TestFrameReaderNext(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 bytes: grows past one chunk
	payloads := [][]byte{[]byte("hello"), {}, big, []byte("after big"), bytes.Repeat([]byte{7}, 100)}
	stream := rtFrames(payloads...)
	readers := []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(stream) }},
		{"oneByte", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) }},
		{"halfReads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) }},
		{"dataErr", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) }},
	}
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			fr := zkproto.NewFrameReader(rd.r(), len(big))
			for i, want := range payloads {
				got, err := fr.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("frame %d: %d bytes, want %d", i, len(got), len(want))
				}
				if cap(got) > fr.Max() {
					t.Fatalf("frame %d: buffer cap %d > max %d", i, cap(got), fr.Max())
				}
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		})
	}
}

func TestFrameReaderEOF(t *testing.T) {
	full := rtFrames([]byte("abcdef"))
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"partialHeader", full[:2], io.ErrUnexpectedEOF},
		{"headerOnly", full[:4], io.ErrUnexpectedEOF},
		{"partialBody", full[:7], io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		for _, first := range []bool{false, true} {
			fr := zkproto.NewFrameReader(bytes.NewReader(tt.in), 0)
			var err error
			if first {
				_, _, err = fr.First()
			} else {
				_, err = fr.Next()
			}
			if err != tt.want {
				t.Errorf("%s (First %v): %v, want %v", tt.name, first, err, tt.want)
			}
		}
	}
	// A read error other than EOF passes through.
	boom := errors.New("boom")
	fr := zkproto.NewFrameReader(io.MultiReader(bytes.NewReader(full[:5]), iotest.ErrReader(boom)), 0)
	if _, err := fr.Next(); err != boom {
		t.Errorf("read error: %v, want %v", err, boom)
	}
}

func TestFrameReaderSizeLimits(t *testing.T) {
	const max = 1000
	tests := []struct {
		name   string
		length int32
		ok     bool
	}{
		{"zero", 0, true},
		{"max", max, true},
		{"maxPlusOne", max + 1, false},
		{"minusOne", -1, false},
		{"minInt", -1 << 31, false},
		{"maxInt", 1<<31 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := binary.BigEndian.AppendUint32(nil, uint32(tt.length))
			if tt.ok {
				in = append(in, make([]byte, tt.length)...)
			}
			fr := zkproto.NewFrameReader(bytes.NewReader(in), max)
			got, err := fr.Next()
			if tt.ok {
				if err != nil || len(got) != int(tt.length) {
					t.Fatalf("Next: %d bytes, %v", len(got), err)
				}
				return
			}
			var fse *zkproto.FrameSizeError
			if !errors.As(err, &fse) || fse.Length != tt.length || fse.Max != max || got != nil {
				t.Fatalf("Next: %v, %v; want *FrameSizeError{%d, %d}", got, err, tt.length, max)
			}
			if !strings.Contains(err.Error(), "jute.maxbuffer") {
				t.Errorf("message %q", err)
			}
			// Rejecting the length allocates nothing but the error.
			const runs = 50
			readers := make([]*zkproto.FrameReader, runs+1)
			for i := range readers {
				readers[i] = zkproto.NewFrameReader(bytes.NewReader(in), max)
			}
			i := 0
			allocs := testing.AllocsPerRun(runs, func() {
				_, _ = readers[i].Next()
				i++
			})
			if allocs > 1 {
				t.Errorf("rejecting length %d: %v allocations", tt.length, allocs)
			}
		})
	}
	if got := zkproto.NewFrameReader(nil, 0).Max(); got != zkproto.DefaultMaxBuffer {
		t.Errorf("default max %d", got)
	}
	if got := zkproto.NewFrameReader(nil, -5).Max(); got != zkproto.DefaultMaxBuffer {
		t.Errorf("max for -5: %d", got)
	}
}

// TestFrameReaderAnnouncedLengthDoesNotAllocate announces a frame of the
// largest allowed size and then sends only a few bytes: the reader must
// not allocate the announced size up front.
func TestFrameReaderAnnouncedLengthDoesNotAllocate(t *testing.T) {
	const max = 64 << 20
	in := binary.BigEndian.AppendUint32(nil, max)
	in = append(in, "only this"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := zkproto.NewFrameReader(bytes.NewReader(in), max).Next()
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("Next: %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte announcement with 9 bytes of data", grew, max)
	}
}

func TestFrameReaderBufferReuse(t *testing.T) {
	stream := rtFrames(bytes.Repeat([]byte{1}, 100), []byte{2, 2})
	fr := zkproto.NewFrameReader(bytes.NewReader(stream), 0)
	a, _ := fr.Next()
	b, err := fr.Next()
	if err != nil || !bytes.Equal(b, []byte{2, 2}) {
		t.Fatalf("second frame %x, %v", b, err)
	}
	if &a[0] != &b[0] {
		t.Error("a smaller frame did not reuse the buffer")
	}
}

func TestFirstDetectsFourLetterWords(t *testing.T) {
	want := []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
		"srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash"}
	words := zkproto.FourLetterWords()
	if !reflect.DeepEqual(words, want) {
		t.Fatalf("FourLetterWords() = %v\nwant %v", words, want)
	}
	words[0] = "xxxx"
	if zkproto.FourLetterWords()[0] != "conf" {
		t.Fatal("FourLetterWords returned the package's own array")
	}
	for _, w := range append(want, zkproto.TelnetClose) {
		// stmk is followed by its 8-byte mask: First must not consume it.
		rest := []byte("\x00\x00\x00\x00\x00\x00\x01\x32")
		r := bytes.NewReader(append([]byte(w), rest...))
		frame, word, err := zkproto.NewFrameReader(r, 0).First()
		if err != nil || word != w || frame != nil {
			t.Errorf("First(%q) = %x, %q, %v", w, frame, word, err)
		}
		if r.Len() != len(rest) {
			t.Errorf("First(%q) consumed %d bytes after the word", w, len(rest)-r.Len())
		}
		if got, ok := zkproto.FourLetterWord([4]byte([]byte(w))); !ok || got != w {
			t.Errorf("FourLetterWord(%q) = %q, %v", w, got, ok)
		}
	}
	for _, w := range []string{"RUOK", "ruo\x00", "abcd", "\x00\x00\x00\x2d", "\xff\xf4\xff\xfe"} {
		if got, ok := zkproto.FourLetterWord([4]byte([]byte(w))); ok {
			t.Errorf("FourLetterWord(%q) = %q, true", w, got)
		}
	}
}

func TestFirstPassesFramesThrough(t *testing.T) {
	connect := zkproto.Marshal(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	short := zkproto.Marshal(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	for _, payload := range [][]byte{connect, short} {
		stream := rtFrames(payload, []byte("next"))
		fr := zkproto.NewFrameReader(iotest.OneByteReader(bytes.NewReader(stream)), 0)
		frame, word, err := fr.First()
		if err != nil || word != "" || !bytes.Equal(frame, payload) {
			t.Fatalf("First() = %x, %q, %v; want the %d-byte ConnectRequest", frame, word, err, len(payload))
		}
		next, err := fr.Next()
		if err != nil || string(next) != "next" {
			t.Fatalf("Next after First: %q, %v", next, err)
		}
	}
	// Four bytes that are neither a word nor an acceptable length.
	_, word, err := zkproto.NewFrameReader(strings.NewReader("abcd"), 0).First()
	var fse *zkproto.FrameSizeError
	if word != "" || !errors.As(err, &fse) || fse.Length != 0x61626364 {
		t.Fatalf("First(abcd) = %q, %v", word, err)
	}
}

func TestWriteFrame(t *testing.T) {
	var w bytes.Buffer
	if err := zkproto.WriteFrame(&w, []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if err := zkproto.WriteFrame(&w, nil); err != nil {
		t.Fatal(err)
	}
	if want := rtHex(t, "00000003 78797a 00000000"); !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("wrote %x, want %x", w.Bytes(), want)
	}
	if got := zkproto.AppendFrame([]byte{9}, []byte{1}); !bytes.Equal(got, []byte{9, 0, 0, 0, 1, 1}) {
		t.Fatalf("AppendFrame = %x", got)
	}
}

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"", false},
		{"a", false},
		{"a/b", false},
		{"/", true},
		{"/a", true},
		{"/a/b/c", true},
		{"/zookeeper", true},
		{"/zookeeper/quota", true},
		{"/a/", false},
		{"//", false},
		{"/a//b", false},
		{"/.", false},
		{"/..", false},
		{"/./a", false},
		{"/../a", false},
		{"/a/.", false},
		{"/a/..", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a/.b", true},
		{"/a/..b", true},
		{"/a/b.", true},
		{"/a/b..", true},
		{"/...", true},
		{"/a.b/c", true},
		{"/a\x00b", false},
		{"/\x00", false},
		{"/a\x01", false},
		{"/a\x1f", false},
		{"/a b", true},
		{"/~", true},
		{"/\u007f", false},
		{"/\u0080", false},
		{"/\u009f", false},
		{"/\u00a0", true},
		{"/é/ü", true},
		{"/\ud7ff", true},
		{"/\ue000", false},
		{"/\uf8ff", false},
		{"/\uf900", true},
		{"/\uffef", true},
		{"/\ufff0", false},
		{"/\ufffd", false},
		{"/\uffff", false},
		{"/😀", false},
		{"/\U00010000", false},
		{"/\xff", false},
		{"/a\xc3", false},
	}
	for _, tt := range tests {
		err := zkproto.ValidatePath(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
			continue
		}
		if err == nil {
			continue
		}
		var pe *zkproto.PathError
		if !errors.As(err, &pe) || pe.Path != tt.path || pe.Reason == "" {
			t.Errorf("ValidatePath(%q) = %#v, want a *PathError for the path", tt.path, err)
		}
		if !errors.Is(err, zkproto.ErrBadArguments) {
			t.Errorf("ValidatePath(%q) error does not match ErrBadArguments", tt.path)
		}
	}
}

func TestValidateSequentialPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/app/", true},
		{"/app/lock-", true},
		{"/", true},
		{"/app", true},
		{"", false},
		{"/app//", false},
		{"/app/./", false},
		{"/a\x00/", false},
	}
	for _, tt := range tests {
		if err := zkproto.ValidateSequentialPath(tt.path); (err == nil) != tt.ok {
			t.Errorf("ValidateSequentialPath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
	}
}

func TestPathHelpers(t *testing.T) {
	tests := []struct {
		path, parent, base string
	}{
		{"/", "", ""},
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/b/c", "/a/b", "c"},
		{"/app/", "/app", ""},
		{"a", "", "a"},
	}
	for _, tt := range tests {
		if got := zkproto.ParentPath(tt.path); got != tt.parent {
			t.Errorf("ParentPath(%q) = %q, want %q", tt.path, got, tt.parent)
		}
		if got := zkproto.BaseName(tt.path); got != tt.base {
			t.Errorf("BaseName(%q) = %q, want %q", tt.path, got, tt.base)
		}
		if tt.parent != "" && tt.base != "" {
			if got := zkproto.JoinPath(tt.parent, tt.base); got != tt.path {
				t.Errorf("JoinPath(%q, %q) = %q, want %q", tt.parent, tt.base, got, tt.path)
			}
		}
	}
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		if !zkproto.IsSpecialPath(p) {
			t.Errorf("IsSpecialPath(%q) = false", p)
		}
	}
	for _, p := range []string{"", "/zookeeper/x", "/zookeeper/", "/a"} {
		if zkproto.IsSpecialPath(p) {
			t.Errorf("IsSpecialPath(%q) = true", p)
		}
	}
}

func TestParseCreateMode(t *testing.T) {
	tests := []struct {
		flags                                   int32
		ok                                      bool
		name                                    string
		ephemeral, sequential, container, isTTL bool
	}{
		{-1, false, "", false, false, false, false},
		{0, true, "PERSISTENT", false, false, false, false},
		{1, true, "EPHEMERAL", true, false, false, false},
		{2, true, "PERSISTENT_SEQUENTIAL", false, true, false, false},
		{3, true, "EPHEMERAL_SEQUENTIAL", true, true, false, false},
		{4, true, "CONTAINER", false, false, true, false},
		{5, true, "PERSISTENT_WITH_TTL", false, false, false, true},
		{6, true, "PERSISTENT_SEQUENTIAL_WITH_TTL", false, true, false, true},
		{7, false, "", false, false, false, false},
		{-1 << 31, false, "", false, false, false, false},
	}
	for _, tt := range tests {
		m, err := zkproto.ParseCreateMode(tt.flags)
		if !tt.ok {
			if !errors.Is(err, zkproto.ErrBadArguments) {
				t.Errorf("ParseCreateMode(%d) = %v, %v; want ErrBadArguments", tt.flags, m, err)
			}
			continue
		}
		if err != nil || int32(m) != tt.flags {
			t.Errorf("ParseCreateMode(%d) = %v, %v", tt.flags, m, err)
			continue
		}
		got := []bool{m.IsEphemeral(), m.IsSequential(), m.IsContainer(), m.IsTTL()}
		want := []bool{tt.ephemeral, tt.sequential, tt.container, tt.isTTL}
		if m.String() != tt.name || !reflect.DeepEqual(got, want) {
			t.Errorf("mode %d: %s ephemeral/sequential/container/ttl %v, want %s %v", tt.flags, m, got, tt.name, want)
		}
	}
	if s := zkproto.CreateMode(9).String(); s != "CreateMode(9)" {
		t.Errorf("CreateMode(9).String() = %q", s)
	}
}

func TestValidateTTL(t *testing.T) {
	tests := []struct {
		mode zkproto.CreateMode
		ttl  int64
		ok   bool
	}{
		{zkproto.ModePersistentWithTTL, 0, false},
		{zkproto.ModePersistentWithTTL, -1, false},
		{zkproto.ModePersistentWithTTL, 1, true},
		{zkproto.ModePersistentWithTTL, zkproto.MaxTTL, true},
		{zkproto.ModePersistentWithTTL, zkproto.MaxTTL + 1, false},
		{zkproto.ModePersistentSequentialWithTTL, 1000, true},
		{zkproto.ModePersistentSequentialWithTTL, zkproto.MaxTTL + 1, false},
		{zkproto.ModePersistent, 1000, false},
		{zkproto.ModeEphemeral, 1000, false},
		{zkproto.ModeContainer, 1000, false},
		{zkproto.ModePersistentSequential, -1, false},
	}
	if zkproto.MaxTTL != 1099511627775 {
		t.Fatalf("MaxTTL = %d", zkproto.MaxTTL)
	}
	for _, tt := range tests {
		err := zkproto.ValidateTTL(tt.mode, tt.ttl)
		if tt.ok && err != nil || !tt.ok && !errors.Is(err, zkproto.ErrBadArguments) {
			t.Errorf("ValidateTTL(%v, %d) = %v, want ok=%v", tt.mode, tt.ttl, err, tt.ok)
		}
	}
}

func TestSequentialSuffix(t *testing.T) {
	tests := []struct {
		n    int32
		want string
	}{
		{0, "0000000000"},
		{5, "0000000005"},
		{1234567890, "1234567890"},
		{2147483647, "2147483647"},
		{-5, "-000000005"},
		{-2147483648, "-2147483648"},
	}
	for _, tt := range tests {
		if got := zkproto.SequentialSuffix(tt.n); got != tt.want {
			t.Errorf("SequentialSuffix(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestErrCodes(t *testing.T) {
	tests := []struct {
		code      zkproto.ErrCode
		value     int32
		name, msg string
	}{
		{zkproto.ErrOK, 0, "OK", "ok"},
		{zkproto.ErrSystemError, -1, "SYSTEMERROR", "SystemError"},
		{zkproto.ErrRuntimeInconsistency, -2, "RUNTIMEINCONSISTENCY", "RuntimeInconsistency"},
		{zkproto.ErrDataInconsistency, -3, "DATAINCONSISTENCY", "DataInconsistency"},
		{zkproto.ErrConnectionLoss, -4, "CONNECTIONLOSS", "ConnectionLoss"},
		{zkproto.ErrMarshallingError, -5, "MARSHALLINGERROR", "MarshallingError"},
		{zkproto.ErrUnimplemented, -6, "UNIMPLEMENTED", "Unimplemented"},
		{zkproto.ErrOperationTimeout, -7, "OPERATIONTIMEOUT", "OperationTimeout"},
		{zkproto.ErrBadArguments, -8, "BADARGUMENTS", "BadArguments"},
		{zkproto.ErrUnknownSession, -12, "UNKNOWNSESSION", "Unknown session"},
		{zkproto.ErrNewConfigNoQuorum, -13, "NEWCONFIGNOQUORUM", "NewConfigNoQuorum"},
		{zkproto.ErrReconfigInProgress, -14, "RECONFIGINPROGRESS", "ReconfigInProgress"},
		{zkproto.ErrAPIError, -100, "APIERROR", "APIError"},
		{zkproto.ErrNoNode, -101, "NONODE", "NoNode"},
		{zkproto.ErrNoAuth, -102, "NOAUTH", "NoAuth"},
		{zkproto.ErrBadVersion, -103, "BADVERSION", "BadVersion"},
		{zkproto.ErrNoChildrenForEphemerals, -108, "NOCHILDRENFOREPHEMERALS", "NoChildrenForEphemerals"},
		{zkproto.ErrNodeExists, -110, "NODEEXISTS", "NodeExists"},
		{zkproto.ErrNotEmpty, -111, "NOTEMPTY", "Directory not empty"},
		{zkproto.ErrSessionExpired, -112, "SESSIONEXPIRED", "Session expired"},
		{zkproto.ErrInvalidCallback, -113, "INVALIDCALLBACK", "Invalid callback"},
		{zkproto.ErrInvalidACL, -114, "INVALIDACL", "InvalidACL"},
		{zkproto.ErrAuthFailed, -115, "AUTHFAILED", "AuthFailed"},
		{zkproto.ErrSessionMoved, -118, "SESSIONMOVED", "Session moved"},
		{zkproto.ErrNotReadOnly, -119, "NOTREADONLY", "Not a read-only call"},
		{zkproto.ErrEphemeralOnLocalSession, -120, "EPHEMERALONLOCALSESSION", "Ephemeral node on local session"},
		{zkproto.ErrNoWatcher, -121, "NOWATCHER", "No such watcher"},
		{zkproto.ErrRequestTimeout, -122, "REQUESTTIMEOUT", "Request timeout"},
		{zkproto.ErrReconfigDisabled, -123, "RECONFIGDISABLED", "Reconfig is disabled"},
		{zkproto.ErrSessionClosedRequireSASLAuth, -124, "SESSIONCLOSEDREQUIRESASLAUTH", "Session closed because client failed to authenticate"},
		{zkproto.ErrQuotaExceeded, -125, "QUOTAEXCEEDED", "Quota has exceeded"},
		{zkproto.ErrThrottledOp, -127, "THROTTLEDOP", "Op throttled due to high load"},
	}
	listed := map[zkproto.ErrCode]bool{}
	for _, tt := range tests {
		listed[tt.code] = true
		if int32(tt.code) != tt.value {
			t.Errorf("%s = %d, want %d", tt.name, tt.code, tt.value)
		}
		if tt.code.Name() != tt.name || tt.code.Message() != tt.msg || !tt.code.Known() {
			t.Errorf("code %d: Name %q Message %q Known %v; want %q %q", tt.value, tt.code.Name(), tt.code.Message(), tt.code.Known(), tt.name, tt.msg)
		}
		if got, want := tt.code.Error(), "KeeperErrorCode = "+tt.msg; got != want {
			t.Errorf("code %d: Error() = %q, want %q", tt.value, got, want)
		}
	}
	for c := zkproto.ErrCode(-200); c <= 10; c++ {
		if !listed[c] && c.Known() {
			t.Errorf("code %d is Known but not in the test table", c)
		}
	}
	if got := zkproto.ErrNoNode.Error(); got != "KeeperErrorCode = NoNode" {
		t.Errorf("ErrNoNode.Error() = %q", got)
	}
	if got := zkproto.ErrNotEmpty.ForPath("/a"); got != "KeeperErrorCode = Directory not empty for /a" {
		t.Errorf("ForPath = %q", got)
	}
	unknown := zkproto.ErrCode(-9)
	if unknown.Known() || unknown.Name() != "UNKNOWN(-9)" || unknown.Message() != "Unknown error -9" {
		t.Errorf("code -9: Known %v Name %q Message %q", unknown.Known(), unknown.Name(), unknown.Message())
	}
	var err error = zkproto.ErrNoNode
	if !errors.Is(err, zkproto.ErrNoNode) || errors.Is(err, zkproto.ErrNoAuth) {
		t.Error("errors.Is does not compare codes")
	}
}

func TestOpCodes(t *testing.T) {
	tests := []struct {
		op    zkproto.OpCode
		name  string
		write bool
	}{
		{zkproto.OpCreate, "create", true},
		{zkproto.OpGetData, "getData", false},
		{zkproto.OpCheck, "check", true},
		{zkproto.OpMulti, "multi", true},
		{zkproto.OpMultiRead, "multiRead", false},
		{zkproto.OpSync, "sync", false},
		{zkproto.OpCreateTTL, "createTTL", true},
		{zkproto.OpDeleteContainer, "deleteContainer", true},
		{zkproto.OpCreateSession, "createSession", true},
		{zkproto.OpCloseSession, "closeSession", true},
		{zkproto.OpPing, "ping", false},
		{zkproto.OpAddWatch, "addWatch", false},
		{zkproto.OpCode(999), "op(999)", false},
	}
	for _, tt := range tests {
		if tt.op.String() != tt.name || tt.op.IsWrite() != tt.write {
			t.Errorf("op %d: %q write %v, want %q %v", tt.op, tt.op, tt.op.IsWrite(), tt.name, tt.write)
		}
	}
}

// TestDecodeAllocations pins the allocations of decoding typical requests
// from the registry: the record itself, then one per string, buffer and
// vector that is not a well-known ACL scheme or id.
func TestDecodeAllocations(t *testing.T) {
	tests := []struct {
		name string
		op   zkproto.OpCode
		rec  zkproto.Record
		max  float64
	}{
		{"getData", zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/a/b", Watch: true}, 2},
		{"exists", zkproto.OpExists, &zkproto.ExistsRequest{Path: "/a/b"}, 2},
		{"delete", zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/a/b", Version: -1}, 2},
		{"setData", zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: []byte("x")}, 3},
		{"createOpenACL", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", Data: []byte("x"), ACL: zkproto.OpenACLUnsafe()}, 4},
		{"multi2", zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpCheck, Request: &zkproto.CheckVersionRequest{Path: "/a"}},
			{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: "/a/b"}},
		}}, 6},
	}
	for _, tt := range tests {
		body := zkproto.Marshal(tt.rec)
		var d zkproto.Decoder
		allocs := testing.AllocsPerRun(100, func() {
			rec, _ := zkproto.NewRequest(tt.op)
			d.Reset(body)
			if err := rec.Decode(&d); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > tt.max {
			t.Errorf("%s: %v allocations to decode, want at most %v", tt.name, allocs, tt.max)
		}
	}
}
