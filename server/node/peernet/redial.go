package peernet

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"
)

// A message connection that fails makes dragonboat trip its circuit
// breaker for that peer: nothing is sent to it for 0.25 to 1.5 s (an
// exponential back-off, at least 500 ms ± 50 % after the first failure).
// A peer that restarts meanwhile hears nothing from the leader for that
// long, far past a 200 ms election timeout: it has no leader, so it grants
// its (pre)vote to any candidate, and the first hiccup of the leader (a
// few hundred milliseconds without heartbeats, common on a loaded host)
// lets the other follower win an election it could not win alone (issue
// 34, defect 2: a restarted follower caused an election each time).
//
// So a message connection never fails towards dragonboat for a peer that
// is merely down: while it cannot reach the peer it drops the batches it is
// given, as a lossy network would (Raft retransmits what matters), and
// redials in the background every few tens of milliseconds. A restarted
// peer hears the leader within redialMax of listening, before its election
// timeout. Only a refusal that says something is wrong with the peer (a
// TLS handshake failure) is still an error.
const (
	redialMin     = 20 * time.Millisecond
	redialMax     = 100 * time.Millisecond
	redialTimeout = time.Second
)

// batchConn sends Raft message batches. dragonboat uses each connection
// from one goroutine (SendMessageBatch and Close); the flusher (flow.go)
// sends held messages from another, hence mu.
type batchConn struct {
	t      *Transport
	target string

	mu     sync.Mutex
	w      *frameWriter // the live connection; nil while the peer is down
	header raftpb.MessageBatch
	held   map[flowKey]*held // messages held back from a slow peer replica

	holding atomic.Bool // held is not empty: answers wake the flusher

	redialing bool
	up        chan *frameWriter // the redialer's new connection
	wakeC     chan struct{}     // a held replica has room again
	heldC     chan struct{}     // a message was held: the flusher starts ticking
	flushes   atomic.Int64      // the flusher's rounds (tests: none while nothing is held)
	stop      chan struct{}
	stopOnce  sync.Once
}

// peerDown reports whether err is a failure to reach target at all (no
// listener, no route), as opposed to a peer that answered and refused.
func peerDown(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

func newBatchConn(t *Transport, target string, c net.Conn) *batchConn {
	b := &batchConn{t: t, target: target, up: make(chan *frameWriter, 1), wakeC: make(chan struct{}, 1),
		heldC: make(chan struct{}, 1), stop: make(chan struct{}), held: map[flowKey]*held{}}
	if c != nil {
		b.w = newFrameWriter(c, kindBatch)
	} else {
		b.startRedial()
	}
	go b.flusher()
	return b
}

func (b *batchConn) SendMessageBatch(batch raftpb.MessageBatch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.connected() {
		return nil // down: dropped
	}
	b.header = raftpb.MessageBatch{DeploymentId: batch.DeploymentId, SourceAddress: batch.SourceAddress, BinVer: batch.BinVer}
	send := batch.Requests[:0:0]
	for _, m := range batch.Requests {
		if !flowControlled(m.Type) {
			send = append(send, m)
			continue
		}
		k := flowKey{m.ShardID, m.To}
		if h := b.held[k]; h != nil || !b.t.flows.admit(k, b) {
			if h == nil {
				h = &held{}
				b.held[k] = h
				b.holding.Store(true)
				select {
				case b.heldC <- struct{}{}:
				default:
				}
			}
			h.add(m)
			continue
		}
		send = append(send, m)
	}
	if len(send) == 0 {
		return nil
	}
	if len(send) == len(batch.Requests) {
		b.write(batch)
		return nil
	}
	out := b.header
	out.Requests = send
	b.write(out)
	return nil
}

// connected takes up the redialer's connection if there is one; it
// reports whether the peer can be written to. Called with mu held.
func (b *batchConn) connected() bool {
	if b.w != nil {
		return true
	}
	select {
	case w := <-b.up:
		b.w, b.redialing = w, false
		b.t.flows.reset(b)
		b.t.log.Debug().Str("peer", b.target).Msg("peer reachable again")
		return true
	default:
		clear(b.held)
		b.holding.Store(false)
		return false
	}
}

// write sends one batch; a failed write drops it, with what is held, and
// redials. Called with mu held.
func (b *batchConn) write(batch raftpb.MessageBatch) {
	if err := b.w.write(batch.Size(), batch.MarshalTo); err != nil {
		b.t.log.Debug().Err(err).Str("peer", b.target).Msg("peer connection lost; dropping messages while redialing")
		b.w.close()
		b.w = nil
		clear(b.held)
		b.holding.Store(false)
		b.t.flows.reset(b)
		b.startRedial()
	}
}

// wake tells the flusher that a held replica may have room again.
func (b *batchConn) wake() {
	if !b.holding.Load() {
		return
	}
	select {
	case b.wakeC <- struct{}{}:
	default:
	}
}

// flusher sends held messages: the merged heartbeats every
// flowHeartbeatEvery, the held Replicates once their replica answered
// enough (or did not answer for flowRelease). It ticks only while
// something is held (a message held starts its ticker through heldC, the
// first merged heartbeat goes out flowHeartbeatEvery later): a ticker per
// peer connection running all the time woke an idle node 50 times a
// second per peer for nothing (issue 36, the fixed CPU per round).
func (b *batchConn) flusher() {
	var tick *time.Ticker
	var tickC <-chan time.Time
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		switch holding := b.holding.Load(); {
		case holding && tick == nil:
			tick = time.NewTicker(flowHeartbeatEvery)
			tickC = tick.C
		case !holding && tick != nil:
			tick.Stop()
			tick, tickC = nil, nil
		}
		select {
		case <-b.stop:
			return
		case <-b.heldC:
			continue // the ticker starts at the top of the loop
		case <-tickC:
		case <-b.wakeC:
		}
		b.flushes.Add(1)
		b.flush()
	}
}

func (b *batchConn) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) == 0 || !b.connected() {
		return
	}
	now := time.Now()
	var send []raftpb.Message
	for k, h := range b.held {
		if len(h.replicates) > 0 && b.t.flows.admitHeld(k, len(h.replicates), now) {
			send = append(send, h.replicates...)
			h.replicates, h.size = nil, 0
		}
		if h.heartbeat != nil {
			send = append(send, *h.heartbeat)
			b.t.flows.count(k, 1, len(h.replicates) == 0)
			h.heartbeat = nil
		}
		if len(h.replicates) == 0 {
			delete(b.held, k)
		}
	}
	b.holding.Store(len(b.held) > 0)
	if len(send) > 0 {
		out := b.header
		out.Requests = send
		b.write(out)
	}
}

// startRedial dials target in the background until it answers, Close is
// called or the transport closes.
func (b *batchConn) startRedial() {
	if b.redialing {
		return
	}
	b.redialing = true
	go func() {
		wait := redialMin
		for {
			select {
			case <-b.stop:
				return
			case <-time.After(wait):
			}
			if b.t.isClosed() {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
			c, err := b.t.dialPeer(ctx, b.target)
			cancel()
			if err == nil {
				select {
				case b.up <- newFrameWriter(c, kindBatch):
				case <-b.stop:
					_ = c.Close()
				}
				return
			}
			wait = min(2*wait, redialMax)
		}
	}()
}

func (b *batchConn) Close() {
	b.stopOnce.Do(func() { close(b.stop) })
	b.t.flows.forget(b)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w != nil {
		b.w.close()
		b.w = nil
	}
	select {
	case w := <-b.up:
		w.close()
	default:
	}
}
