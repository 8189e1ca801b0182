package peernet

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4/raftpb"
	"github.com/rs/zerolog"
)

// Faults injects network faults into one node's peer transport: the fault
// suite's partitions (messages from cut-off replicas are discarded on
// arrival, as a black-holing network would) and the regression tests'
// dropped messages. A transport looks its Faults up by its listen address
// when dragonboat creates it (FaultsFor), so nodes that share a process
// (tests) each have their own. Without faults set, delivery pays one
// atomic load per batch.
type Faults struct {
	active  atomic.Bool // any fault set: the fast path skips the lock
	mu      sync.Mutex
	cut     map[uint64]bool // replica IDs whose messages are discarded
	dropper func(raftpb.Message) bool
	dropped uint64
}

var faults struct {
	mu     sync.Mutex
	byAddr map[string]*Faults
}

// FaultsFor returns the fault switchboard of the transport that listens on
// addr, creating it. Call it before the node starts, or at any time from
// the process that runs the node.
func FaultsFor(addr string) *Faults {
	faults.mu.Lock()
	defer faults.mu.Unlock()
	if faults.byAddr == nil {
		faults.byAddr = map[string]*Faults{}
	}
	f := faults.byAddr[addr]
	if f == nil {
		f = &Faults{cut: map[uint64]bool{}}
		faults.byAddr[addr] = f
	}
	return f
}

// Cut discards every message from the given replicas until Heal; an
// empty call changes nothing.
func (f *Faults) Cut(replicas ...uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range replicas {
		f.cut[id] = true
	}
	f.active.Store(len(f.cut) > 0 || f.dropper != nil)
}

// Heal delivers messages from every replica again and removes the dropper.
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
	f.dropper = nil
	f.active.Store(false)
}

// CutOff returns the replicas currently cut off.
func (f *Faults) CutOff() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []uint64
	for id := range f.cut {
		out = append(out, id)
	}
	return out
}

// DropWhen discards every incoming message for which drop returns true
// (nil: none), as a full receive queue would.
func (f *Faults) DropWhen(drop func(raftpb.Message) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropper = drop
	f.active.Store(len(f.cut) > 0 || f.dropper != nil)
}

// Dropped returns how many messages were discarded so far.
func (f *Faults) Dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

// filter removes the faulted messages from b (f may be nil: none); snapshot installation
// records are never sent over the network, the rest may be dropped.
func (f *Faults) filter(b *raftpb.MessageBatch) {
	if f == nil || !f.active.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cut) == 0 && f.dropper == nil {
		return
	}
	kept := b.Requests[:0]
	for _, m := range b.Requests {
		if f.cut[m.From] || (f.dropper != nil && f.dropper(m)) {
			f.dropped++
			continue
		}
		kept = append(kept, m)
	}
	b.Requests = kept
}

// cutChunk reports whether a snapshot chunk from replica from is discarded.
func (f *Faults) cutChunk(from uint64) bool {
	if f == nil || !f.active.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[from]
}

// FaultFileEnv names an environment variable the fault suite sets on the
// nodes it starts: the path of a file the transport reads every
// faultFilePoll, holding the replica IDs (space separated) this node
// discards messages from; empty or missing heals. Nothing else reads it;
// unset, no file is read.
const FaultFileEnv = "ZKBRIDGE_PEER_FAULT_FILE"

const faultFilePoll = 20 * time.Millisecond

// watchFaultFile applies path's partition to f until stop closes.
func watchFaultFile(path string, f *Faults, stop <-chan struct{}, log zerolog.Logger) {
	tick := time.NewTicker(faultFilePoll)
	defer tick.Stop()
	last := "\x00"
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		text := strings.TrimSpace(string(b))
		if text == last {
			continue
		}
		last = text
		var ids []uint64
		for _, field := range strings.Fields(text) {
			id, err := strconv.ParseUint(field, 10, 64)
			if err != nil {
				log.Warn().Str("file", path).Str("field", field).Msg("peer fault file: not a replica id; ignored")
				continue
			}
			ids = append(ids, id)
		}
		f.mu.Lock()
		clear(f.cut)
		for _, id := range ids {
			f.cut[id] = true
		}
		f.active.Store(len(f.cut) > 0 || f.dropper != nil)
		f.mu.Unlock()
		log.Warn().Uints64("cut_off", ids).Msg("peer fault file: injected partition changed")
	}
}
