package node

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// slowFirst holds up the apply of the first entry from connection conn
// with sequence number seq, and counts those entries.
type slowFirst struct {
	conn, seq uint64
	hold      time.Duration
	copies    atomic.Int32
	held      atomic.Bool
}

func (b *slowFirst) Armed() bool { return true }

func (b *slowFirst) Before(cmd []byte) func() {
	conn, seq, ok := sm.CommandOrigin(cmd)
	if !ok || conn != b.conn || seq != b.seq {
		return nil
	}
	b.copies.Add(1)
	if b.held.Swap(true) {
		return nil
	}
	return func() { time.Sleep(b.hold) }
}

// The leader's own proposal is in its log (or reported dropped) and cannot
// vanish unnoticed, so a slow apply must not make it propose the write a
// second time: under multis of 1,000 setData, each copy was one more 130 KB
// entry on a log already behind (issue 36). One node, the leader: a write
// whose apply is held past the proposal's retry wait (500 ms) is applied
// once, and answered.
func TestLeaderDoesNotCopyItsOwnSlowProposal(t *testing.T) {
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
	n := New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	const conn = 7
	slow := &slowFirst{conn: conn, seq: 1, hold: 3 * proposalRetryAfter}
	n.AddApplyBarrier(slow)
	if err := n.Start(Addresses{Client: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	open, err := n.ProposeSync(&sm.Command{Header: sm.Header{Conn: conn, Time: now},
		Op: &sm.CreateSession{Timeout: 30000, Password: make([]byte, 16), Owner: cfg.ReplicaID}})
	if err != nil || open.Err != zkproto.ErrOK {
		t.Fatalf("create session: %v %v", open, err)
	}
	write := func(seq uint64, path string) (*sm.Result, error) {
		return n.ProposeSync(&sm.Command{Header: sm.Header{Session: open.Session, Conn: conn, Seq: seq, Time: now},
			Op: &sm.Create{OpCode: zkproto.OpCreate, Path: path, ACL: zkproto.OpenACLUnsafe()}})
	}
	start := time.Now()
	res, err := write(1, "/held")
	if err != nil || res.Err != zkproto.ErrOK {
		t.Fatalf("the held write: %v %v", res, err)
	}
	if took := time.Since(start); took < slow.hold {
		t.Fatalf("the write was answered in %v, before its apply was released (%v): the test did not hold it", took, slow.hold)
	}
	// A copy would have been proposed before the next write, so it has
	// been applied (and refused) by the time the next write is answered.
	if res, err := write(2, "/next"); err != nil || res.Err != zkproto.ErrOK {
		t.Fatalf("the next write: %v %v", res, err)
	}
	if c := slow.copies.Load(); c != 1 {
		t.Fatalf("the held write reached the log %d times, want once", c)
	}
}
