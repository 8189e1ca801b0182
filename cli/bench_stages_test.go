package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/bench"
	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/server/stagetrace"
)

// bench --stages against a node that records its write stages joins them
// into a table of the measured writes; against one that does not, it says
// how to turn the recording on.
func TestBenchStages(t *testing.T) {
	defer stagetrace.SetOn(stagetrace.On())
	stagetrace.SetOn(false)
	srv := startTestServer(t, server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0",
		AdminAddr: "127.0.0.1:0", PeerAddr: freeAddr(t)}, 60*time.Second)
	args := []string{"--addr", srv.ClientAddr(), "--workload", "set", "--connections", "1", "--outstanding", "1",
		"--ops", "200", "--warmup", "100ms", "--keyspace", "10", "--progress", "0", "--stages", srv.AdminAddr()}
	if _, _, err := runBenchCLI(args...); err == nil || !strings.Contains(err.Error(), stagetrace.Env+"=1") {
		t.Fatalf("--stages against a node not recording: %v", err)
	}

	stagetrace.SetOn(true)
	defer stagetrace.Reset()
	out, _, err := runBenchCLI(append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Stages == nil || res.Stages.Writes < 150 || len(res.Stages.Logs) != 1 || res.Stages.Logs[0].SavesPerSec == 0 {
		t.Fatalf("stages of 200 sets: %+v", res.Stages)
	}
	names := map[string]bool{}
	for _, s := range res.Stages.Stages {
		names[s.Name] = s.N > 0 && s.P50 >= 0
	}
	for _, want := range []string{"L: log append + fsync", "L: apply", "total: frame read → reply written"} {
		if !names[want] {
			t.Errorf("no stage %q in %v", want, names)
		}
	}
}
