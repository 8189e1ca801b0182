package compattests

import (
	"context"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

// TestCompatTenant runs every scenario against ZooKeeper and against a
// tenant of zkbridge (not the default one): a tenant is a ZooKeeper
// namespace of its own, with exact semantics, on its own port.
func TestCompatTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("compat suite needs a real ZooKeeper; skipped in -short mode")
	}
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer zk.Stop()
	zb, err := StartZkbridge(t.TempDir())
	if err != nil {
		t.Fatalf("start zkbridge: %v", err)
	}
	defer zb.Stop()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := zb.Srv.CreateTenant(ctx, server.TenantRequest{Name: "compat", Port: port}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for zb.Srv.Tenant("compat") == nil || zb.Srv.Tenant("compat").Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the tenant does not serve within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	compareAll(t, "standalone, a tenant", suiteTarget("zookeeper", zk.Addr), suiteTarget("zkbridge", zb.Srv.TenantAddr("compat")), Mode{}, nil)
}
