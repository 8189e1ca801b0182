package zk

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// BenchmarkGetData1MB is one 1 MB getData over a loopback connection to a
// one-node door: the server's copies of the value show in B/op.
func BenchmarkGetData1MB(b *testing.B) {
	s := startDoor(b)
	nc := dialSession(b, s)
	value := make([]byte, 1000_000)
	send := func(records ...zkproto.Record) {
		var e zkproto.Encoder
		off := e.StartFrame()
		for _, r := range records {
			r.Encode(&e)
		}
		e.FinishFrame(off)
		if _, err := nc.Write(e.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	fr := zkproto.NewFrameReader(nc, 2<<20)
	recv := func() zkproto.ReplyHeader {
		frame, err := fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		var h zkproto.ReplyHeader
		h.Decode(zkproto.NewDecoder(frame))
		return h
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Minute))
	send(&zkproto.RequestHeader{Xid: 1, Type: zkproto.OpCreate},
		&zkproto.CreateRequest{Path: "/v", Data: value, ACL: zkproto.OpenACLUnsafe()})
	if h := recv(); h.Err != zkproto.ErrOK {
		b.Fatalf("create: %v", h.Err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(&zkproto.RequestHeader{Xid: int32(2 + i), Type: zkproto.OpGetData}, &zkproto.GetDataRequest{Path: "/v"})
		if h := recv(); h.Err != zkproto.ErrOK {
			b.Fatalf("getData: %v", h.Err)
		}
	}
}
