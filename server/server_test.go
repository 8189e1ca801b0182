package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/zkproto"
)

// startTestServer runs a one-node server on free loopback ports.
func startTestServer(t testing.TB, mod func(*Config)) *Server {
	t.Helper()
	// The peer port is probed free, then bound by Start: another test may
	// take it in between, so a bind failure is retried on a fresh port.
	for attempt := 1; ; attempt++ {
		cfg := Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: freeAddr(t), AdminDisabled: true,
			FourLetterWords: []string{"*"}}
		if mod != nil {
			mod(&cfg)
		}
		log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
		s, err := New(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = s.Start(ctx)
		cancel()
		if err != nil && attempt < 5 && strings.Contains(err.Error(), "address already in use") {
			continue // Open closed what it had opened
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		return s
	}
}

// testClient is a minimal raw client: handshake, send, read frames.
type testClient struct {
	t   testing.TB
	nc  net.Conn
	fr  *zkproto.FrameReader
	xid int32
	sid int64
}

func dial(t testing.TB, s *Server) *testClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	t.Cleanup(func() { nc.Close() })
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(c.next(), &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	c.sid = resp.SessionID
	return c
}

func (c *testClient) write(records ...zkproto.Record) {
	c.t.Helper()
	var e zkproto.Encoder
	off := e.StartFrame()
	for _, r := range records {
		r.Encode(&e)
	}
	e.FinishFrame(off)
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(e.Bytes()); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *testClient) send(op zkproto.OpCode, body zkproto.Record) int32 {
	c.xid++
	h := &zkproto.RequestHeader{Xid: c.xid, Type: op}
	if body == nil {
		c.write(h)
	} else {
		c.write(h, body)
	}
	return c.xid
}

func (c *testClient) next() []byte {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := c.fr.Next()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return append([]byte(nil), f...)
}

// reply reads the next non-notification reply header and its body bytes.
func (c *testClient) reply() (zkproto.ReplyHeader, *zkproto.Decoder) {
	c.t.Helper()
	for {
		d := zkproto.NewDecoder(c.next())
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			c.t.Fatal(err)
		}
		if h.Xid != zkproto.XidNotification {
			return h, d
		}
	}
}

// closed reports whether the server closed the connection within d.
func (c *testClient) closed(d time.Duration) bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	for {
		if _, err := c.fr.Next(); err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}

func TestPipelinedRequestsReplyInOrderAndReadYourWrites(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	const n = 300
	var xids []int32
	xids = append(xids, c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/p", ACL: zkproto.OpenACLUnsafe()}))
	for i := 0; i < n; i++ {
		xids = append(xids, c.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/p", Data: []byte(fmt.Sprint(i)), Version: -1}))
		xids = append(xids, c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/p"}))
	}
	for i, want := range xids {
		h, d := c.reply()
		if h.Xid != want || h.Err != zkproto.ErrOK {
			t.Fatalf("reply %d: xid %d err %v, want xid %d", i, h.Xid, h.Err, want)
		}
		if i > 0 && i%2 == 0 { // a getData right after setData(i/2-1)
			var r zkproto.GetDataResponse
			if err := r.Decode(d); err != nil || string(r.Data) != fmt.Sprint(i/2-1) || r.Stat.Version != int32(i/2) {
				t.Fatalf("read %d saw %q v%d: reads must see the session's earlier writes", i, r.Data, r.Stat.Version)
			}
		}
	}
}

func TestBackpressureNeverDropsRequests(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	// More requests than one connection may have in flight, written before
	// any reply is read: the server must stop reading, not drop.
	const n = zk.MaxPendingPerConn * 3
	go func() {
		for i := 0; i < n; i++ {
			c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
		}
	}()
	for i := 1; i <= n; i++ {
		h, _ := c.reply()
		if h.Xid != int32(i) {
			t.Fatalf("reply %d has xid %d", i, h.Xid)
		}
	}
}

// A request whose record does not decode is MarshallingError, as in
// ZooKeeper, and the connection stays usable.
func TestTruncatedBodyIsMarshallingError(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	c.write(&zkproto.RequestHeader{Xid: 1, Type: zkproto.OpGetData}, &zkproto.Empty{})
	if h, _ := c.reply(); h.Xid != 1 || h.Err != zkproto.ErrMarshallingError {
		t.Fatalf("truncated getData: %+v", h)
	}
	x := c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if h, _ := c.reply(); h.Xid != x || h.Err != zkproto.ErrOK {
		t.Fatalf("after a truncated request: %+v", h)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	s := startTestServer(t, nil)
	healthy := dial(t, s)
	cases := map[string]func(c *testClient){
		"oversize frame": func(c *testClient) {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], zkproto.DefaultMaxBuffer+1)
			c.nc.Write(b[:])
		},
		"negative length": func(c *testClient) { c.nc.Write([]byte{0xff, 0xff, 0xff, 0xf0}) },
		"unknown opcode":  func(c *testClient) { c.send(999, nil) },
		"check outside multi": func(c *testClient) {
			c.send(zkproto.OpCheck, &zkproto.CheckVersionRequest{Path: "/", Version: 0})
		},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, s)
			bad(c)
			if !c.closed(5 * time.Second) {
				t.Fatal("connection left open")
			}
			x := healthy.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
			if h, _ := healthy.reply(); h.Xid != x || h.Err != zkproto.ErrOK {
				t.Fatalf("another connection was disturbed: %+v", h)
			}
		})
	}
}

