package zk

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/stagetrace"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Pipelined writes with reads among them are answered in request order
// (a write's reply is written by the goroutine its result comes to, when
// no writer runs), and with write stages traced every write leaves one
// record whose stamps follow each other.
func TestPipelinedWritesInOrderAndTraced(t *testing.T) {
	defer stagetrace.SetOn(stagetrace.On())
	stagetrace.SetOn(true)
	stagetrace.Reset()
	defer stagetrace.Reset()
	s := startDoor(t)
	nc := dialSession(t, s)
	writeFrame(t, nc, &zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCreate},
		&zkproto.CreateRequest{Path: "/p", ACL: zkproto.OpenACLUnsafe()})
	const n = 300
	writes := 1
	go func() { // a failed write shows as a missing reply below
		for i := range n {
			var e zkproto.Encoder
			off := e.StartFrame()
			xid := int32(2 + i)
			if i%10 == 9 {
				(&zkproto.RequestHeader{Xid: xid, Type: zkproto.OpGetData}).Encode(&e)
				(&zkproto.GetDataRequest{Path: "/p"}).Encode(&e)
			} else {
				(&zkproto.RequestHeader{Xid: xid, Type: zkproto.OpSetData}).Encode(&e)
				(&zkproto.SetDataRequest{Path: "/p", Data: []byte("v"), Version: -1}).Encode(&e)
			}
			e.FinishFrame(off)
			if _, err := nc.Write(e.Bytes()); err != nil {
				return
			}
		}
	}()
	for i := range n {
		if i%10 != 9 {
			writes++
		}
	}
	fr := zkproto.NewFrameReader(nc, 1<<20)
	_ = nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	for i := range n + 1 {
		frame, err := fr.Next()
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n+1, err)
		}
		var h zkproto.ReplyHeader
		if h.Decode(zkproto.NewDecoder(frame)); h.Err != zkproto.ErrOK || h.Xid != int32(1+i) {
			t.Fatalf("reply %d: %+v, want OK for xid %d", i+1, h, 1+i)
		}
	}
	// The last reply's record is added just after its write returned.
	deadline := time.Now().Add(10 * time.Second)
	var reqs []stagetrace.Request
	for {
		reqs = stagetrace.Snapshot().Requests
		if len(reqs) >= writes || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(reqs) != writes {
		t.Fatalf("%d write records, want %d", len(reqs), writes)
	}
	var last uint64
	handedOff := 0
	for _, r := range reqs {
		stamps := []int64{r.Read, r.Decoded, r.Result, r.Queued, r.Written}
		for k := 1; k < len(stamps); k++ {
			if stamps[k] < stamps[k-1] || stamps[k-1] == 0 {
				t.Fatalf("stamps out of order or missing: %+v", r)
			}
		}
		// A result may come before Propose returns (then it has no stamp).
		if r.Proposed != 0 {
			handedOff++
			if r.Proposed < r.Decoded {
				t.Fatalf("hand-off stamp: %+v", r)
			}
		}
		if r.Index <= last {
			t.Fatalf("entry index %d after %d", r.Index, last)
		}
		last = r.Index
	}
	if handedOff < writes/2 {
		t.Fatalf("%d of %d writes have a hand-off stamp", handedOff, writes)
	}
}
