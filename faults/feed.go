package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	native "github.com/zkbridge/zkbridge/client"
)

// feedCheck follows zkbridge's change feed (the native API's Watch) under
// /set for the whole run, across the faults, and checks it against what
// the set workload's clients were told: every acknowledged create appears
// exactly once, offsets only grow, and nothing appears that the final
// state lacks.
type feedCheck struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	created   map[string]int // /set child path -> times seen
	lastOff   int64
	snapshots int
	problems  []string
}

// startFeed dials the native API of addrs and watches /set from the start.
func startFeed(addrs []string) (*feedCheck, error) {
	ctx, cancel := context.WithCancel(context.Background())
	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	cl, err := native.Dial(dctx, addrs)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("change feed: dial %v: %w", addrs, err)
	}
	f := &feedCheck{cancel: cancel, done: make(chan struct{}), created: map[string]int{}}
	w := cl.Watch(ctx, []string{"/set"}, 1)
	go func() {
		defer close(f.done)
		defer cl.Close()
		for ev := range w.Events() {
			f.take(ev)
		}
	}()
	return f, nil
}

func (f *feedCheck) take(ev native.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Snapshot != nil {
		// The log was compacted past the feed: a snapshot replaces what
		// is known (counted, so a gap cannot hide behind one unseen).
		f.snapshots++
		clear(f.created)
		for _, n := range ev.Snapshot.Nodes {
			f.created[n.GetPath()] = 1
		}
		f.lastOff = ev.Snapshot.Offset
		return
	}
	r := ev.Record
	if r == nil {
		return
	}
	if r.GetOffset() <= f.lastOff {
		f.problems = append(f.problems, fmt.Sprintf("feed: offset %d after %d (duplicate or out of order)", r.GetOffset(), f.lastOff))
	}
	f.lastOff = r.GetOffset()
	for _, ch := range r.GetChanges() {
		if ch.GetType() == zkbridgev1.ChangeType_CHANGE_TYPE_CREATED && strings.HasPrefix(ch.GetPath(), "/set/") {
			f.created[ch.GetPath()]++
			if f.created[ch.GetPath()] > 1 {
				f.problems = append(f.problems, fmt.Sprintf("feed: create of %s delivered %d times", ch.GetPath(), f.created[ch.GetPath()]))
			}
		}
	}
}

// check waits (bounded) until the feed has delivered every child /set has
// at the end, then compares it with the acknowledged creates.
func (f *feedCheck) check(conn *zk.Conn, h *History) []string {
	defer func() { f.cancel(); <-f.done }()
	kids, _, err := conn.Children("/set")
	if err != nil {
		return []string{fmt.Sprintf("feed: list /set: %v", err)}
	}
	deadline := time.Now().Add(20 * time.Second)
	var missing []string
	for {
		missing = missing[:0]
		f.mu.Lock()
		for _, k := range kids {
			if f.created["/set/"+k] == 0 {
				missing = append(missing, "/set/"+k)
			}
		}
		f.mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]string(nil), f.problems...)
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("feed: %d of %d znodes under /set never delivered (gap), e.g. %v", len(missing), len(kids), missing[:min(3, len(missing))]))
	}
	present := map[string]bool{}
	for _, k := range kids {
		present["/set/"+k] = true
	}
	for p := range f.created {
		if !present[p] {
			out = append(out, fmt.Sprintf("feed: delivered a create of %s, which the final state lacks", p))
			break
		}
	}
	for _, op := range h.Ops("set") {
		if op.Outcome == OK && f.created[op.Path] == 0 {
			out = append(out, fmt.Sprintf("feed: acknowledged create %s never delivered", op.Path))
			break
		}
	}
	return out
}
