package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// A migration import into a tenant obeys the tenant's max-znodes and
// max-bytes as every other write does (checked in apply): a batch that
// would take the tenant past a limit is refused whole, RESOURCE_EXHAUSTED
// with what to do, and counted; batches that fit are imported.
func TestTenantImportObeysLimits(t *testing.T) {
	s, nc, _ := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, "127.0.0.1")
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "imp", Port: port}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "imp", port)
	base := s.Tenant("imp").TreeStats()
	const room = 4
	if _, err := s.UpdateTenant(ctx, TenantRequest{Name: "imp", Port: port, MaxZnodes: base.Nodes + room, MaxBytes: base.DataBytes + 1000}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the limits in force", func() bool {
		tn := s.tenants.get("imp")
		return tn != nil && tn.door.LimitsOf().MaxZnodes == base.Nodes+room
	})

	nodes := func(prefix string, n, size int) []*zkbridgev1.ImportedNode {
		var out []*zkbridgev1.ImportedNode
		for i := 0; i < n; i++ {
			out = append(out, &zkbridgev1.ImportedNode{Path: fmt.Sprintf("/%s%d", prefix, i), Data: make([]byte, size),
				Czxid: 2, Mzxid: 2, Pzxid: 2})
		}
		return out
	}
	importBatch := func(b *zkbridgev1.ImportBatch) error {
		b.Tenant = "imp"
		return importOne(ctx, nc, b)
	}
	refused := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "tenant update") {
			t.Fatalf("%s: %v, want RESOURCE_EXHAUSTED naming `zkbridge tenant update`", what, err)
		}
	}
	// Past max-znodes: refused whole.
	refused("6 nodes into room for 4", importBatch(&zkbridgev1.ImportBatch{Nodes: nodes("a", room+2, 1)}))
	if got := s.Tenant("imp").TreeStats().Nodes; got != base.Nodes {
		t.Fatalf("after the refused batch: %d znodes, want %d (none imported)", got, base.Nodes)
	}
	// Within it: imported.
	if err := importBatch(&zkbridgev1.ImportBatch{Nodes: nodes("b", room-1, 1)}); err != nil {
		t.Fatalf("3 nodes into room for 4: %v", err)
	}
	// Past max-bytes (room for one more znode, not for its 2000 bytes).
	refused("a node past max-bytes", importBatch(&zkbridgev1.ImportBatch{Nodes: nodes("c", 1, 2000)}))
	// An update pass that grows data past max-bytes is refused too.
	refused("an update past max-bytes", importBatch(&zkbridgev1.ImportBatch{Update: true, Nodes: nodes("b", 1, 2000)}))
	if got := s.Tenant("imp").TreeStats(); got.Nodes != base.Nodes+room-1 || got.DataBytes >= base.DataBytes+1000 {
		t.Fatalf("after the import: %+v, want %d znodes and under %d bytes", got, base.Nodes+room-1, base.DataBytes+1000)
	}
	if got := s.tenants.get("imp").door.LimitCounts().QuotaExceeded; got != 3 {
		t.Fatalf("quota refusals counted: %d, want 3", got)
	}
	// The default tenant has no limits: the same batch imports there.
	if err := importOne(ctx, nc, &zkbridgev1.ImportBatch{Nodes: nodes("a", room+2, 1)}); err != nil {
		t.Fatalf("the default tenant: %v", err)
	}
}

// importOne imports one batch in a stream of its own.
func importOne(ctx context.Context, nc zkbridgev1.BridgeClient, b *zkbridgev1.ImportBatch) error {
	st, err := nc.Import(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(b); err != nil {
		return err
	}
	_ = st.CloseSend()
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
