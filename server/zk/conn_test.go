package zk

import (
	"context"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/zkproto"
)

// startDoor runs a one-node core with this door alone (no admin, no
// wiring): the seam a front door is built on.
func startDoor(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := ln.Addr().String()
	ln.Close()
	cfg := config.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: peer, AdminDisabled: true}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	n := node.New(cfg, log)
	s := New(cfg, n, log)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(node.Addresses{Client: s.Addr()}); err != nil {
		t.Fatal(err)
	}
	s.Serve()
	t.Cleanup(func() { s.Close(); n.Stop(); s.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeFrame sends records as one frame.
func writeFrame(t testing.TB, nc net.Conn, records ...zkproto.Record) {
	t.Helper()
	var e zkproto.Encoder
	off := e.StartFrame()
	for _, r := range records {
		r.Encode(&e)
	}
	e.FinishFrame(off)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// dialSession connects and creates a session with a 30 s timeout.
func dialSession(t testing.TB, s *Server) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	writeFrame(t, nc, &zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	frame, err := zkproto.NewFrameReader(nc, 1<<20).Next()
	var resp zkproto.ConnectResponse
	if err != nil || zkproto.Unmarshal(frame, &resp) != nil || resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	return nc
}

// sendCloseSession sends closeSession and waits for its reply.
func sendCloseSession(t *testing.T, nc net.Conn) {
	t.Helper()
	writeFrame(t, nc, &zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCloseSession})
	frame, err := zkproto.NewFrameReader(nc, 1<<20).Next()
	var h zkproto.ReplyHeader
	if err != nil || zkproto.Unmarshal(frame, &h) != nil || h.Err != zkproto.ErrOK {
		t.Fatalf("closeSession: %+v %v", h, err)
	}
}

// A closed connection must be garbage as soon as it is closed, not held
// (with its read buffer) by the timer that bounds a graceful close until
// the session timeout passes: under connection churn that was every
// connection of the last 30 s, tens of KB each.
func TestClosedConnectionIsReleased(t *testing.T) {
	s := startDoor(t)
	for _, closeSession := range []bool{true, false} {
		nc := dialSession(t, s) // a 30 s session timeout
		conns := s.snapshotConns()
		if len(conns) != 1 {
			t.Fatalf("%d connections registered, want 1", len(conns))
		}
		released := make(chan struct{})
		runtime.AddCleanup(conns[0], func(ch chan struct{}) { close(ch) }, released)
		conns = nil
		if closeSession {
			sendCloseSession(t, nc)
		}
		nc.Close()
		deadline := time.Now().Add(10 * time.Second)
		for done := false; !done; {
			runtime.GC()
			select {
			case <-released:
				done = true
			case <-time.After(20 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("closeSession %v: the closed connection is still referenced after 10 s", closeSession)
				}
			}
		}
	}
}
