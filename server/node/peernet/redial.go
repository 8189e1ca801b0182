package peernet

import (
	"context"
	"errors"
	"net"
	"sync"
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

// batchConn sends Raft message batches; dragonboat uses each connection
// from one goroutine (SendMessageBatch and Close).
type batchConn struct {
	t      *Transport
	target string
	w      *frameWriter // the live connection; nil while the peer is down

	redialing bool
	up        chan *frameWriter // the redialer's new connection
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
	b := &batchConn{t: t, target: target, up: make(chan *frameWriter, 1), stop: make(chan struct{})}
	if c != nil {
		b.w = newFrameWriter(c, kindBatch)
	} else {
		b.startRedial()
	}
	return b
}

func (b *batchConn) SendMessageBatch(batch raftpb.MessageBatch) error {
	if b.w == nil {
		select {
		case w := <-b.up:
			b.w, b.redialing = w, false
			b.t.log.Debug().Str("peer", b.target).Msg("peer reachable again")
		default:
			return nil // down: dropped
		}
	}
	if err := b.w.write(batch.Size(), batch.MarshalTo); err != nil {
		b.t.log.Debug().Err(err).Str("peer", b.target).Msg("peer connection lost; dropping messages while redialing")
		b.w.close()
		b.w = nil
		b.startRedial()
	}
	return nil
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
