package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// The console's Tenants page lists every tenant with its shard, port,
// leader, placement, znodes, sessions and limits; the Tree, Sessions and
// figures pages read the tenant named by ?tenant= (its znodes, not the
// default tenant's; its sessions), keep it in their links, and an
// administrator's write lands in that tenant.
func TestConsoleShowsTenants(t *testing.T) {
	s := startTestServer(t, withConsole(true))
	admin := s.AdminAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host := strings.Split(s.ClientAddr(), ":")[0]
	port := freeTenantPort(t, host)
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "kafka-a", Port: port, MaxZnodes: 500}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "tenant serving", func() bool { return s.Tenant("kafka-a") != nil && s.Tenant("kafka-a").Serving() })
	zc, _ := connectZK(t, fmt.Sprintf("%s:%d", host, port))
	if _, err := zc.Create("/brokers", []byte("ids"), 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		return consoleDo(t, http.MethodGet, admin, path, "", "", nil)
	}
	code, body := get("/ui/tenants")
	if code != http.StatusOK || !strings.Contains(body, `id="t-kafka-a"`) || !strings.Contains(body, fmt.Sprint(port)) ||
		!strings.Contains(body, "500 /") || !strings.Contains(body, "tree?path=/&amp;tenant=kafka-a") {
		t.Fatalf("tenants page %d:\n%s", code, body)
	}
	code, body = get("/ui/tree?path=/&tenant=kafka-a")
	if code != http.StatusOK || !strings.Contains(body, `/ui/tree?path=%2fbrokers&amp;tenant=kafka-a`) || !strings.Contains(body, `id="tenant">kafka-a`) {
		t.Fatalf("tenant's tree %d:\n%s", code, body)
	}
	if _, body = get("/ui/tree?path=/"); strings.Contains(body, "brokers") {
		t.Fatalf("the default tenant's tree shows the tenant's /brokers:\n%s", body)
	}
	code, body = get("/ui/sessions?tenant=kafka-a")
	if code != http.StatusOK || strings.Count(body, `class="session-row"`) != 1 || !strings.Contains(body, "of tenant kafka-a") {
		t.Fatalf("tenant's sessions %d:\n%s", code, body)
	}
	code, body = get("/ui/tenant?tenant=kafka-a")
	if code != http.StatusOK || !strings.Contains(body, "zk_znode_count") || !strings.Contains(body, `id="tenant-role">leader`) {
		t.Fatalf("tenant's figures %d:\n%s", code, body)
	}
	if code, _ = get("/ui/tree?path=/&tenant=nope"); code != http.StatusNotFound {
		t.Fatalf("an unknown tenant: %d", code)
	}
	// An administrator's write in the tenant (confirmed) lands there.
	form := url.Values{"op": {"create"}, "path": {"/from-console"}, "data": {"x"}, "tenant": {"kafka-a"}, "confirm": {"yes"}}
	_, page := consoleDo(t, http.MethodGet, admin, "/ui/tree?path=/&tenant=kafka-a", consoleUser, consolePass, nil)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the administrator's page:\n%s", page)
	}
	form.Set("csrf", m[1])
	if code, body = consoleDo(t, http.MethodPost, admin, "/ui/tree/write", consoleUser, consolePass, form); code != http.StatusOK || !strings.Contains(body, "done") {
		t.Fatalf("write in the tenant %d: %s", code, body)
	}
	if ok, _, err := zc.Exists("/from-console"); err != nil || !ok {
		t.Fatalf("the console's create is not in the tenant: %v %v", ok, err)
	}
}
