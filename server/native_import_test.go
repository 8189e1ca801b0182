package server

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/migrate"
)

// The native Import family: begin refuses a non-empty target unless merge
// and raises zxidBase; batches of sessions and nodes apply in order; a
// failing batch names its node; finish reports the last zxid.
func TestNativeImport(t *testing.T) {
	_, nc, zc := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const base = int64(3) << 32
	begin, err := nc.ImportBegin(ctx, &zkbridgev1.ImportBeginRequest{Subtrees: []string{"/"}, MinZxidBase: base})
	if err != nil || begin.LastZxid < base {
		t.Fatalf("begin: %+v %v", begin, err)
	}
	const sid = int64(0x0200017f00000001)
	st, err := nc.Import(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batches := []*zkbridgev1.ImportBatch{
		{Sessions: []*zkbridgev1.ImportedSession{{Id: sid, TimeoutMs: 30000, Password: migrate.ZooKeeperPassword(sid)}},
			Nodes: []*zkbridgev1.ImportedNode{{Path: "/a", Czxid: 0x200000002, Mzxid: 0x200000002, Pzxid: 0x200000003, Creates: 5, NullData: true}}},
		{Nodes: []*zkbridgev1.ImportedNode{{Path: "/a/e", Data: []byte("x"), Czxid: 0x200000003, Mzxid: 0x200000003, Pzxid: 0x200000003, EphemeralOwner: sid,
			Acl: []*zkbridgev1.ACL{{Perms: 31, Scheme: "world", Id: "anyone"}}}}},
	}
	for _, b := range batches {
		if err := st.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	// One answer per batch, with running totals, then the end.
	var resp *zkbridgev1.ImportResponse
	for i := 1; i <= 2; i++ {
		if resp, err = st.Recv(); err != nil || resp.Batches != int64(i) {
			t.Fatalf("answer %d: %+v %v", i, resp, err)
		}
	}
	if resp.Nodes != 2 || resp.Sessions != 1 {
		t.Fatalf("import: %+v", resp)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Fatalf("after the last answer: %v", err)
	}
	data, stat, err := zc.Get("/a/e")
	if err != nil || string(data) != "x" || stat.EphemeralOwner != sid || stat.Czxid != 0x200000003 {
		t.Fatalf("/a/e: %q %+v %v", data, stat, err)
	}
	if _, stat, err := zc.Get("/a"); err != nil || stat.Cversion != 2*5-1 {
		t.Fatalf("/a: %+v %v", stat, err)
	}
	// Not empty now: begin refuses unless merge.
	_, err = nc.ImportBegin(ctx, &zkbridgev1.ImportBeginRequest{Subtrees: []string{"/a"}})
	wantCode(t, "begin on a non-empty target", err, codes.FailedPrecondition)
	if _, err := nc.ImportBegin(ctx, &zkbridgev1.ImportBeginRequest{Subtrees: []string{"/a"}, Merge: true}); err != nil {
		t.Fatalf("begin with merge: %v", err)
	}
	// A batch with an existing node fails and names it.
	st, err = nc.Import(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&zkbridgev1.ImportBatch{Nodes: []*zkbridgev1.ImportedNode{{Path: "/a"}}}); err != nil {
		t.Fatal(err)
	}
	_ = st.CloseSend()
	_, err = st.Recv()
	wantCode(t, "import of an existing node", err, codes.AlreadyExists)
	fin, err := nc.ImportFinish(ctx, &zkbridgev1.ImportFinishRequest{MinZxidBase: base})
	if err != nil || fin.LastZxid < base {
		t.Fatalf("finish: %+v %v", fin, err)
	}
}
