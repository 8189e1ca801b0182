package bench

import (
	"bufio"
	"context"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// fakeServer speaks just enough of the protocol for the connect workload
// and Probe: it opens sessions, answers closeSession and closes, answers
// getAllChildrenNumber with children and every other request with an OK
// header and no body.
type fakeServer struct {
	ln       net.Listener
	children atomic.Int32
	refuse   atomic.Bool // drop connections before the handshake reply

	sessions, closes, exists atomic.Int64
	expire                   atomic.Bool // answer a resume (a handshake with a session id) with "expired"
	wg                       sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// kill stops the fake as a killed server stops: no more connections, and
// the open ones reset.
func (f *fakeServer) kill() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for nc := range f.conns {
		nc.Close()
	}
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); f.serve(nc) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve(nc net.Conn) {
	f.mu.Lock()
	if f.conns == nil {
		f.conns = map[net.Conn]bool{}
	}
	f.conns[nc] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, nc)
		f.mu.Unlock()
	}()
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	fr := zkproto.NewFrameReader(bufio.NewReader(nc), 0)
	frame, err := fr.Next()
	if err != nil || f.refuse.Load() {
		return
	}
	var creq zkproto.ConnectRequest
	if zkproto.Unmarshal(frame, &creq) != nil {
		return
	}
	id := creq.SessionID
	if id == 0 {
		id = f.sessions.Add(1)
	}
	resp := zkproto.ConnectResponse{TimeOut: creq.TimeOut, SessionID: id, Passwd: make([]byte, zkproto.PasswordLength)}
	if creq.SessionID != 0 && f.expire.Load() {
		resp = zkproto.ConnectResponse{Passwd: make([]byte, zkproto.PasswordLength)}
	}
	if zkproto.WriteFrame(nc, zkproto.Marshal(&resp)) != nil {
		return
	}
	for {
		frame, err := fr.Next()
		if err != nil {
			return
		}
		d := zkproto.NewDecoder(frame)
		var h zkproto.RequestHeader
		if h.Decode(d) != nil {
			return
		}
		var e zkproto.Encoder
		rh := zkproto.ReplyHeader{Xid: h.Xid}
		rh.Encode(&e)
		switch h.Type {
		case zkproto.OpGetAllChildrenNumber:
			(&zkproto.GetAllChildrenNumberResponse{TotalNumber: f.children.Load()}).Encode(&e)
		case zkproto.OpExists:
			f.exists.Add(1)
		case zkproto.OpCloseSession:
			// Counted before the reply: the client may return as soon as
			// it reads it, and the test then reads the count.
			f.closes.Add(1)
		}
		if zkproto.WriteFrame(nc, e.Bytes()) != nil || h.Type == zkproto.OpCloseSession {
			return
		}
	}
}

func TestConnectWorkload(t *testing.T) {
	f := startFake(t)
	res, err := Run(context.Background(), Config{Addrs: []string{f.addr()}, Workload: "connect",
		Connections: 3, Ops: 40, Warmup: 0, ConnectExists: true, Cleanup: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 40 || res.Errors != 0 || res.OpsPerSec <= 0 || !res.ConnectExists {
		t.Fatalf("result: %+v", res)
	}
	perOp := map[string]int64{}
	for _, o := range res.PerOp {
		perOp[o.Op] = o.Ops
	}
	if perOp["connect"] != 40 || perOp["close"] != 40 || perOp["exists"] != 40 {
		t.Fatalf("per op %v, want 40 connects, closes and exists", perOp)
	}
	// The setup and cleanup sessions come on top of the 40 measured.
	if s, c, e := f.sessions.Load(), f.closes.Load(), f.exists.Load(); s != 42 || c != 42 || e != 40 {
		t.Fatalf("server saw %d sessions, %d closeSessions, %d exists; want 42, 42, 40", s, c, e)
	}
	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"3 concurrent connectors", "\n  connect ", "\n    close ", "exists: one per session"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
	if strings.Contains(table.String(), "total") {
		t.Errorf("table has a total row for a per-session unit:\n%s", table.String())
	}
}

func TestConnectWorkloadCountsFailedHandshakes(t *testing.T) {
	f := startFake(t)
	r := &runner{cfg: Config{Addrs: []string{f.addr()}, Workload: "connect", Connections: 2, Ops: 10}, ctx: context.Background()}
	r.cfg.Normalize()
	r.cfg.Timeout = 2 * time.Second
	f.refuse.Store(true)
	if _, err := r.connect(); err == nil || !strings.Contains(err.Error(), "no session could be established (10 attempts failed)") {
		t.Fatalf("connect against a server that drops every handshake: %v", err)
	}
}

func TestProbe(t *testing.T) {
	f := startFake(t)
	f.children.Store(5)
	// Enough descendants after the third try.
	go func() {
		for f.sessions.Load() < 3 {
			time.Sleep(time.Millisecond)
		}
		f.children.Store(7)
	}()
	res, err := Probe(context.Background(), f.addr(), "/p", 7, 5*time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Children != 7 || res.Attempts < 3 || res.Waited <= 0 || res.Path != "/p" ||
		math.Abs(res.AnsweredAt-float64(time.Now().UnixNano())/1e9) > 5 {
		t.Fatalf("probe: %+v", res)
	}

	// Nothing listening: the probe gives up at its timeout, saying why.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Probe(context.Background(), closed, "/p", 0, 20*time.Millisecond, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("probe of a closed port: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("probe took %v past its 300ms timeout", d)
	}
	if _, err := Probe(context.Background(), f.addr(), "p", 0, time.Millisecond, time.Second); err == nil {
		t.Fatal("probe accepted a relative path")
	}
}

// A paced run cannot go faster than its rate: with Ops requests at Rate
// over Connections, the last turn of the schedule comes no earlier than
// (Ops-Connections)/Rate after the first, however fast the server is.
func TestRatePacesRequests(t *testing.T) {
	f := startFake(t)
	const ops, rate = 60, 200.0
	res, err := Run(context.Background(), Config{Addrs: []string{f.addr()}, Workload: "exists",
		Connections: 2, Outstanding: 4, Keyspace: 1, Fanout: 1, MultiOps: 1, Ops: ops, Rate: rate,
		Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != ops || res.Errors != 0 {
		t.Fatalf("ops %d errors %d, want %d and 0", res.Ops, res.Errors, ops)
	}
	if min := float64(ops-2) / rate; res.Elapsed < min {
		t.Fatalf("%d ops at %v ops/s took %.3f s, less than the schedule's %.3f s", ops, rate, res.Elapsed, min)
	}
	if res.Rate != rate {
		t.Fatalf("result's rate %v, want %v", res.Rate, rate)
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "paced at 200 ops/s") {
		t.Fatalf("table does not say the pace (%v):\n%s", err, b.String())
	}
}

// A paced request goes out at its turn, not when the next one is due: its
// latency (a loopback round trip to the fake) stays far below the 250 ms
// between turns.
func TestRateSendsEachRequestOnItsTurn(t *testing.T) {
	f := startFake(t)
	res, err := Run(context.Background(), Config{Addrs: []string{f.addr()}, Workload: "exists",
		Connections: 1, Outstanding: 1, Keyspace: 1, Fanout: 1, MultiOps: 1, Ops: 3, Rate: 4,
		Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 3 || res.Latency.Max >= 125 {
		t.Fatalf("ops %d, max latency %.1f ms: want 3 ops, each answered well within its 250 ms turn", res.Ops, res.Latency.Max)
	}
}
