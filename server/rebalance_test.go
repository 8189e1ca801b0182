package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
)

func TestPlanRebalance(t *testing.T) {
	three := func(names ...string) []sm.Tenant {
		var out []sm.Tenant
		for _, n := range names {
			out = append(out, sm.Tenant{Name: n, Replicas: []uint64{1, 2, 3}})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		voters  []uint64
		tenants []sm.Tenant
		removed map[string]map[uint64]bool
		want    []RebalanceMove
	}{
		{name: "balanced already", voters: []uint64{1, 2, 3}, tenants: three("a", "b")},
		{name: "a fourth node takes one replica of each of the most loaded, in name order",
			voters: []uint64{1, 2, 3, 4}, tenants: three("a", "b", "c"),
			want: []RebalanceMove{{"a", 3, 4}, {"b", 2, 4}}},
		{name: "a node the shard was removed from is skipped",
			voters: []uint64{1, 2, 3, 4}, tenants: three("a", "b", "c"),
			removed: map[string]map[uint64]bool{"a": {4: true}},
			want:    []RebalanceMove{{"b", 3, 4}, {"c", 2, 4}}},
		{name: "a replica on a node that left moves first",
			voters: []uint64{1, 2, 4}, tenants: three("a"),
			want: []RebalanceMove{{"a", 3, 4}}},
		{name: "one replica each on 3 of 6 nodes: within one, nothing to do",
			voters: []uint64{1, 2, 3, 4, 5, 6}, tenants: three("a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRebalance(tc.voters, tc.tenants, tc.removed)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTenantRebalanceOntoANewNode: three tenants on all three nodes, a
// fourth node joins; a rebalance interrupted in its first move, then run
// again (asked of the new node, which forwards each move to a node hosting
// the tenant), moves two replicas onto it while a client writes to a
// moving tenant through a node that keeps it. After it:
// every node hosts 2-3 tenant shards, the moved replicas' data is gone
// from their old nodes, every tenant serves its data through every node,
// and the writer saw nothing worse than a connection loss it retried.
func TestTenantRebalanceOntoANewNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-node cluster")
	}
	hosts := tenantHosts(4)
	withAdmin := func(c *Config) {
		c.ClientAddr = hosts[c.ReplicaID-1] + ":0"
		c.AdminDisabled = false
		c.AdminAddr = hosts[c.ReplicaID-1] + ":0"
	}
	servers := startClusterWith(t, 3, 100*time.Millisecond, withAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	names := []string{"ta", "tb", "tc"}
	ports := map[string]int{}
	for _, name := range names {
		ports[name] = freeTenantPort(t, hosts...)
		if _, err := servers[0].CreateTenant(ctx, TenantRequest{Name: name, Port: ports[name], Replicas: 3}); err != nil {
			t.Fatal(err)
		}
	}
	tenantAt := func(i int, name string) string { return net.JoinHostPort(hosts[i], strconv.Itoa(ports[name])) }
	for _, name := range names {
		waitTenantServing(t, servers, hosts[:3], name, ports[name])
		zc, _ := connectZK(t, tenantAt(0, name))
		if _, err := zc.Create("/data", []byte(name), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
		zc.Close()
	}

	// Node 4 joins the cluster: started first (it waits to be contacted),
	// then added as a voter.
	addr := freeAddr(t)
	cfg := Config{DataDir: t.TempDir(), PeerAddr: addr, ReplicaID: 4, Join: true, TickTime: 100 * time.Millisecond,
		Peers: map[uint64]string{4: addr}, FourLetterWords: []string{"*"}}
	withAdmin(&cfg)
	joined, err := New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Int("node", 4).Logger())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- joined.Start(ctx) }()
	if err := servers[leaderOf(t, servers)].node.AddVoter(ctx, 4, addr); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(joined.Stop)
	servers = append(servers, joined)

	// A client of tenant ta writes through node 1 during the rebalance.
	var writes, lost atomic.Int64
	var writeErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		zc, _, err := gozk.Connect([]string{tenantAt(0, "ta")}, 10*time.Second, gozk.WithLogInfo(false))
		if err != nil {
			writeErr.Store(err)
			return
		}
		defer zc.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := zc.Set("/data", []byte(fmt.Sprintf("w%d", i)), -1)
			switch {
			case err == nil:
				writes.Add(1)
			case errors.Is(err, gozk.ErrConnectionClosed), errors.Is(err, gozk.ErrNoServer):
				lost.Add(1) // ConnectionLoss: the client reconnects and retries
				time.Sleep(20 * time.Millisecond)
			default:
				writeErr.Store(fmt.Errorf("write %d: %w", i, err))
				return
			}
		}
	}()

	// A first run is interrupted once its first move's new replica has
	// caught up (the command killed): the move stays recorded in the
	// registry, and the next run finishes it before planning again.
	var events []RebalanceEvent
	cut, stopRun := context.WithCancel(ctx)
	_, err = servers[0].RebalanceTenants(cut, false, func(e RebalanceEvent) {
		events = append(events, e)
		if e.Step == "promoting" {
			stopRun()
		}
	})
	stopRun()
	if err == nil {
		t.Fatalf("the interrupted rebalance ended without an error (events %+v)", events)
	}
	list, lerr := servers[0].node.Tenants()
	if lerr != nil {
		t.Fatal(lerr)
	}
	var unfinished int
	for _, spec := range list {
		if len(spec.Joining)+len(spec.Leaving) > 0 {
			unfinished++
		}
	}
	if unfinished != 1 {
		t.Fatalf("after the interruption %d tenants record a move in progress, want 1: %+v", unfinished, list)
	}
	// Again, through the new node, which hosts none of the tenants yet: it
	// has a hosting node carry out each move and passes its progress on.
	events = nil
	res, err := joined.RebalanceTenants(ctx, false, func(e RebalanceEvent) { events = append(events, e) })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("rebalance: %v (events %+v)", err, events)
	}
	if res.Resumed != 1 || res.Moved != 1 || res.Failed != 0 {
		t.Fatalf("rebalance resumed %d, moved %d, failed %d; want the interrupted move finished and one more (events %+v)",
			res.Resumed, res.Moved, res.Failed, events)
	}
	if v := writeErr.Load(); v != nil {
		t.Fatalf("the writer during the rebalance: %v", v)
	}
	if writes.Load() == 0 {
		t.Fatal("the writer wrote nothing during the rebalance")
	}
	var sawCatchUp bool
	for _, e := range events {
		sawCatchUp = sawCatchUp || (e.Step == "catching_up" && e.Target > 0)
	}
	if !sawCatchUp {
		t.Fatalf("no catching_up progress reported: %+v", events)
	}
	t.Logf("rebalance: 1 resumed and %d moves in %.1f s, %d leader transfers; the writer: %d writes, %d connection losses; replicas per node %v, leaders %v",
		res.Moved, res.Seconds, res.LeaderTransfers, writes.Load(), lost.Load(), res.Replicas, res.Leaders)

	// Placement balanced, recorded, and no move left in progress.
	if list, err = servers[0].node.Tenants(); err != nil {
		t.Fatal(err)
	}
	load := map[uint64]int{}
	for _, spec := range list {
		if len(spec.Replicas) != 3 || len(spec.Joining) != 0 || len(spec.Leaving) != 0 {
			t.Fatalf("tenant %s after the rebalance: %+v", spec.Name, spec)
		}
		for _, id := range spec.Replicas {
			load[id]++
		}
	}
	if len(load) != 4 || slices.Max(mapValues(load))-slices.Min(mapValues(load)) > 1 {
		t.Fatalf("replicas per node after the rebalance: %v", load)
	}
	// Every replica hosts what the registry says, and only that: a moved
	// replica's Raft data and state are gone from its old node.
	for _, spec := range list {
		for i, s := range servers {
			id := uint64(i + 1)
			hosts := slices.Contains(spec.Replicas, id)
			eventually(t, 20*time.Second, fmt.Sprintf("node %d hosting tenant %s: %v", id, spec.Name, hosts), func() bool {
				_, err := os.Stat(node.TenantDir(s.cfg.DataDir, spec.Shard))
				onDisk := err == nil && s.node.HostsShardData(spec.Shard)
				return (s.Tenant(spec.Name) != nil) == hosts && onDisk == hosts
			})
		}
	}
	if _, err := os.Stat(filepath.Join(servers[3].cfg.DataDir, "tenants")); err != nil {
		t.Fatalf("the new node holds no tenant state: %v", err)
	}
	// Every tenant's data through every node (hosting or forwarding).
	for _, name := range names {
		for i := range servers {
			zc, _ := connectZK(t, tenantAt(i, name))
			if _, err := zc.Sync("/data"); err != nil {
				t.Fatal(err)
			}
			data, _, err := zc.Get("/data")
			if err != nil {
				t.Fatalf("tenant %s through node %d: %v", name, i+1, err)
			}
			if name != "ta" && string(data) != name {
				t.Fatalf("tenant %s through node %d: /data = %q", name, i+1, data)
			}
			zc.Close()
		}
	}
}

func mapValues(m map[uint64]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// RebalanceTenants in the native API streams the same steps: on one node
// with one tenant, the plan (nothing to move) and the summary last.
func TestNativeRebalanceTenants(t *testing.T) {
	s, nc, _ := startNativeServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port := int32(freeTenantPort(t, "127.0.0.1"))
	if _, err := nc.CreateTenant(ctx, &zkbridgev1.TenantSettings{Name: "fluss", Port: &port}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "fluss", int(port))
	stream, err := nc.RebalanceTenants(ctx, &zkbridgev1.RebalanceTenantsRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	var last *zkbridgev1.RebalanceEvent
	for {
		e, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %v: %v", steps, err)
		}
		steps, last = append(steps, e.Step), e
	}
	if !slices.Equal(steps, []string{"plan", "summary"}) || !last.Summary.DryRun || last.Summary.Replicas[1] != 1 || last.Summary.Leaders[1] != 2 {
		t.Fatalf("steps %v, last %+v", steps, last)
	}
}
