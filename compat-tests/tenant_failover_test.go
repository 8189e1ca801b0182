package compattests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// tenantRow is what /tenants says of one tenant (server.TenantInfo's
// fields the test reads).
type tenantRow struct {
	Name     string   `json:"name"`
	Shard    uint64   `json:"shard"`
	Replicas []uint64 `json:"replicas"`
	Hosted   bool     `json:"hosted"`
	Leader   uint64   `json:"leader"`
}

func (c *ProcCluster) tenants(i int) (map[string]tenantRow, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + c.Nodes[i].Admin + "/tenants")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rows []tenantRow
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return nil, err
	}
	out := map[string]tenantRow{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out, nil
}

// TestTenantFailover kills (SIGKILL) the node leading one tenant's shard:
// that tenant elects another leader and serves again, while another
// tenant, led elsewhere, keeps serving its writer without an error.
func TestTenantFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process zkbridge cluster")
	}
	c := StartProcCluster(t, 3, ClusterOptions{DistinctHosts: true})
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"alpha", "beta"}
	for i, name := range names {
		if err := c.AdminPost(0, "/tenants/create", url.Values{"name": {name}, "port": {strconv.Itoa(ports[i])}}); err != nil {
			t.Fatal(err)
		}
	}
	addr := func(node int, tenant string) string {
		host, _, _ := net.SplitHostPort(c.Nodes[node].Client)
		return net.JoinHostPort(host, strconv.Itoa(ports[slices.Index(names, tenant)]))
	}
	// Every node hosts both; the leaders spread: alpha's and beta's on
	// different nodes.
	var rows map[string]tenantRow
	deadline := time.Now().Add(90 * time.Second)
	for {
		rows, err = c.tenants(0)
		if err == nil && rows["alpha"].Leader != 0 && rows["beta"].Leader != 0 && rows["alpha"].Leader != rows["beta"].Leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenants' leaders not spread within 90 s: %+v %v", rows, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	victim := int(rows["alpha"].Leader) - 1
	betaLeader := int(rows["beta"].Leader) - 1
	survivor := 3 - victim - betaLeader // the third node
	t.Logf("alpha led by node %d (to be killed), beta by node %d", victim+1, betaLeader+1)

	// Beta's writer, through a node that lives, for the whole test.
	// Its session first (bounded): the survivor may learn beta's leader a
	// few milliseconds after node 1 does and refuse the first handshake
	// ("no Raft leader"), and a request queued meanwhile fails with
	// ErrNoServer when go-zookeeper's round of the one address ends.
	bz := gzConnect(t, []string{addr(survivor, "beta")}, 10*time.Second, nil)
	if _, err := bz.Create("/w", nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	type sample struct {
		took time.Duration
		err  error
	}
	stop := make(chan struct{})
	samples := make(chan []sample, 1)
	go func() {
		var out []sample
		for {
			select {
			case <-stop:
				samples <- out
				return
			default:
			}
			start := time.Now()
			_, err := bz.Set("/w", []byte("x"), -1)
			out = append(out, sample{time.Since(start), err})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)

	killed := time.Now()
	c.Kill(victim)
	// Alpha serves again through a surviving node: a write succeeds.
	az, _, err := gozk.Connect([]string{addr(survivor, "alpha"), addr(betaLeader, "alpha")}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer az.Close()
	var last error
	for {
		if _, last = az.Create(fmt.Sprintf("/after-%d", time.Now().UnixNano()), nil, 0, gozk.WorldACL(gozk.PermAll)); last == nil {
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("alpha does not serve writes within 60 s of its leader's kill: %v", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	failover := time.Since(killed)
	rows, err = c.tenants(survivor)
	if err != nil || rows["alpha"].Leader == 0 || int(rows["alpha"].Leader)-1 == victim {
		t.Fatalf("alpha's leader after the kill: %+v %v", rows["alpha"], err)
	}
	time.Sleep(time.Second)
	close(stop)
	got := <-samples
	var worst time.Duration
	for _, s := range got {
		if s.err != nil {
			t.Fatalf("beta's writer failed while alpha's leader was killed: %v", s.err)
		}
		worst = max(worst, s.took)
	}
	t.Logf("alpha wrote again %v after its leader's kill (node %d leads it now); beta: %d writes, none failed, slowest %v",
		failover.Round(time.Millisecond), rows["alpha"].Leader, len(got), worst.Round(time.Millisecond))
	// Beta's writes went on: a write waiting a whole election (beyond the
	// 1 s election timeout and its retries) would mean it was affected.
	if worst > 3*time.Second {
		t.Fatalf("beta's slowest write took %v while alpha failed over", worst)
	}
}
