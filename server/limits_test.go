package server

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// rawConn dials without a handshake.
func rawConn(t testing.TB, s *Server) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// closedWithin reports whether the peer closed nc (EOF or reset, nothing
// read) within d.
func closedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := nc.Read(b[:])
	ne, isNet := err.(net.Error)
	return err != nil && !(isNet && ne.Timeout())
}

// maxClientCnxns: the connection over the per-address limit is accepted
// and closed at once, before anything is read (ZooKeeper 3.8 observed);
// once one closes, a new one is admitted.
func TestMaxClientCnxnsPerAddress(t *testing.T) {
	s := startTestServer(t, func(c *Config) { c.MaxClientCnxns = 3 })
	var open []*testClient
	for i := 0; i < 3; i++ {
		open = append(open, dial(t, s))
	}
	over := rawConn(t, s)
	if !closedWithin(over, 5*time.Second) {
		t.Fatal("the 4th connection from one address was not closed")
	}
	open[0].nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc := rawConn(t, s)
		if !closedWithin(nc, 200*time.Millisecond) {
			break // admitted: still open, waiting for a ConnectRequest
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection admitted after one of the three closed")
		}
	}
}

// The global connection throttle takes a token per ConnectRequest (as
// ZooKeeper's, not per TCP connection): past the tokens the connection is
// closed without a ConnectResponse, and the node keeps serving the
// sessions it has.
func TestConnectionThrottleRefusesPastTokens(t *testing.T) {
	s := startTestServer(t, func(c *Config) {
		c.Limits.ConnectionThrottleTokens = 5
		c.Limits.ConnectionThrottleFillTime = time.Hour // no refill during the test
	})
	for i := 0; i < 10; i++ { // connections without a ConnectRequest take no token
		rawConn(t, s).Close()
	}
	var admitted []*testClient
	for i := 0; i < 5; i++ {
		admitted = append(admitted, dial(t, s))
	}
	for i := 0; i < 3; i++ {
		nc := rawConn(t, s)
		var e zkproto.Encoder
		off := e.StartFrame()
		(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
		e.FinishFrame(off)
		if _, err := nc.Write(e.Bytes()); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(nc, 5*time.Second) {
			t.Fatalf("ConnectRequest %d past the tokens was answered", 6+i)
		}
	}
	for _, c := range admitted {
		x := c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
		if h, _ := c.reply(); h.Xid != x || h.Err != zkproto.ErrOK {
			t.Fatalf("an admitted client stopped being served: %+v", h)
		}
	}
}

// A connection that never completes its ConnectRequest is closed after
// nio.sessionlessCnxnTimeout: silent, or stalled half way (slowloris).
func TestSessionlessConnectionsTimeOut(t *testing.T) {
	s := startTestServer(t, func(c *Config) { c.Limits.SessionlessTimeout = 300 * time.Millisecond })
	silent := rawConn(t, s)
	half := rawConn(t, s)
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
	e.FinishFrame(off)
	if _, err := half.Write(e.Bytes()[:10]); err != nil {
		t.Fatal(err)
	}
	for name, nc := range map[string]net.Conn{"silent": silent, "half a ConnectRequest": half} {
		if !closedWithin(nc, 10*time.Second) {
			t.Errorf("%s connection still open after the sessionless timeout", name)
		}
	}
	// A connection with a session is not bound by it.
	c := dial(t, s)
	time.Sleep(600 * time.Millisecond)
	x := c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if h, _ := c.reply(); h.Xid != x {
		t.Fatalf("a session's connection was closed by the sessionless timeout: %+v", h)
	}
}

// Under overload with request_throttle_max_requests, requests queue: every
// one is answered, in order, none fails, and no more than the limit are
// processed at once.
func TestRequestThrottleQueuesUnderOverload(t *testing.T) {
	const limit = 3
	s := startTestServer(t, func(c *Config) { c.Limits.RequestThrottleMaxRequests = limit })
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if o := s.zk.Outstanding(); o > peak.Load() {
				peak.Store(o)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	const clients, n = 8, 150
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for k := 0; k < clients; k++ {
		c := dial(t, s)
		wg.Add(1)
		go func(c *testClient) {
			defer wg.Done()
			go func() {
				for i := 0; i < n; i++ {
					if i%3 == 0 {
						c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
					} else {
						c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/rt%d-%d", c.sid, i), Data: make([]byte, 100), ACL: zkproto.OpenACLUnsafe()})
					}
				}
			}()
			for i := 1; i <= n; i++ {
				if h, _ := c.reply(); h.Xid != int32(i) || h.Err != zkproto.ErrOK {
					errs <- fmt.Sprintf("reply %d: %+v", i, h)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if p := peak.Load(); p > limit || p == 0 {
		t.Fatalf("peak requests in process %d, want 1..%d", p, limit)
	}
	t.Logf("%d requests from %d pipelining clients, peak in process %d (limit %d)", clients*n, clients, peak.Load(), limit)
}

// Requests sent in the same write as the ConnectRequest (already in the
// small pre-handshake buffer) are served, in order.
func TestRequestsPipelinedWithTheConnectRequest(t *testing.T) {
	s := startTestServer(t, nil)
	nc := rawConn(t, s)
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
	e.FinishFrame(off)
	for xid := int32(1); xid <= 20; xid++ {
		off := e.StartFrame()
		(&zkproto.RequestHeader{Xid: xid, Type: zkproto.OpExists}).Encode(&e)
		(&zkproto.ExistsRequest{Path: "/zookeeper"}).Encode(&e)
		e.FinishFrame(off)
	}
	if _, err := nc.Write(e.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	fr := zkproto.NewFrameReader(nc, 1<<20)
	if _, err := fr.Next(); err != nil {
		t.Fatalf("ConnectResponse: %v", err)
	}
	for xid := int32(1); xid <= 20; xid++ {
		f, err := fr.Next()
		if err != nil {
			t.Fatalf("reply %d: %v", xid, err)
		}
		var h zkproto.ReplyHeader
		if err := h.Decode(zkproto.NewDecoder(f)); err != nil || h.Xid != xid || h.Err != zkproto.ErrOK {
			t.Fatalf("reply %d: %+v %v", xid, h, err)
		}
	}
}
