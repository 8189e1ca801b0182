package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestAdminEndpoints(t *testing.T) {
	s := startTestServer(t, func(c *Config) { c.AdminDisabled = false; c.AdminAddr = "127.0.0.1:0" })
	base := "http://" + s.AdminAddr()
	code, body := httpGet(t, base+"/commands/monitor")
	var mon map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &mon) != nil {
		t.Fatalf("/commands/monitor: %d %s", code, body)
	}
	if mon["command"] != "monitor" || mon["znode_count"] != float64(5) || mon["server_state"] != "standalone" {
		t.Fatalf("monitor %v", mon)
	}
	if code, body := httpGet(t, base+"/commands/mntr"); code != 200 || !strings.Contains(body, `"command": "monitor"`) {
		t.Fatalf("4lw alias: %d %s", code, body)
	}
	if code, _ := httpGet(t, base+"/commands/nosuch"); code != 404 {
		t.Fatalf("unknown command answered %d", code)
	}
	code, body = httpGet(t, base+"/commands")
	if code != 200 || !strings.Contains(body, "/commands/connections") {
		t.Fatalf("/commands: %d %s", code, body)
	}
	code, body = httpGet(t, base+"/metrics")
	for _, want := range []string{"zk_znode_count 5", "raft_role 1", "zk_avg_fsynctime"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatal("/healthz")
	}
	// Ready once serving and registered in the replica directory, which
	// the cluster loop does right after start: poll as a probe would.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body := httpGet(t, base+"/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", code, body)
		}
	}
}
