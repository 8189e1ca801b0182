package peernet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/rs/zerolog"
)

// received collects what a transport hands to dragonboat.
type received struct {
	mu      sync.Mutex
	batches []raftpb.MessageBatch
	chunks  []raftpb.Chunk
	accept  bool // the chunk handler's answer
}

func (r *received) onBatch(b raftpb.MessageBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
}

func (r *received) onChunk(c raftpb.Chunk) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, c)
	return r.accept
}

func (r *received) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches), len(r.chunks)
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startTransport(t *testing.T, r *received) *Transport {
	t.Helper()
	nhc := config.NodeHostConfig{RaftAddress: "127.0.0.1:0"}
	tr := Factory{Log: zerolog.Nop()}.Create(nhc, r.onBatch, r.onChunk).(*Transport)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func sampleBatch(i int, cmd []byte) raftpb.MessageBatch {
	return raftpb.MessageBatch{
		SourceAddress: "127.0.0.1:1",
		BinVer:        1,
		Requests: []raftpb.Message{{
			Type:     raftpb.Replicate,
			To:       2,
			From:     1,
			ShardID:  1,
			Term:     uint64(i),
			LogIndex: uint64(10 * i),
			Commit:   uint64(9 * i),
			Entries:  []raftpb.Entry{{Term: uint64(i), Index: uint64(10*i + 1), Cmd: cmd}},
		}},
	}
}

func TestBatchesAndChunksArrive(t *testing.T) {
	r := &received{accept: true}
	tr := startTransport(t, r)
	addr := tr.Addr().String()

	conn, err := tr.GetConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Sizes around the buffers: empty, small, larger than the read buffer
	// and than the buffer a reader keeps.
	cmds := [][]byte{nil, []byte("set /a"), bytes.Repeat([]byte{7}, 200<<10), bytes.Repeat([]byte{9}, 5<<20), []byte("after the big one")}
	for i, cmd := range cmds {
		if err := conn.SendMessageBatch(sampleBatch(i+1, cmd)); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	waitFor(t, "every batch", func() bool { n, _ := r.counts(); return n == len(cmds) })
	for i, cmd := range cmds {
		got := r.batches[i].Requests[0]
		if got.Term != uint64(i+1) || got.LogIndex != uint64(10*(i+1)) || !bytes.Equal(got.Entries[0].Cmd, cmd) {
			t.Fatalf("batch %d arrived as term %d index %d with %d-byte cmd", i, got.Term, got.LogIndex, len(got.Entries[0].Cmd))
		}
	}

	sc, err := tr.GetSnapshotConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for i := uint64(0); i < 3; i++ {
		if err := sc.SendChunk(raftpb.Chunk{ShardID: 1, ReplicaID: 2, ChunkId: i, ChunkCount: 3, Data: bytes.Repeat([]byte{byte(i)}, 1<<20)}); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	waitFor(t, "every chunk", func() bool { _, n := r.counts(); return n == 3 })
	for i, c := range r.chunks {
		if c.ChunkId != uint64(i) || len(c.Data) != 1<<20 || c.Data[0] != byte(i) {
			t.Fatalf("chunk %d arrived as id %d with %d bytes", i, c.ChunkId, len(c.Data))
		}
	}
}

func TestRejectedChunkClosesTheConnection(t *testing.T) {
	r := &received{accept: false}
	tr := startTransport(t, r)
	sc, err := tr.GetSnapshotConnection(context.Background(), tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SendChunk(raftpb.Chunk{ShardID: 1, ChunkId: 0, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the chunk", func() bool { _, n := r.counts(); return n == 1 })
	// The receiver closed its end: a later send fails (the first ones may
	// still land in the socket buffer).
	waitFor(t, "a failed send", func() bool {
		return sc.SendChunk(raftpb.Chunk{ShardID: 1, ChunkId: 1, Data: []byte("y")}) != nil
	})
}

// frame builds a frame by hand: header with the given length and checksum.
func frame(payload []byte, length uint32, crc uint32) []byte {
	h := make([]byte, headerSize)
	binary.BigEndian.PutUint32(h, length)
	binary.BigEndian.PutUint32(h[4:], crc)
	return append(h, payload...)
}

func goodPayload(t *testing.T) []byte {
	t.Helper()
	b := sampleBatch(1, []byte("ok"))
	p, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadPeersAreDroppedAndNothingIsDelivered(t *testing.T) {
	r := &received{accept: true}
	tr := startTransport(t, r)
	addr := tr.Addr().String()
	good := goodPayload(t)
	crc := func(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }
	pre := func(v, kind byte) []byte { return append([]byte(magic), v, kind) }
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff}

	cases := map[string][]byte{
		"not our magic":     append([]byte("GET / HTTP/1.1\r\n"), frame(good, uint32(len(good)), crc(good))...),
		"another version":   append(pre(2, kindBatch), frame(good, uint32(len(good)), crc(good))...),
		"unknown kind":      append(pre(version, 9), frame(good, uint32(len(good)), crc(good))...),
		"oversize length":   append(pre(version, kindBatch), frame(nil, MaxFrame+1, 0)...),
		"bad checksum":      append(pre(version, kindBatch), frame(good, uint32(len(good)), crc(good)+1)...),
		"undecodable batch": append(pre(version, kindBatch), frame(garbage, uint32(len(garbage)), crc(garbage))...),
		"undecodable chunk": append(pre(version, kindChunk), frame(garbage, uint32(len(garbage)), crc(garbage))...),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(in); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadAll(c); err != nil {
				t.Fatalf("the transport did not close the connection: %v", err)
			}
		})
	}
	if n, m := r.counts(); n != 0 || m != 0 {
		t.Fatalf("bad input delivered %d batches and %d chunks", n, m)
	}

	// It still serves a well-behaved peer.
	conn, err := tr.GetConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SendMessageBatch(sampleBatch(1, []byte("ok"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the good batch", func() bool { n, _ := r.counts(); return n == 1 })
}

func TestCloseEndsIncomingConnections(t *testing.T) {
	r := &received{accept: true}
	nhc := config.NodeHostConfig{RaftAddress: "127.0.0.1:0"}
	tr := Factory{Log: zerolog.Nop()}.Create(nhc, r.onBatch, r.onChunk).(*Transport)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	addr := tr.Addr().String()
	idle, err := net.Dial("tcp", addr) // sends nothing: its reader waits
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	conn, err := tr.GetConnection(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SendMessageBatch(sampleBatch(1, nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the batch", func() bool { n, _ := r.counts(); return n == 1 })

	done := make(chan error, 1)
	go func() { done <- tr.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on open connections")
	}
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(idle); err != nil {
		t.Fatalf("an incoming connection outlived Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still listening after Close")
	}
}

func TestValidAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7000": true, "node-1.example:1": true, "[::1]:7000": true,
		"127.0.0.1": false, ":7000": false, "127.0.0.1:0": false, "127.0.0.1:65536": false, "127.0.0.1:x": false, "": false,
	} {
		if got := ValidAddress(addr); got != want {
			t.Errorf("ValidAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}

// FuzzIncoming feeds arbitrary bytes to what reads a peer connection: the
// preamble, the frames and their decoding. Nothing may panic.
func FuzzIncoming(f *testing.F) {
	b := sampleBatch(1, []byte("seed"))
	p, _ := b.Marshal()
	seed := append(append([]byte(magic), version, kindBatch), frame(p, uint32(len(p)), crc32.Checksum(p, castagnoli))...)
	f.Add(seed)
	c := raftpb.Chunk{ShardID: 1, Data: []byte("chunk")}
	cp, _ := c.Marshal()
	f.Add(append(append([]byte(magic), version, kindChunk), frame(cp, uint32(len(cp)), crc32.Checksum(cp, castagnoli))...))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr := &Transport{onBatch: func(raftpb.MessageBatch) {}, onChunk: func(raftpb.Chunk) bool { return true }, log: zerolog.Nop()}
		r := bufioReader(in)
		kind, err := readPreamble(r)
		if err != nil {
			return
		}
		fr := frameReader{r: r}
		for {
			payload, err := fr.next()
			if err != nil {
				return
			}
			if err := tr.deliver(kind, payload); err != nil {
				return
			}
		}
	})
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
