package compattests

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

// TestCompatTenant runs every scenario against ZooKeeper and against a
// tenant of zkbridge (not the default one) through a node that does not
// host it: a 3-node cluster, the tenant's shard on one node (so a single
// server, as the standalone ZooKeeper it is compared with), every
// connection made to another node, which forwards it. A tenant is a
// ZooKeeper namespace of its own, with exact semantics, on its own port
// of every node.
func TestCompatTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("compat suite needs a real ZooKeeper; skipped in -short mode")
	}
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer zk.Stop()
	// Each node on a loopback address of its own: a tenant's port is open
	// on every node.
	zb, err := StartZkbridgeCluster(t.TempDir(), 3, func(c *server.Config) {
		c.ClientAddr = fmt.Sprintf("127.0.0.%d:0", c.ReplicaID)
	})
	if err != nil {
		t.Fatalf("start zkbridge cluster: %v", err)
	}
	defer zb.Stop()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := zb.nodes[0].CreateTenant(ctx, server.TenantRequest{Name: "compat", Port: port, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	home := int(info.Replicas[0]) - 1
	away := (home + 1) % 3
	via := net.JoinHostPort(fmt.Sprintf("127.0.0.%d", away+1), strconv.Itoa(port))
	deadline := time.Now().Add(time.Minute)
	for hosted := zb.nodes[home].Tenant("compat"); hosted == nil || hosted.Ready() != nil || zb.nodes[away].TenantAddr("compat") != via; hosted = zb.nodes[home].Tenant("compat") {
		if time.Now().After(deadline) {
			t.Fatal("the tenant is not served within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("tenant on node %d, every connection through node %d (%s)", home+1, away+1, via)
	compareAll(t, "a tenant through a node that does not host it", suiteTarget("zookeeper", zk.Addr), suiteTarget("zkbridge", via), Mode{}, nil)
}
