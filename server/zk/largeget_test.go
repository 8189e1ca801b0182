package zk

import (
	"strconv"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// BenchmarkGetData1MB is one 1 MB getData over a loopback connection to a
// one-node door: the server's copies of the value show in B/op. "cached":
// one node, served from the apply path's node cache; "pebble": 24 nodes
// read in turn, more than the cache's 16 MiB holds, so each is read from
// Pebble (bench-dims.sh's large values read 32).
func BenchmarkGetData1MB(b *testing.B) {
	b.Run("cached", func(b *testing.B) { benchGetData1MB(b, 1) })
	b.Run("pebble", func(b *testing.B) { benchGetData1MB(b, 24) })
}

func benchGetData1MB(b *testing.B, nodes int) {
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
	paths := make([]string, nodes)
	for i := range paths {
		paths[i] = "/v" + strconv.Itoa(i)
		send(&zkproto.RequestHeader{Xid: int32(1 + i), Type: zkproto.OpCreate},
			&zkproto.CreateRequest{Path: paths[i], Data: value, ACL: zkproto.OpenACLUnsafe()})
		if h := recv(); h.Err != zkproto.ErrOK {
			b.Fatalf("create: %v", h.Err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(&zkproto.RequestHeader{Xid: int32(1 + nodes + i), Type: zkproto.OpGetData}, &zkproto.GetDataRequest{Path: paths[i%nodes]})
		if h := recv(); h.Err != zkproto.ErrOK {
			b.Fatalf("getData: %v", h.Err)
		}
	}
}
