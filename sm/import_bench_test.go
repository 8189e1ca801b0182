package sm

import (
	"fmt"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

// BenchmarkImportNodes measures the apply of migration imports: batches of
// 5000 znodes (the importer's default), 1000 children per parent, one
// world:anyone ACL, 32-byte values. It reports znodes/s of one replica.
func BenchmarkImportNodes(b *testing.B) {
	s, _, idx := benchSM(b, b.TempDir())
	defer s.Close()
	data := []byte("0123456789abcdef0123456789abcdef")
	acl := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
	const batch = 5000
	nodes := make([]ImportedNode, 0, batch)
	zxid := int64(1 << 32)
	flush := func() {
		idx++
		c := &Command{Header: Header{Time: int64(idx)}, Op: &ImportNodes{Nodes: nodes}}
		out, err := s.Update([]sm.Entry{{Index: idx, Cmd: c.Encode()}})
		if err != nil {
			b.Fatal(err)
		}
		if r, _ := DecodeResult(out[0].Result.Data); r.Err != 0 {
			b.Fatalf("import failed: %v at %s", r.Err, r.Path)
		}
		nodes = nodes[:0]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		p := fmt.Sprintf("/b/g%04d", i/1000)
		if i%1000 != 0 {
			p = fmt.Sprintf("%s/n%04d", p, i%1000)
		}
		nodes = append(nodes, ImportedNode{Path: p, Data: data, ACL: acl, Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: 1, Mtime: 1})
		if len(nodes) == batch {
			flush()
		}
	}
	if len(nodes) > 0 {
		flush()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "znodes/s")
}
