//go:build unix

package zk

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// peekFirstByte waits up to timeout for the connection's first byte and
// returns it without consuming it (MSG_PEEK), so the connection stays a
// plain *net.TCPConn for plaintext clients of a unified port.
func peekFirstByte(nc net.Conn, timeout time.Duration) (byte, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errors.New("connection has no socket to peek at")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	_ = nc.SetReadDeadline(time.Now().Add(timeout))
	defer nc.SetReadDeadline(time.Time{})
	var b [1]byte
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		return !errors.Is(perr, unix.EAGAIN)
	})
	if err != nil {
		return 0, err
	}
	if perr != nil {
		return 0, perr
	}
	if n == 0 {
		return 0, io.EOF
	}
	return b[0], nil
}

// peekBytes peeks up to len(b) bytes waiting on the socket (at least one,
// waiting until deadline) without consuming them.
func peekBytes(nc net.Conn, b []byte, deadline time.Time) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errors.New("connection has no socket to peek at")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	_ = nc.SetReadDeadline(deadline)
	defer nc.SetReadDeadline(time.Time{})
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = unix.Recvfrom(int(fd), b, unix.MSG_PEEK)
		return !errors.Is(perr, unix.EAGAIN)
	})
	if err != nil {
		return 0, err
	}
	if perr != nil {
		return 0, perr
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
