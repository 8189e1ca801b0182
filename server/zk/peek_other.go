//go:build !unix

package zk

import (
	"errors"
	"net"
	"time"
)

// peekFirstByte: port unification needs MSG_PEEK, which only Unix
// systems are built with here.
func peekFirstByte(net.Conn, time.Duration) (byte, error) {
	return 0, errors.New("client.portUnification is supported on Unix systems only")
}
