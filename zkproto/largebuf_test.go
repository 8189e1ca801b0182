package zkproto

import (
	"bytes"
	"runtime"
	"testing"
)

// A connection that read one large frame must not keep its buffer while
// it waits for the next (small) one, and the large frame must arrive
// whole.
func TestFrameReaderDropsALargeBuffer(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 1<<20)
	small := []byte("ping")
	var stream []byte
	stream = AppendFrame(stream, big)
	stream = AppendFrame(stream, small)
	stream = AppendFrame(stream, small)
	f := NewFrameReader(bytes.NewReader(stream), 2<<20)
	got, err := f.Next()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("large frame: %d bytes, %v", len(got), err)
	}
	if c := cap(f.buf); c < 1<<20 || c > 1<<20+frameChunk {
		t.Fatalf("a 1 MiB frame was read into a buffer of %d bytes", c)
	}
	for i := 0; i < 2; i++ {
		got, err = f.Next()
		if err != nil || !bytes.Equal(got, small) {
			t.Fatalf("small frame %d: %q, %v", i, got, err)
		}
		if c := cap(f.buf); c > frameKeep {
			t.Fatalf("after a small frame the reader holds %d bytes (keeps at most %d)", c, frameKeep)
		}
	}
}

// A 1 MiB getData reply is copied once into its frame: one large
// allocation, the Stat after the value fitting in its rounding (the copies
// of a large get are counted in docs/performance.md).
func TestEncoderGrowsOnceForALargeBuffer(t *testing.T) {
	data := make([]byte, 1<<20)
	resp := &GetDataResponse{Data: data, Stat: Stat{Version: 3}}
	encode := func() []byte {
		var e Encoder
		off := e.StartFrame()
		(&ReplyHeader{Xid: 1, Zxid: 2}).Encode(&e)
		resp.Encode(&e)
		e.FinishFrame(off)
		return e.Bytes()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	frame := encode()
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20+64<<10 {
		t.Fatalf("encoding a 1 MiB getData reply allocated %d bytes", n)
	}
	var got GetDataResponse
	d := NewDecoder(frame[4+16:])
	if err := got.Decode(d); err != nil || len(got.Data) != len(data) || got.Stat.Version != 3 {
		t.Fatalf("decoded %d bytes, version %d, %v", len(got.Data), got.Stat.Version, err)
	}
}

// Large frames of varying sizes one after another, their buffers going
// through the shared pool: each arrives whole and as sent.
func TestFrameReaderLargeFramesInARow(t *testing.T) {
	sizes := []int{1 << 20, 300 << 10, 1 << 20, 10, 700 << 10, 200 << 10, 1<<20 + 5}
	var stream []byte
	for i, n := range sizes {
		stream = AppendFrame(stream, bytes.Repeat([]byte{byte(i + 1)}, n))
	}
	f := NewFrameReader(bytes.NewReader(stream), 2<<20)
	for i, n := range sizes {
		got, err := f.Next()
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, n)) {
			t.Fatalf("frame %d (%d bytes): got %d bytes, %v", i, n, len(got), err)
		}
	}
	for _, n := range []int{0, 64 << 10, 128<<10 - 1, 128 << 10, 200 << 10, 256 << 10, 1 << 30} {
		if k := largeClass(n); k >= 0 && n < frameKeep<<(k+1) {
			t.Fatalf("largeClass(%d) = %d: its buffers are at least %d bytes", n, k, frameKeep<<(k+1))
		}
	}
}
