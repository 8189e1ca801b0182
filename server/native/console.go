package native

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/zkproto"
)

// activity records what the web console's Bridge page shows of this door:
// leases granted or renewed here, open change-feed streams, counters served.
// Bounded: leases and counters are forgotten with the node (in memory) and
// a lease is dropped from it when its session is gone (the console only
// lists leases whose session still exists).
type activity struct {
	mu       sync.Mutex
	leases   map[int64]*node.LeaseActivity
	subs     map[*subscriber]struct{}
	counters map[string]struct{}
}

// maxTrackedLeases bounds the lease map: past it, the oldest heartbeat is
// forgotten first.
const maxTrackedLeases = 100_000

type subscriber struct {
	info    node.FeedSubscriber
	offset  atomic.Int64
	records atomic.Int64
}

func newActivity() *activity {
	return &activity{leases: map[int64]*node.LeaseActivity{}, subs: map[*subscriber]struct{}{}, counters: map[string]struct{}{}}
}

func (a *activity) lease(id int64, path string, granted bool) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.leases[id]
	if l == nil {
		if len(a.leases) >= maxTrackedLeases {
			a.evictOldestLocked()
		}
		l = &node.LeaseActivity{ID: id}
		a.leases[id] = l
	}
	if granted {
		l.Path, l.Granted = path, now
	}
	l.LastHeartbeat = now
}

func (a *activity) evictOldestLocked() {
	var oldest int64
	var at time.Time
	for id, l := range a.leases {
		if at.IsZero() || l.LastHeartbeat.Before(at) {
			oldest, at = id, l.LastHeartbeat
		}
	}
	delete(a.leases, oldest)
}

func (a *activity) counter(path string) {
	a.mu.Lock()
	a.counters[path] = struct{}{}
	a.mu.Unlock()
}

// subscribe registers an open stream until the returned func is called.
func (a *activity) subscribe(ctx context.Context, prefixes []string, from int64) (*subscriber, func()) {
	s := &subscriber{info: node.FeedSubscriber{Prefixes: prefixes, FromOffset: from, Since: time.Now()}}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		s.info.Remote = p.Addr.String()
	}
	s.offset.Store(from - 1)
	a.mu.Lock()
	a.subs[s] = struct{}{}
	a.mu.Unlock()
	return s, func() {
		a.mu.Lock()
		delete(a.subs, s)
		a.mu.Unlock()
	}
}

// Activity reports this door's leases (those whose session still exists
// on this replica), open feed streams and counters.
func (s *Server) Activity() node.BridgeActivity {
	a := s.activity
	a.mu.Lock()
	defer a.mu.Unlock()
	var out node.BridgeActivity
	for id, l := range a.leases {
		if _, err := s.node.SessionInfo(id); errors.Is(err, zkproto.ErrSessionExpired) {
			delete(a.leases, id) // ended: forget it
			continue
		}
		out.Leases = append(out.Leases, *l)
	}
	for sub := range a.subs {
		info := sub.info
		info.Offset = sub.offset.Load()
		info.Records = sub.records.Load()
		out.Subscribers = append(out.Subscribers, info)
	}
	for c := range a.counters {
		out.Counters = append(out.Counters, c)
	}
	sort.Slice(out.Leases, func(i, j int) bool { return out.Leases[i].ID < out.Leases[j].ID })
	sort.Slice(out.Subscribers, func(i, j int) bool { return out.Subscribers[i].Since.Before(out.Subscribers[j].Since) })
	sort.Strings(out.Counters)
	return out
}
