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