func TestUnknownOpcodeAnswersUnimplemented(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	x := c.send(999, nil)
	h, _ := c.reply()
	if h.Xid != x || h.Err != zkproto.ErrUnimplemented || h.Zxid != -1 {
		t.Fatalf("reply %+v, want (xid %d, zxid -1, Unimplemented)", h, x)
	}
}

func TestGracefulStopAnswersInFlightAndSyncs(t *testing.T) {
	dir := t.TempDir()
	s := startTestServer(t, func(c *Config) { c.DataDir = dir })
	c := dial(t, s)
	var xids []int32
	for i := 0; i < 50; i++ {
		xids = append(xids, c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: zkproto.OpenACLUnsafe()}))
	}
	for _, x := range xids {
		if h, _ := c.reply(); h.Xid != x || h.Err != zkproto.ErrOK {
			t.Fatalf("reply %+v", h)
		}
	}
	s.Stop()
	// A new node on the same data sees every acknowledged write.
	s2 := startTestServer(t, func(c *Config) { c.DataDir = dir; c.PeerAddr = s.cfg.PeerAddr })
	c2 := dial(t, s2)
	for i := 0; i < 50; i++ {
		c2.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: fmt.Sprintf("/n%d", i)})
		if h, _ := c2.reply(); h.Err != zkproto.ErrOK {
			t.Fatalf("/n%d lost after restart: %v", i, h.Err)
		}
	}
}

// FuzzConnection feeds arbitrary bytes to a live connection after a valid
// handshake: the server must never panic, must close or answer, and must
// keep serving other clients; goroutines must not leak.
func FuzzConnection(f *testing.F) {
	s := startTestServer(f, nil)
	for _, seed := range [][]byte{
		{},
		{0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 11},
		{0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1},
		{0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 14, 0},
		[]byte("\x00\x00\x00\x11\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01/"),
	} {
		f.Add(seed)
	}
	warm := dial(f, s) // the first connection starts long-lived goroutines
	warm.nc.Close()
	base := runtime.NumGoroutine()
	f.Fuzz(func(t *testing.T, data []byte) {
		c := dial(t, s)
		_ = c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		c.nc.Write(data)
		// Drain until the server closes or goes quiet.
		_ = c.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		io.Copy(io.Discard, c.nc)
		c.nc.Close()
		probe := dial(t, s)
		x := probe.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
		if h, _ := probe.reply(); h.Xid != x {
			t.Fatalf("server stopped serving after input %x", data)
		}
		probe.nc.Close()
		// Both connections are gone: their goroutines must end.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base+10 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if g := runtime.NumGoroutine(); g > base+10 {
			t.Fatalf("goroutines leaked: %d, started with %d", g, base)
		}
	})
}

func TestGlobalOutstandingLimitIsBackpressureNotLoss(t *testing.T) {
	s := startTestServer(t, func(c *Config) { c.GlobalOutstandingLimit = 4 })
	a, b := dial(t, s), dial(t, s)
	const n = 200
	for _, c := range []*testClient{a, b} {
		go func(c *testClient) {
			for i := 0; i < n; i++ {
				if i%2 == 0 {
					c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/g%d-%d", c.sid, i), ACL: zkproto.OpenACLUnsafe()})
				} else {
					c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
				}
			}
		}(c)
	}
	for _, c := range []*testClient{a, b} {
		for i := 1; i <= n; i++ {
			if h, _ := c.reply(); h.Xid != int32(i) || h.Err != zkproto.ErrOK {
				t.Fatalf("reply %d: %+v", i, h)
			}
		}
	}
	if got := s.zk.Outstanding(); got != 0 {
		t.Fatalf("outstanding %d after every reply", got)
	}
}

func TestMonitorReportsFsyncAndRaft(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/m", ACL: zkproto.OpenACLUnsafe()})
	c.reply()
	keys := map[string]bool{}
	s.zk.Gauges(func(name, _ string, _ float64) { keys[name] = true })
	for _, k := range []string{"zk_avg_latency", "zk_znode_count", "zk_cnt_fsynctime", "raft_role", "raft_term", "raft_applied_index"} {
		if !keys[k] {
			t.Errorf("mntr lacks %s", k)
		}
	}
	if n := s.node.Metrics().FsyncCount; n == 0 {
		t.Error("no Raft log write was timed")
	}
	if got := s.node.TreeStats().Nodes + 1; got != 6 {
		t.Errorf("node count %d, want 6 (4 special + /m, root counted twice)", got)
	}
}
