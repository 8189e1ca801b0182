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

// peekBytes: selecting a tenant by TLS server name needs MSG_PEEK too.
func peekBytes(net.Conn, []byte, time.Time) (int, error) {
	return 0, errors.New("selecting a tenant by TLS server name is supported on Unix systems only")
}
