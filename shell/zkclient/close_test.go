package zkclient

import (
	"net"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A Close that overtakes the first connection attempt (the handshake still
// in flight) returns promptly and ends the session the attempt then gets,
// instead of leaving the client reading pings forever.
func TestCloseDuringHandshakeEndsTheNewSession(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := make(chan struct{})
	gotConnect := make(chan struct{})
	closedSession := make(chan bool, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		fr := zkproto.NewFrameReader(nc, zkproto.DefaultMaxBuffer)
		if _, err := fr.Next(); err != nil { // the ConnectRequest
			return
		}
		close(gotConnect)
		<-release // answer only after the client's Close has run
		resp := zkproto.ConnectResponse{TimeOut: 30000, SessionID: 0x1234, Passwd: make([]byte, zkproto.PasswordLength)}
		if zkproto.WriteFrame(nc, zkproto.Marshal(&resp)) != nil {
			return
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			frame, err := fr.Next()
			if err != nil {
				closedSession <- false
				return
			}
			var h zkproto.RequestHeader
			if h.Decode(zkproto.NewDecoder(frame)) == nil && h.Type == zkproto.OpCloseSession {
				var e zkproto.Encoder
				off := e.StartFrame()
				(&zkproto.ReplyHeader{Xid: h.Xid}).Encode(&e)
				e.FinishFrame(off)
				_, _ = nc.Write(e.Bytes())
				closedSession <- true
				return
			}
		}
	}()
	c, err := New(Options{Servers: []string{ln.Addr().String()}, SessionTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gotConnect:
	case <-time.After(10 * time.Second):
		t.Fatal("no ConnectRequest")
	}
	closed := make(chan struct{})
	go func() {
		_ = c.Close()
		close(closed)
	}()
	// Close finds no connection yet; once it has marked the client closed,
	// let the handshake finish behind it.
	for deadline := time.Now().Add(10 * time.Second); c.State() != StateClosed; {
		if time.Now().After(deadline) {
			t.Fatal("Close did not mark the client closed")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: the client kept the connection it made after Close")
	}
	select {
	case ok := <-closedSession:
		if !ok {
			t.Fatal("the connection ended without a closeSession: the session would linger until it expires")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server saw neither a closeSession nor the connection end")
	}
}
