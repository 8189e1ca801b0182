package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
)

func TestRaftCommandsTalkToANode(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", PeerAddr: freeAddr(t)}
	srv := startTestServer(t, cfg, 30*time.Second)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := NewApp(&out, &out).Run(append([]string{"zkbridge", "raft"}, args...))
		return out.String(), err
	}
	out, err := run("status", "--admin", srv.AdminAddr(), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st server.RaftStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Role != "leader" || len(st.Voters) != 1 {
		t.Fatalf("status %q: %+v %v", out, st, err)
	}
	if out, err := run("leader", "--admin", srv.AdminAddr()); err != nil || !strings.HasPrefix(out, "1 ") {
		t.Fatalf("leader: %q %v", out, err)
	}
	if _, err := run("remove-voter", "--admin", srv.AdminAddr(), "1"); err == nil || !strings.Contains(err.Error(), "majority") {
		t.Fatalf("removing the only voter must be refused without --force: %v", err)
	}
	if _, err := run("transfer-leader", "1", "--admin", srv.AdminAddr()); err == nil || !strings.Contains(err.Error(), "put flags first") {
		t.Fatalf("flags after arguments: %v", err)
	}
}
