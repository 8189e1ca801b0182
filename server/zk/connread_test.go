package zk

import (
	"bytes"
	"io"
	"testing"
)

// chunkReader returns its chunks one per Read, as a socket returns what
// has arrived.
type chunkReader struct{ chunks [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// The reader keeps the input's bytes in order across its small and large
// buffers, borrows the large one only while a read fills its buffer, and
// holds none once a short read has been consumed.
func TestConnReaderBorrowsOnlyWhileInputStreams(t *testing.T) {
	burst := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes
	src := &chunkReader{chunks: [][]byte{[]byte("hello"), burst, []byte("tail")}}
	cr := newConnReader(src)
	var got []byte
	buf := make([]byte, 7)
	sawBig := false
	for {
		n, err := cr.Read(buf)
		got = append(got, buf[:n]...)
		sawBig = sawBig || cr.big != nil
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 5 && cr.big != nil {
			t.Fatal("a short first read borrowed the large buffer")
		}
	}
	want := append(append([]byte("hello"), burst...), "tail"...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d in order", len(got), len(want))
	}
	if !sawBig {
		t.Fatal("an 80,000-byte burst was read through the 512-byte buffer")
	}
	if cr.big != nil {
		t.Fatal("the large buffer is held after the input ended")
	}
}
