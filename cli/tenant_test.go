package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/internal/freeport"
	"github.com/zkbridge/zkbridge/server"
)

func TestTenantCommandsTalkToANode(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", PeerAddr: freeAddr(t)}
	srv := startTestServer(t, cfg, 30*time.Second)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := NewApp(&out, &out).Run(append([]string{"zkbridge", "tenant"}, args...))
		return out.String(), err
	}
	port := freePort(t)
	out, err := run("create", "--admin", srv.AdminAddr(), "--port", strconv.Itoa(port), "--max-znodes", "50", "--json", "kafka-a")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	var info server.TenantInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Name != "kafka-a" || info.Shard != 2 || info.Port != port || info.MaxZnodes != 50 {
		t.Fatalf("create printed %q: %+v %v", out, info, err)
	}
	if _, err := run("create", "--admin", srv.AdminAddr(), "kafka-a"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second create: %v", err)
	}
	if _, err := run("create", "kafka-b", "--admin", srv.AdminAddr()); err == nil || !strings.Contains(err.Error(), "put flags first") {
		t.Fatalf("flags after the name: %v", err)
	}
	// An update changes what it is given and keeps the rest.
	if out, err := run("update", "--admin", srv.AdminAddr(), "--max-sessions", "7", "kafka-a"); err != nil || !strings.Contains(out, "updated") {
		t.Fatalf("update: %q %v", out, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for (srv.Tenant("kafka-a") == nil || !srv.Tenant("kafka-a").Serving()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out, err = run("list", "--admin", srv.AdminAddr(), "--json")
	var list []server.TenantInfo
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("list: %q %v", out, err)
	}
	if got := list[0]; got.Port != port || got.MaxZnodes != 50 || got.MaxSessions != 7 || !got.Hosted || got.Leader != 1 {
		t.Fatalf("listed %+v; want port %d, max znodes 50 kept, max sessions 7, hosted and led by 1", got, port)
	}
	if out, err := run("list", "--admin", srv.AdminAddr()); err != nil || !strings.Contains(out, "kafka-a") || !strings.Contains(out, "OPS/S") {
		t.Fatalf("list table: %q %v", out, err)
	}
	// /metrics labels every tenant's figures, the default's included.
	resp, err := http.Get("http://" + srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`zkbridge_tenant_znode_count{tenant="kafka-a"}`, `zkbridge_tenant_znode_count{tenant="default"}`,
		`zkbridge_tenant_quota_exceeded_total{tenant="kafka-a"} 0`, "\nzk_znode_count "} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
	if out, err := run("delete", "--admin", srv.AdminAddr(), "kafka-a"); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %q %v", out, err)
	}
	if _, err := run("delete", "--admin", srv.AdminAddr(), "kafka-a"); err == nil || !strings.Contains(err.Error(), "no such tenant") {
		t.Fatalf("delete of a deleted tenant: %v", err)
	}
}

// freePort is a loopback port that was free a moment ago, below the
// kernel's ephemeral range (a tenant's port must be chosen before the
// server binds it).
func freePort(t *testing.T) int {
	t.Helper()
	port, err := freeport.Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
