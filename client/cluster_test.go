package client

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server"
)

// freeAddr is a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCluster runs n nodes in this process, each with its native API on
// a free loopback port, and stops them at clean-up.
func startCluster(t *testing.T, n int, tick time.Duration, mutate func(*server.Config)) []*server.Server {
	t.Helper()
	peers := map[uint64]string{}
	for i := 1; i <= n; i++ {
		peers[uint64(i)] = freeAddr(t)
	}
	servers := make([]*server.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range servers {
		cfg := server.Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", NativeAddr: "127.0.0.1:0", PeerAddr: peers[uint64(i+1)],
			ReplicaID: uint64(i + 1), AdminDisabled: true, TickTime: tick}
		if n > 1 {
			cfg.Peers = peers
		}
		if mutate != nil {
			mutate(&cfg)
		}
		s, err := server.New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Int("node", i+1).Logger())
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errs[i] = servers[i].Start(ctx)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	for _, s := range servers {
		t.Cleanup(func() { stopWithin(t, s, 20*time.Second) })
	}
	return servers
}

// stopWithin stops a node, failing the test when that takes longer than d
// (a stream that holds a graceful shutdown up).
func stopWithin(t testing.TB, s *server.Server, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Errorf("%v did not stop within %v", s, d)
		<-done
	}
}

func nativeAddrs(servers []*server.Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.NativeAddr())
	}
	return out
}

func leaderOf(t *testing.T, servers []*server.Server, skip int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range servers {
			if i != skip && s.Node().IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no leader")
	return -1
}

func dial(t *testing.T, targets []string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, targets, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
