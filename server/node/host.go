package node

import (
	"sync"

	"github.com/lni/dragonboat/v4/raftio"
	"github.com/rs/zerolog"
)

// leaderHub is the NodeHost's raft event listener: it routes each shard's
// leader changes to that shard's leaderWatch.
type leaderHub struct {
	mu      sync.Mutex
	log     zerolog.Logger
	watches map[uint64]*leaderWatch
}

func newLeaderHub(log zerolog.Logger) *leaderHub {
	return &leaderHub{log: log, watches: map[uint64]*leaderWatch{}}
}

// watch returns shard's watch, made on first use; log names the shard.
func (h *leaderHub) watch(shard uint64, log zerolog.Logger) *leaderWatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watches[shard]
	if w == nil {
		l := h.log
		if shard != dataShard {
			l = log.With().Str("component", "raft.leader").Logger()
		}
		w = newLeaderWatch(l)
		h.watches[shard] = w
	}
	return w
}

// forget drops a stopped shard's watch.
func (h *leaderHub) forget(shard uint64) {
	h.mu.Lock()
	delete(h.watches, shard)
	h.mu.Unlock()
}

func (h *leaderHub) get(shard uint64) *leaderWatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watches[shard]
}

// LeaderUpdated runs on a dragonboat goroutine; it must not block.
func (h *leaderHub) LeaderUpdated(info raftio.LeaderInfo) {
	if w := h.get(info.ShardID); w != nil {
		w.LeaderUpdated(info)
	}
}

// wake wakes the proposals of a shard whose local state a snapshot
// replaced (see leaderWatch.wake).
func (h *leaderHub) wake(shard uint64) {
	if w := h.get(shard); w != nil {
		w.wake()
	}
}
