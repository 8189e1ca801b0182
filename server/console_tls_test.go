package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
)

// With admin.forceHttps the console is on HTTPS: a browser's client
// certificate listed in admin_users signs it in as an administrator, and
// the Cluster page reaches the other nodes' admin ports over HTTPS too.
func TestConsoleOverHTTPSWithClientCertificates(t *testing.T) {
	f := newTLSFixture(t)
	servers := startClusterWith(t, 3, 50*time.Millisecond, func(c *Config) {
		c.TLS.Client = f.settings("need")
		c.AdminDisabled = false
		c.AdminAddr = "127.0.0.1:0"
		c.TLS.AdminHTTPS = true
		c.AdminUsers = []string{"x509:CN=ops"}
	})
	leaf, err := f.ca.Issue(tlstest.Options{CN: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := leaf.WritePEMKeyStore(t.TempDir(), "ops.pem")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconf.ClientFiles{CA: f.trust, Cert: store}.Config()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	get := func(path string) string {
		t.Helper()
		resp, err := hc.Get("https://" + servers[0].AdminAddr() + path)
		if err != nil {
			t.Fatalf("GET %s over HTTPS: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		nodes := get("/ui/cluster/nodes")
		rows, errs := strings.Count(nodes, `class="node-row`), strings.Count(nodes, `class="error"`)
		if rows == 3 && errs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Cluster page over HTTPS: %d rows, %d errors:\n%s", rows, errs, nodes)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The Raft status asks every replica's admin port for its progress,
	// over HTTPS too: no replica is left "unknown".
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := servers[0].Status(ctx)
		cancel()
		unanswered := 0
		for _, r := range st.Replicas {
			if r.Error != "" || r.Role == "unknown" {
				unanswered++
			}
		}
		if err == nil && len(st.Replicas) == 3 && unanswered == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raft status over HTTPS admin ports: %v %+v", err, st.Replicas)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if page := get("/ui/tree?path=/"); !strings.Contains(page, `id="admin-user">CN=ops<`) {
		t.Fatalf("the client certificate did not sign in as the administrator CN=ops:\n%s", page)
	}
}
