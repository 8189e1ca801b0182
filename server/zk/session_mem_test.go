package zk

import (
	"net"
	"runtime"
	"testing"
)

// idleSessionCost opens n sessions on a one-node door and returns the heap
// plus goroutine stacks each held idle session adds, after a full GC (the
// test's client ends of the sockets are counted in, a few hundred bytes).
func idleSessionCost(t *testing.T, n int) float64 {
	t.Helper()
	s := startDoor(t)
	dialSession(t, s) // the first session's one-off costs stay out
	before := liveMemory()
	ncs := make([]net.Conn, 0, n)
	for range n {
		ncs = append(ncs, dialSession(t, s))
	}
	after := liveMemory()
	runtime.KeepAlive(ncs)
	return float64(after-before) / float64(n)
}

// liveMemory is the heap in use plus goroutine stacks after a full GC
// (which also shrinks stacks that grew while a request ran).
func liveMemory() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// TestIdleSessionMemory bounds what a held idle session costs the server:
// with a 32 KiB read buffer kept for the connection's life and a writer
// goroutine parked beside the reader it was 47.5 KB; now the reader
// borrows a large buffer only while input streams in and the writer runs
// only while there is output (12 KB: the reader's stack, the connection,
// the session's replicated record). ZooKeeper 3.8 measured 23-67 kB of RSS
// per session (docs/performance.md).
func TestIdleSessionMemory(t *testing.T) {
	per := idleSessionCost(t, 300)
	t.Logf("%.0f bytes of heap and stack per idle session", per)
	if per > 20_000 {
		t.Fatalf("%.0f bytes per idle session, want at most 20,000", per)
	}
}
