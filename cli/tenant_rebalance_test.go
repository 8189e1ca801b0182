package cli

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

// The command's output on one node (nothing to move): the plan, the
// summary, JSON lines with the summary last; arguments refused. The moves
// themselves are tested on a 4-node cluster (server.TestTenantRebalanceOntoANewNode).
func TestTenantRebalanceCommand(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", PeerAddr: freeAddr(t)}
	srv := startTestServer(t, cfg, 30*time.Second)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := NewApp(&out, &out).Run(append([]string{"zkbridge", "tenant"}, args...))
		return out.String(), err
	}
	if out, err := run("create", "--admin", srv.AdminAddr(), "--port", strconv.Itoa(freePort(t)), "kafka-a"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	out, err := run("rebalance", "--admin", srv.AdminAddr(), "--dry-run")
	if err != nil || !strings.Contains(out, "plan: nothing to move") || !strings.Contains(out, "dry run: 0 moves planned") ||
		!strings.Contains(out, "tenant replicas per node: node 1: 1") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, err = run("rebalance", "--admin", srv.AdminAddr(), "--json")
	if err != nil {
		t.Fatalf("rebalance --json: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last server.RebalanceEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Step != "summary" || last.Summary == nil ||
		last.Summary.DryRun || last.Summary.Moved != 0 || last.Summary.Leaders[1] != 2 {
		t.Fatalf("the last JSON line is not the summary (the node leads both shards): %q %v", lines[len(lines)-1], err)
	}
	if _, err := run("rebalance", "--admin", srv.AdminAddr(), "kafka-a"); err == nil || !strings.Contains(err.Error(), "no arguments") {
		t.Fatalf("an argument: %v", err)
	}
}
