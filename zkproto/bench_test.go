package zkproto_test

import (
	"fmt"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// benchCodec measures decoding and encoding of one request and one
// response body. Decoding starts from the registry, as a server or client
// does for each message, so the record itself is one of the allocations.
// Encoding reuses one Encoder, as a connection does.
func benchCodec(b *testing.B, op zkproto.OpCode, req, resp zkproto.Record) {
	for _, c := range []struct {
		kind string
		rec  zkproto.Record
		get  func(zkproto.OpCode) (zkproto.Record, bool)
	}{
		{"request", req, zkproto.NewRequest},
		{"response", resp, zkproto.NewResponse},
	} {
		body := zkproto.Marshal(c.rec)
		b.Run(c.kind+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var d zkproto.Decoder
			for b.Loop() {
				rec, _ := c.get(op)
				d.Reset(body)
				if err := rec.Decode(&d); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.kind+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			e := zkproto.NewEncoder(make([]byte, 0, 4096))
			for b.Loop() {
				e.Reset()
				c.rec.Encode(e)
			}
		})
	}
}

var benchStat = zkproto.Stat{Czxid: 10, Mzxid: 12, Ctime: 1700000000000, Mtime: 1700000000500,
	Version: 2, DataLength: 64, NumChildren: 0, Pzxid: 10}

func BenchmarkGetData(b *testing.B) {
	benchCodec(b, zkproto.OpGetData,
		&zkproto.GetDataRequest{Path: "/services/app/config", Watch: true},
		&zkproto.GetDataResponse{Data: make([]byte, 64), Stat: benchStat})
}

func BenchmarkCreate(b *testing.B) {
	benchCodec(b, zkproto.OpCreate,
		&zkproto.CreateRequest{Path: "/services/app/instances/node-", Data: make([]byte, 64),
			ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeralSequential)},
		&zkproto.CreateResponse{Path: "/services/app/instances/node-0000000042"})
}

func BenchmarkSetData(b *testing.B) {
	benchCodec(b, zkproto.OpSetData,
		&zkproto.SetDataRequest{Path: "/services/app/config", Data: make([]byte, 64), Version: 2},
		&zkproto.SetDataResponse{Stat: benchStat})
}

// BenchmarkMulti10 is a 10-op multi: 4 creates, 3 setData, 2 checks and a
// delete, and its successful response.
func BenchmarkMulti10(b *testing.B) {
	var req zkproto.MultiRequest
	var resp zkproto.MultiResponse
	for i := range 10 {
		path := fmt.Sprintf("/services/app/item-%d", i)
		switch {
		case i < 4:
			req.Ops = append(req.Ops, zkproto.MultiOp{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{
				Path: path, Data: make([]byte, 32), ACL: zkproto.OpenACLUnsafe()}})
			resp.Results = append(resp.Results, zkproto.MultiResult{Type: zkproto.OpCreate, Response: &zkproto.CreateResponse{Path: path}})
		case i < 7:
			req.Ops = append(req.Ops, zkproto.MultiOp{Type: zkproto.OpSetData, Request: &zkproto.SetDataRequest{
				Path: path, Data: make([]byte, 32), Version: -1}})
			resp.Results = append(resp.Results, zkproto.MultiResult{Type: zkproto.OpSetData, Response: &zkproto.SetDataResponse{Stat: benchStat}})
		case i < 9:
			req.Ops = append(req.Ops, zkproto.MultiOp{Type: zkproto.OpCheck, Request: &zkproto.CheckVersionRequest{Path: path, Version: 3}})
			resp.Results = append(resp.Results, zkproto.MultiResult{Type: zkproto.OpCheck})
		default:
			req.Ops = append(req.Ops, zkproto.MultiOp{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: path, Version: -1}})
			resp.Results = append(resp.Results, zkproto.MultiResult{Type: zkproto.OpDelete})
		}
	}
	benchCodec(b, zkproto.OpMulti, &req, &resp)
}

// BenchmarkFrameReader reads a stream of small frames with one reader.
func BenchmarkFrameReader(b *testing.B) {
	frame := zkproto.AppendFrame(nil, zkproto.Marshal(&zkproto.GetDataRequest{Path: "/services/app/config"}))
	stream := make([]byte, 0, 1000*len(frame))
	for range 1000 {
		stream = append(stream, frame...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	r := &benchLoopReader{data: stream}
	fr := zkproto.NewFrameReader(r, 0)
	for b.Loop() {
		if _, err := fr.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLoopReader replays data forever.
type benchLoopReader struct {
	data []byte
	off  int
}

func (r *benchLoopReader) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		r.off = 0
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}
