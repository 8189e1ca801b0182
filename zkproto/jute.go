package zkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer means a record needed more bytes than its frame holds.
var ErrShortBuffer = errors.New("zkproto: record truncated")

// Encoder appends jute-encoded values to a byte slice. The zero value is
// ready to use; Reset keeps the allocated buffer for reuse.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf[:0].
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf[:0]} }

// Bytes returns the encoded bytes so far.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Bool writes a jute boolean (one byte, 0 or 1).
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Int writes a 4-byte big-endian int.
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long writes an 8-byte big-endian long.
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// String writes a ustring: length then UTF-8 bytes.
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Buffer writes a jute buffer; a nil slice is written as null (length -1).
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// Strings writes a vector<ustring>; a nil slice is written as null (-1).
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Raw appends bytes as they are (no length prefix).
func (e *Encoder) Raw(b []byte) { e.buf = append(e.buf, b...) }

// Decoder reads jute-encoded values from a byte slice. Errors are sticky:
// after the first failure every read returns a zero value and Err reports
// the failure, so record decoders can read all fields and check once.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder over b. Decoded []byte values alias b only
// where documented (see BufferAlias); strings are always copies.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset points the decoder at b and clears its error.
func (d *Decoder) Reset(b []byte) { d.buf, d.off, d.err = b, 0, nil }

// Err returns the first decoding error, if any.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Fail records err as the decoder's error unless one is already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.err = ErrShortBuffer
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Bool reads a jute boolean; any non-zero byte is true.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// Int reads a 4-byte big-endian int.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads an 8-byte big-endian long.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// length reads a length prefix. It returns -1 for null and fails on any
// other negative value or on a length larger than what remains, so a
// hostile length never causes an allocation.
func (d *Decoder) length(what string) int {
	n := d.Int()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || int(n) > d.Remaining() {
		d.err = fmt.Errorf("zkproto: unreasonable %s length %d (%d bytes left)", what, n, d.Remaining())
		return 0
	}
	return int(n)
}

// String reads a ustring; null reads as "".
func (d *Decoder) String() string {
	n := d.length("string")
	if n <= 0 {
		return ""
	}
	return string(d.take(n))
}

// NullableString reads a ustring and reports whether it was present: a
// null string (length -1) is ok=false, which ZooKeeper tells from "".
func (d *Decoder) NullableString() (s string, ok bool) {
	n := d.length("string")
	if n < 0 || d.err != nil {
		return "", false
	}
	if n == 0 {
		return "", true
	}
	return string(d.take(n)), true
}

// commonString reads a ustring like String, but returns a shared string
// for the ACL schemes and ids nearly every request carries, so decoding
// them does not allocate.
func (d *Decoder) commonString() string {
	n := d.length("string")
	if n <= 0 {
		return ""
	}
	b := d.take(n)
	switch string(b) { // compared without converting
	case "world":
		return "world"
	case "anyone":
		return "anyone"
	case "auth":
		return "auth"
	case "digest":
		return "digest"
	case "ip":
		return "ip"
	}
	return string(b)
}

// Buffer reads a jute buffer into a fresh slice: nil for null, a non-nil
// empty slice for length 0.
func (d *Decoder) Buffer() []byte {
	n := d.length("buffer")
	if d.err != nil || n < 0 {
		return nil
	}
	b := d.take(n)
	out := make([]byte, n)
	copy(out, b)
	return out
}

// BufferAlias reads a jute buffer without copying: the result aliases the
// decoder's input and is valid only as long as that input is.
func (d *Decoder) BufferAlias() []byte {
	n := d.length("buffer")
	if d.err != nil || n < 0 {
		return nil
	}
	b := d.take(n)
	return b[:n:n]
}

// VectorLen reads a vector's element count: -1 for null. minElemSize is
// the smallest encoding of one element; the count is rejected if that many
// elements cannot fit in the bytes that remain.
func (d *Decoder) VectorLen(minElemSize int) int {
	n := d.Int()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || (minElemSize > 0 && int64(n)*int64(minElemSize) > int64(d.Remaining())) {
		d.err = fmt.Errorf("zkproto: unreasonable vector length %d (%d bytes left)", n, d.Remaining())
		return 0
	}
	return int(n)
}

// Strings reads a vector<ustring>: nil for null.
func (d *Decoder) Strings() []string {
	n := d.VectorLen(4)
	if d.err != nil || n < 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.String()
	}
	if d.err != nil {
		return nil
	}
	return out
}

// Record is a jute record.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder) error
}

// Marshal encodes r into a fresh byte slice.
func Marshal(r Record) []byte {
	var e Encoder
	r.Encode(&e)
	return e.Bytes()
}

// Unmarshal decodes b into r and requires every byte to be consumed.
func Unmarshal(b []byte, r Record) error {
	d := NewDecoder(b)
	if err := r.Decode(d); err != nil {
		return err
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("zkproto: %d trailing bytes after %T", d.Remaining(), r)
	}
	return nil
}
