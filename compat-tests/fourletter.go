package compattests

import (
	"errors"
	"io"
	"net"
	"strings"
	"time"
)

// fourLetter opens a fresh connection, writes raw (normally a 4-letter
// word), and reads until the server closes. closed is false when the
// server kept the connection open past the deadline.
func fourLetter(addr string, raw []byte) (out string, closed bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return "", false, err
	}
	defer nc.Close()
	if _, err := nc.Write(raw); err != nil {
		return "", false, err
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(nc)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return string(b), false, nil
	}
	// EOF, or a reset after the answer: closed either way
	return string(b), true, nil
}

// nodeMode is the Mode line of a node's srvr output ("" if none).
func nodeMode(addr string) string {
	out, _, err := fourLetter(addr, []byte("srvr"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}
