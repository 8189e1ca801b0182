package peernet

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/rs/zerolog"
)

// startTransportAt starts a receiving transport on addr.
func startTransportAt(t *testing.T, addr string, r *received) *Transport {
	t.Helper()
	tr := Factory{Log: zerolog.Nop()}.Create(config.NodeHostConfig{RaftAddress: addr}, r.onBatch, r.onChunk).(*Transport)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// A peer that is down is not a failed connection (which would trip
// dragonboat's circuit breaker for up to 1.5 s): messages to it are dropped
// and it is redialed, so once it listens again it hears from us within a
// fraction of an election timeout, also after it went down a second time.
func TestPeerDownIsRedialedNotFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now

	sender := startTransport(t, &received{})
	conn, err := sender.GetConnection(context.Background(), addr)
	if err != nil {
		t.Fatalf("GetConnection to a peer that is down: %v (want a redialing connection)", err)
	}
	defer conn.Close()
	if err := conn.SendMessageBatch(sampleBatch(1, nil)); err != nil {
		t.Fatalf("send to a peer that is down: %v (want it dropped)", err)
	}

	for round := 1; round <= 2; round++ {
		var r received
		peer := startTransportAt(t, addr, &r)
		up := time.Now()
		deadline := up.Add(5 * time.Second)
		for {
			if err := conn.SendMessageBatch(sampleBatch(round, nil)); err != nil {
				t.Fatalf("round %d: send: %v", round, err)
			}
			if n, _ := r.counts(); n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: nothing arrived within 5 s of the peer listening", round)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// redialMax plus scheduling; the breaker it replaces waited 0.25-1.5 s.
		if took := time.Since(up); took > time.Second {
			t.Errorf("round %d: the peer heard from us %v after it listened", round, took)
		}
		// The peer goes down again: sends keep succeeding (dropped).
		if err := peer.Close(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if err := conn.SendMessageBatch(sampleBatch(round, nil)); err != nil {
				t.Fatalf("round %d: send after the peer went down: %v", round, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}
