package zk

import (
	"strings"
	"unicode/utf8"
)

// javaUTF8 decodes b as Java's new String(b, UTF_8) does: an ill-formed
// sequence becomes one U+FFFD for its longest valid-looking prefix (Go's
// conversion replaces byte by byte, which differs for truncated sequences),
// and an encoded surrogate becomes one U+FFFD.
func javaUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out.WriteRune(r)
			i += n
			continue
		}
		out.WriteRune(utf8.RuneError)
		i += 1 + validContinuations(b[i:])
	}
	return out.String()
}

// validContinuations counts the bytes after b[0] that still extend a
// well-formed prefix of a multi-byte sequence (0 if b[0] is no lead byte).
func validContinuations(b []byte) int {
	var need int
	lo, hi := byte(0x80), byte(0xbf) // range allowed for the second byte
	switch c := b[0]; {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c >= 0xe0 && c <= 0xef:
		// Java decodes ED A0..BF xx (a surrogate) as one U+FFFD for all
		// three bytes, so ED is not narrowed here.
		need = 2
		if c == 0xe0 {
			lo = 0xa0
		}
	case c >= 0xf0 && c <= 0xf4:
		need = 3
		if c == 0xf0 {
			lo = 0x90
		} else if c == 0xf4 {
			hi = 0x8f
		}
	default:
		return 0
	}
	n := 0
	for n < need && 1+n < len(b) {
		c := b[1+n]
		if n == 0 && (c < lo || c > hi) || n > 0 && (c < 0x80 || c > 0xbf) {
			break
		}
		n++
	}
	return n
}
