package bridgebench

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server"
)

func startNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := ln.Addr().String()
	ln.Close()
	cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: peer, AdminDisabled: true, NativeAddr: "127.0.0.1:0"}
	s, err := server.New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.NativeAddr()
}

// Every workload runs against a real node and reports sensible figures.
func TestWorkloadsRunAgainstANode(t *testing.T) {
	addr := startNode(t)
	for _, w := range Workloads {
		cfg := Config{Workload: w, Addrs: []string{addr}, Duration: 700 * time.Millisecond, Leases: 50, TTL: 4 * time.Second,
			Heartbeat: 200 * time.Millisecond, Streams: 2, Subscribers: 2, Rate: 200, Writers: 4, Znodes: 300, Pids: []int{os.Getpid()}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		rs, err := Run(ctx, cfg, &strings.Builder{})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		r := rs[0]
		if r.System != "zkbridge" || r.Ops == 0 || r.Errors != 0 || r.PeakRSSMiB <= 0 {
			t.Fatalf("%s: %+v", w, r)
		}
		switch w {
		case "leases":
			if r.Held != 50 || r.Lost != 0 {
				t.Fatalf("leases held %d lost %d, want 50 and 0", r.Held, r.Lost)
			}
		case "feed":
			if !strings.Contains(r.Note, " 0 deliveries missing") {
				t.Fatalf("feed: %s", r.Note)
			}
		case "snapshot":
			if r.Ops != 301 { // the subtree's root and its 300 children
				t.Fatalf("snapshot of %d nodes, want 301", r.Ops)
			}
		}
		t.Logf("%s", Table(rs))
	}
}
