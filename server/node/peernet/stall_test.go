package peernet

import (
	"errors"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A reader that runs before the stall watcher after a pause (SIGCONT wakes
// every goroutine at once) discards what it reads and closes its
// connection instead of handing dragonboat the backlog; once the watcher
// has run, frames are delivered again.
func TestReadsBeforeTheStallWatcherRunsAreDiscarded(t *testing.T) {
	p := goodPayload(t)
	wire := append(append([]byte(magic), version, kindBatch), frame(p, uint32(len(p)), crc32.Checksum(p, castagnoli))...)
	read := func(tr *Transport) error {
		server, client := net.Pipe()
		defer server.Close()
		go func() {
			_, _ = client.Write(wire)
			_ = client.Close()
		}()
		return tr.readFrames(server)
	}

	r := &received{}
	tr := &Transport{onBatch: r.onBatch, onChunk: r.onChunk, log: zerolog.Nop()}
	tr.lastRun.Store(int64(time.Since(processStart) - 3*time.Second)) // paused 3 s, watcher not run yet
	if err := read(tr); !errors.Is(err, errStale) {
		t.Fatalf("read after a stall: %v, want errStale", err)
	}
	if n, _ := r.counts(); n != 0 {
		t.Fatalf("%d stale batches delivered", n)
	}

	tr.lastRun.Store(int64(time.Since(processStart))) // the watcher ran
	_ = read(tr)                                      // ends at the client's close
	if n, _ := r.counts(); n != 1 {
		t.Fatalf("%d batches delivered once the watcher ran, want 1", n)
	}
}

// The watcher ticks every stallCheckEvery (100 ms, it was 20 ms: issue 36)
// and measures a stall from the last sign that the process ran: its own
// tick or a fresh frame read. A read marks that the process runs, and a
// gap since the last mark of stallThreshold is a stall even though the
// watcher itself ticked less than that ago.
func TestStallsAreMeasuredFromTheLastSignOfLife(t *testing.T) {
	p := goodPayload(t)
	wire := append(append([]byte(magic), version, kindBatch), frame(p, uint32(len(p)), crc32.Checksum(p, castagnoli))...)
	r := &received{}
	tr := &Transport{onBatch: r.onBatch, onChunk: r.onChunk, log: zerolog.Nop()}

	before := time.Since(processStart) - stallThreshold/2
	tr.lastRun.Store(int64(before))
	server, client := net.Pipe()
	go func() {
		_, _ = client.Write(wire)
		_ = client.Close()
	}()
	_ = tr.readFrames(server) // ends at the client's close
	_ = server.Close()
	if n, _ := r.counts(); n != 1 {
		t.Fatalf("%d batches delivered, want 1", n)
	}
	if got := time.Duration(tr.lastRun.Load()); got <= before {
		t.Fatalf("a fresh read did not mark that the process runs (last run %v, before the read %v)", got, before)
	}

	tr.lastRun.Store(1) // replaced when the watcher starts
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.watchStalls(stop)
	}()
	defer func() {
		close(stop)
		<-done
	}()
	waitFor(t, "the watcher's start", func() bool { return tr.lastRun.Load() != 1 })
	tr.lastRun.Store(int64(time.Since(processStart) - 3*time.Second)) // not seen running for 3 s
	waitFor(t, "the stall noticed", func() bool { return tr.Stalls() == 1 })
}
