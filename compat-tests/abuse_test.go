package compattests

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zkbridge/zkbridge/client"
	"github.com/zkbridge/zkbridge/zkproto"
)

// TestAbuse is a bounded fuzz/abuse run against one zkbridge process:
// random bytes, slowloris connections, 10,000 half-open connections (and
// 300 on each of the native and admin ports) and oversize frames on every
// port (ZooKeeper, native gRPC, admin HTTP). The
// node must keep serving a well-behaved client throughout, its memory must
// stay bounded and come back down, every abusive connection must be closed
// within the sessionless timeout, and nothing may be written.
func TestAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections; skipped in -short mode")
	}
	// The sessionless timeout, as zkServer.sh users would set it: short,
	// so the run stays bounded.
	const sessionless = 6 * time.Second
	t.Setenv("SERVER_JVMFLAGS", fmt.Sprintf("-Dzookeeper.nio.sessionlessCnxnTimeout=%d", sessionless.Milliseconds()))
	began := time.Now()
	c := StartProcCluster(t, 1, ClusterOptions{})
	t.Logf("node started: %v", time.Since(began).Round(time.Millisecond))
	nd := c.Nodes[0]
	pid := nd.cmd.Process.Pid
	addr := nd.Client

	good, _, err := Connect(addr, "good", NewTranscript(), DialOptions{Timeout: 30000})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	serving := func(what string) {
		t.Helper()
		r, err := good.Call(zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/"})
		if err != nil || r.Header.Err != zkproto.ErrOK {
			t.Fatalf("%s: the well-behaved client is not served: %v %+v", what, err, r)
		}
	}
	nodes := func() int32 {
		t.Helper()
		r, err := good.Call(zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/"})
		if err != nil || r.Header.Err != zkproto.ErrOK {
			t.Fatalf("getAllChildrenNumber: %v", err)
		}
		return r.Body.(*zkproto.GetAllChildrenNumberResponse).TotalNumber
	}
	baseNodes := nodes()
	baseRSS, baseFDs := procRSSKiB(t, pid), procFDs(t, pid)
	peakRSS := baseRSS
	sample := func() {
		if r := procRSSKiB(t, pid); r > peakRSS {
			peakRSS = r
		}
	}

	// 1. Random bytes: 300 connections, each a burst of garbage (some
	// starting with a plausible frame length).
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for i := 0; i < 300; i++ {
		b := make([]byte, 1+rng.IntN(2048))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		if i%3 == 0 && len(b) >= 4 {
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		}
		wg.Add(1)
		go func(b []byte) {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(sessionless + 5*time.Second))
			_, _ = nc.Write(b)
			_, _ = io.Copy(io.Discard, nc) // until the server closes
		}(b)
	}
	wg.Wait()
	serving("after random bytes")
	t.Logf("random bytes: %v", time.Since(began).Round(time.Millisecond))

	// 2. Oversize frames on the ZooKeeper port: a length past jute.maxbuffer
	// before and after the handshake; the connection is closed.
	for _, handshake := range []bool{false, true} {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if handshake {
			var e zkproto.Encoder
			off := e.StartFrame()
			(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
			e.FinishFrame(off)
			_, _ = nc.Write(e.Bytes())
			if _, err := zkproto.NewFrameReader(nc, 1<<20).Next(); err != nil {
				t.Fatalf("handshake: %v", err)
			}
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(zkproto.DefaultMaxBuffer+1))
		_, _ = nc.Write(hdr[:])
		_, _ = nc.Write(make([]byte, 64<<10)) // the start of the oversize body
		if !closedWithin(nc, 5*time.Second) {
			t.Fatalf("oversize frame (handshake done: %v): connection not closed", handshake)
		}
		nc.Close()
	}
	// On the native gRPC port: an oversize message is refused and the
	// channel stays usable; raw garbage is dropped.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	native, err := client.Dial(ctx, []string{nd.Native})
	if err != nil {
		t.Fatal(err)
	}
	defer native.Close()
	_, err = native.Put(ctx, "/abuse-native-big", make([]byte, zkproto.DefaultMaxBuffer+128<<10))
	if code := status.Code(err); code != codes.ResourceExhausted && code != codes.InvalidArgument {
		t.Fatalf("native Put over jute.maxbuffer: %v, want ResourceExhausted or InvalidArgument", err)
	}
	if _, err := native.Get(ctx, "/"); err != nil {
		t.Fatalf("native Get after an oversize message: %v", err)
	}
	for _, garbage := range [][]byte{
		[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\x04\x00\x00\x00\x00\x00"), // preface, then a 16 MiB SETTINGS frame
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
	} {
		nc, err := net.DialTimeout("tcp", nd.Native, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write(garbage)
		if !closedWithin(nc, 10*time.Second) {
			t.Errorf("native port: %q... kept open", garbage[:8])
		}
		nc.Close()
	}
	// On the admin HTTP port: a 2 MiB header is refused.
	nc, err := net.DialTimeout("tcp", nd.Admin, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "GET /commands/ruok HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2<<20))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("admin port, 2 MiB header: HTTP %d, want 431", resp.StatusCode)
		}
	}
	nc.Close()
	serving("after oversize frames")
	t.Logf("oversize frames: %v", time.Since(began).Round(time.Millisecond))

	// 3. Slowloris: 200 connections dribbling a ConnectRequest a byte at a
	// time, and 4. 10,000 half-open connections (some silent, some with
	// half a frame), all held at once.
	var frame []byte
	{
		var e zkproto.Encoder
		off := e.StartFrame()
		(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
		e.FinishFrame(off)
		frame = e.Bytes()
	}
	const halfOpen, slow = 10000, 200
	conns := make([]net.Conn, 0, halfOpen+slow)
	var mu sync.Mutex
	start := time.Now()
	dialers := make(chan int, halfOpen)
	for i := 0; i < halfOpen; i++ {
		dialers <- i
	}
	close(dialers)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range dialers {
				nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					continue
				}
				if i%2 == 1 {
					_, _ = nc.Write(frame[:1+i%(len(frame)-1)])
				}
				mu.Lock()
				conns = append(conns, nc)
				mu.Unlock()
			}
		}()
	}
	stopSlow := make(chan struct{})
	var slowWG sync.WaitGroup
	for i := 0; i < slow; i++ {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			continue
		}
		mu.Lock()
		conns = append(conns, nc)
		mu.Unlock()
		slowWG.Add(1)
		go func(nc net.Conn) {
			defer slowWG.Done()
			for j := 0; j < len(frame); j++ {
				select {
				case <-stopSlow:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if _, err := nc.Write(frame[j : j+1]); err != nil {
					return
				}
			}
		}(nc)
	}
	// Slowloris after the handshake: a session whose next request never
	// completes. Partial frames do not keep a session alive: it expires
	// after its 4 s timeout and the node closes the connection.
	var dribble []byte
	{
		var e zkproto.Encoder
		off := e.StartFrame()
		(&zkproto.RequestHeader{Xid: 1, Type: zkproto.OpGetData}).Encode(&e)
		(&zkproto.GetDataRequest{Path: "/" + strings.Repeat("x", 900)}).Encode(&e)
		e.FinishFrame(off)
		dribble = e.Bytes()
	}
	for i := 0; i < 20; i++ {
		sc, _, err := Connect(addr, "slow", NewTranscript(), DialOptions{Timeout: 4000})
		if err != nil {
			t.Fatalf("slowloris session %d: %v", i, err)
		}
		mu.Lock()
		conns = append(conns, sc.nc)
		mu.Unlock()
		slowWG.Add(1)
		go func(nc net.Conn) {
			defer slowWG.Done()
			for j := 0; j < len(dribble); j++ {
				select {
				case <-stopSlow:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if _, err := nc.Write(dribble[j : j+1]); err != nil {
					return
				}
			}
		}(sc.nc)
	}
	wg.Wait()
	dialed := time.Since(start)
	// The node is still accepting the backlog: sample while it catches up.
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until) && procFDs(t, pid) < halfOpen; time.Sleep(100 * time.Millisecond) {
		sample()
	}
	serving("with 10,000 half-open connections")
	sample()
	heldRSS := procRSSKiB(t, pid)
	t.Logf("%d half-open and slowloris connections open in %v; node RSS %d MiB (was %d MiB), fds %d (was %d)",
		len(conns), dialed.Round(time.Millisecond), heldRSS>>10, baseRSS>>10, procFDs(t, pid), baseFDs)

	// Half-open connections on the native and admin ports too: closed
	// within the sessionless timeout (gRPC's connection timeout) and the
	// admin port's 5 s header timeout.
	for _, port := range []string{nd.Native, nd.Admin} {
		for i := 0; i < 300; i++ {
			nc, err := net.DialTimeout("tcp", port, 10*time.Second)
			if err != nil {
				continue
			}
			if i%2 == 1 {
				_, _ = nc.Write([]byte("PRI * HTTP/2.0\r\n")[:1+i%15]) // a partial preface or request line
			}
			conns = append(conns, nc)
		}
	}
	serving("with half-open connections on every port")

	// Every one of them is closed by the node within the sessionless
	// timeout (the sessions' ones within their session timeout), plus
	// slack for 10,000 closes on a loaded machine.
	deadline := time.Now().Add(sessionless + 20*time.Second)
	open := 0
	for _, nc := range conns {
		_ = nc.SetReadDeadline(deadline)
		var b [1]byte
		if _, err := nc.Read(b[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
		nc.Close()
	}
	close(stopSlow)
	slowWG.Wait()
	if open > 0 {
		t.Fatalf("%d connections without a session were still open %v after the sessionless timeout", open, 20*time.Second)
	}
	serving("after the half-open connections")
	t.Logf("half-open connections closed: %v", time.Since(began).Round(time.Millisecond))

	// Nothing was written, and the node gave its file descriptors back.
	if n := nodes(); n != baseNodes {
		t.Fatalf("znodes under / went from %d to %d: abuse wrote something", baseNodes, n)
	}
	fdDeadline := time.Now().Add(20 * time.Second)
	for procFDs(t, pid) > baseFDs+20 && time.Now().Before(fdDeadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if fds := procFDs(t, pid); fds > baseFDs+20 {
		t.Fatalf("node holds %d fds after the abuse, %d before", fds, baseFDs)
	}
	// Bounded memory: the 10,000 connections cost the node at most 64 KiB
	// each at the peak.
	if limit := baseRSS + 64*(halfOpen+slow); peakRSS > limit {
		t.Fatalf("node RSS peaked at %d MiB (base %d MiB), over %d MiB", peakRSS>>10, baseRSS>>10, limit>>10)
	}
	t.Logf("peak RSS %d MiB, base %d MiB; fds back to %d", peakRSS>>10, baseRSS>>10, procFDs(t, pid))
}

// closedWithin reports whether the peer closed nc within d.
func closedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	ne, isNet := err.(net.Error)
	return !(isNet && ne.Timeout())
}

// procRSSKiB is a process's resident memory in KiB (VmRSS).
func procRSSKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// procFDs is the number of a process's open file descriptors.
func procFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}
