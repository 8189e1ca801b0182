package zk

import (
	"sync/atomic"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/zkproto"
)

// What the web console (server/admin/console) reads from this door: its
// connections with their sessions and watches, and request counters by
// operation with a latency histogram.

// opCounter counts replies by opcode: a fixed array of atomics indexed by
// the opcode shifted into 0..255 (opcodes run from -11 to 107), so the
// request path takes no lock.
type opCounter struct{ n [256]atomic.Int64 }

func opSlot(op zkproto.OpCode) int { return int(uint8(int32(op) + 16)) }

func (o *opCounter) add(op zkproto.OpCode) { o.n[opSlot(op)].Add(1) }

// ConsoleConns lists this door's client connections that have a session.
func (s *Server) ConsoleConns() []node.ConnInfo {
	conns := s.snapshotConns()
	kinds := s.watches.kindsByWatcher()
	out := make([]node.ConnInfo, 0, len(conns))
	for _, c := range conns {
		id := c.sessionID()
		if id == 0 {
			continue
		}
		c.stats.mu.Lock()
		seen := c.stats.lastResp
		if seen.IsZero() {
			seen = c.stats.established
		}
		c.stats.mu.Unlock()
		info := node.ConnInfo{Session: id, Remote: c.remote, LastSeen: seen}
		for _, k := range kinds[c.watcherID()] {
			if k&watchData != 0 {
				info.DataWatches++
			}
			if k&watchChild != 0 {
				info.ChildWatches++
			}
			if k&watchPersist != 0 {
				info.PersistWatches++
			}
			if k&watchRecursive != 0 {
				info.RecursiveWatches++
			}
		}
		out = append(out, info)
	}
	return out
}

// RequestStats returns the cumulative replies by operation and their
// latency histogram.
func (s *Server) RequestStats() node.RequestStats {
	st := node.RequestStats{ByOp: map[string]int64{}, Latency: s.metrics.latencyHist.Snapshot()}
	for op := zkproto.OpCode(-16); op < 240; op++ {
		if n := s.metrics.byOp.n[opSlot(op)].Load(); n > 0 {
			st.ByOp[op.String()] = n
		}
	}
	return st
}
