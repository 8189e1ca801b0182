package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Many creates at once, from several connections on every node of a
// 3-node cluster, against a small max-znodes: exactly the limit's worth
// succeed and every replica ends at the limit, never past it (the limit is
// checked in apply, one write after another, not on each node's replica
// before proposing).
func TestTenantZnodeLimitExactUnderConcurrency(t *testing.T) {
	servers, hosts := startTenantCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, hosts...)
	if _, err := servers[0].CreateTenant(ctx, TenantRequest{Name: "tight", Port: port}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, servers, hosts, "tight", port)
	base := servers[0].Tenant("tight").TreeStats().Nodes
	const room = 25
	if _, err := servers[0].UpdateTenant(ctx, TenantRequest{Name: "tight", Port: port, MaxZnodes: base + room}); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		eventually(t, 10*time.Second, "the limit in force on every node", func() bool {
			tn := s.tenants.get("tight")
			return tn != nil && tn.door.LimitsOf().MaxZnodes == base+room
		})
	}
	const perNode, perConn, writers = 3, 4, 10 // 3 nodes x 3 connections x 10 writers x 4 creates = 360
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 3*perNode*writers)
	start := make(chan struct{})
	for i, s := range servers {
		for c := 0; c < perNode; c++ {
			zc, _ := connectZK(t, s.TenantAddr("tight"))
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for k := 0; k < perConn; k++ {
						_, err := zc.Create(fmt.Sprintf("/n%d-%d-%d-%d", i, c, w, k), nil, 0, gozk.WorldACL(gozk.PermAll))
						switch {
						case err == nil:
							ok.Add(1)
						case strings.Contains(err.Error(), "-125"): // QuotaExceeded
							refused.Add(1)
						default:
							errs <- err
							return
						}
					}
				}()
			}
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ok.Load() != room || refused.Load() != 3*perNode*writers*perConn-room {
		t.Fatalf("%d creates succeeded, %d refused; want exactly %d", ok.Load(), refused.Load(), room)
	}
	var counted int64
	for i, s := range servers {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d's replica caught up", i+1), func() bool {
			return s.Tenant("tight").TreeStats().Nodes == base+room
		})
		counted += s.tenants.get("tight").door.LimitCounts().QuotaExceeded
	}
	if counted != refused.Load() {
		t.Fatalf("quota refusals counted %d over the nodes, %d seen by the clients", counted, refused.Load())
	}
}
