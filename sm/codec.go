package sm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errShort is returned by the decoder when the input ends early.
var errShort = errors.New("truncated input")

// enc is a tiny append-only binary encoder. All integers are varints, so the
// encodings stay compact; strings and byte slices are length-prefixed. A byte
// slice may be nil, which is encoded as length -1 and decodes back to nil, so
// ZooKeeper's null data and empty data stay distinct.
type enc struct{ b []byte }

func (e *enc) u8(v byte)      { e.b = append(e.b, v) }
func (e *enc) uvar(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) svar(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string)   { e.uvar(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) raw(p []byte)   { e.b = append(e.b, p...) }
func (e *enc) boolean(v bool) { e.u8(boolByte(v)) }
func (e *enc) bytesOrNil(p []byte) {
	if p == nil {
		e.svar(-1)
		return
	}
	e.svar(int64(len(p)))
	e.b = append(e.b, p...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// dec is the matching decoder. It records the first error and returns zero
// values afterwards, so callers check err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dec) u8() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail(errShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) boolean() bool { return d.u8() != 0 }

func (d *dec) uvar() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) svar() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i32() int32 {
	v := d.svar()
	if v < -1<<31 || v > 1<<31-1 {
		d.fail(fmt.Errorf("int32 out of range: %d", v))
		return 0
	}
	return int32(v)
}

func (d *dec) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// peekSvar returns the next signed varint without consuming it (0 when
// there is none).
func (d *dec) peekSvar() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		return 0
	}
	return v
}

func (d *dec) str() string { return string(d.take(d.uvar())) }

// bytesOrNil returns a copy (never aliasing the input) or nil for null.
func (d *dec) bytesOrNil() []byte {
	n := d.svar()
	if d.err != nil {
		return nil
	}
	if n == -1 {
		return nil
	}
	if n < 0 {
		d.fail(fmt.Errorf("negative length %d", n))
		return nil
	}
	p := d.take(uint64(n))
	if d.err != nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}

// count reads a collection length and bounds it by the remaining input (each
// element takes at least one byte), so corrupt input cannot make us allocate
// unbounded memory.
func (d *dec) count() int {
	n := d.uvar()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail(fmt.Errorf("count %d exceeds remaining %d bytes", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.b)))
	}
	return d.err
}
