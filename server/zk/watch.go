package zk

import (
	"sort"
	"sync"

	"github.com/zkbridge/zkbridge/zkproto"
)

// watchKind is a set of watch registrations one connection holds on one
// path. ZooKeeper keeps two managers — data watches (getData, exists,
// persistent, recursive) and child watches (getChildren, persistent) — and
// fires at most one event per connection per trigger.
type watchKind uint8

const (
	watchData      watchKind = 1 << iota // one-shot, from getData/exists
	watchChild                           // one-shot, from getChildren
	watchPersist                         // addWatch PERSISTENT: data and child events
	watchRecursive                       // addWatch PERSISTENT_RECURSIVE: data events of the subtree
)

// inDataManager reports whether ZooKeeper would list the registration in
// its data-watch manager (what wchs/wchc/wchp show).
func (k watchKind) inDataManager() bool { return k&(watchData|watchPersist|watchRecursive) != 0 }

// watcher is the receiving end of watch events: a client connection.
type watcher interface {
	watcherID() uint64
	sessionID() int64
	// canRead reports whether the connection's identities have READ on acl;
	// events are filtered by it at delivery.
	canRead(acl []zkproto.ACL) bool
	// deliver queues a notification on the connection's output.
	deliver(ev zkproto.WatcherEvent)
}

// watchManager holds every watch registered on this node. It is driven by
// the apply path (trigger) and by request handlers (register, remove).
type watchManager struct {
	mu        sync.Mutex
	byPath    map[string]map[watcher]watchKind
	byWatcher map[watcher]map[string]struct{}
	recursive int // number of recursive registrations: skip ancestor walks when 0
}

func newWatchManager() *watchManager {
	return &watchManager{
		byPath:    map[string]map[watcher]watchKind{},
		byWatcher: map[watcher]map[string]struct{}{},
	}
}

func (m *watchManager) add(w watcher, path string, k watchKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(w, path, k)
}

func (m *watchManager) addLocked(w watcher, path string, k watchKind) {
	ws := m.byPath[path]
	if ws == nil {
		ws = map[watcher]watchKind{}
		m.byPath[path] = ws
	}
	old := ws[w]
	if k&watchRecursive != 0 && old&watchRecursive == 0 {
		m.recursive++
	}
	ws[w] = old | k
	ps := m.byWatcher[w]
	if ps == nil {
		ps = map[string]struct{}{}
		m.byWatcher[w] = ps
	}
	ps[path] = struct{}{}
}

// clearLocked removes kinds k of w at path.
func (m *watchManager) clearLocked(w watcher, path string, k watchKind) {
	ws := m.byPath[path]
	old, ok := ws[w]
	if !ok {
		return
	}
	if k&watchRecursive != 0 && old&watchRecursive != 0 {
		m.recursive--
	}
	if left := old &^ k; left != 0 {
		ws[w] = left
		return
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(m.byPath, path)
	}
	if ps := m.byWatcher[w]; ps != nil {
		delete(ps, path)
		if len(ps) == 0 {
			delete(m.byWatcher, w)
		}
	}
}

// removeWatcher drops every registration of w (its connection closed).
func (m *watchManager) removeWatcher(w watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for path := range m.byWatcher[w] {
		m.clearLocked(w, path, watchData|watchChild|watchPersist|watchRecursive)
	}
	delete(m.byWatcher, w)
}

// kindsFor maps a checkWatches/removeWatches WatcherType to registrations.
// Children and Data name the one-shot watches; Any names every kind.
func kindsFor(t zkproto.WatcherType) (watchKind, bool) {
	switch t {
	case zkproto.WatcherChildren:
		return watchChild, true
	case zkproto.WatcherData:
		return watchData, true
	case zkproto.WatcherAny:
		return watchData | watchChild | watchPersist | watchRecursive, true
	case zkproto.WatcherPersistent:
		return watchPersist, true
	case zkproto.WatcherPersistentRecursive:
		return watchRecursive, true
	}
	return 0, false
}

// check reports whether w holds a watch of type t on path.
func (m *watchManager) check(w watcher, path string, t zkproto.WatcherType) bool {
	k, _ := kindsFor(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byPath[path][w]&k != 0
}

// remove drops w's watches of type t on path and reports whether any was there.
func (m *watchManager) remove(w watcher, path string, t zkproto.WatcherType) bool {
	k, _ := kindsFor(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byPath[path][w]&k == 0 {
		return false
	}
	m.clearLocked(w, path, k)
	return true
}

// trigger fires the watches an applied change event hits, as ZooKeeper's
// DataTree does: NodeCreated/NodeDataChanged reach data watches on the node
// and recursive watches on it and its ancestors; NodeDeleted reaches data
// and child watches on the node and recursive ones above; NodeChildrenChanged
// reaches child and persistent (not recursive) watches on the node. Each
// connection gets at most one event; one-shot watches are consumed.
// acl is the ACL of the node the event names, used to filter delivery.
func (m *watchManager) trigger(t zkproto.EventType, path string, acl []zkproto.ACL) {
	m.mu.Lock()
	var hit []watcher
	seen := map[watcher]struct{}{}
	collect := func(p string, consume, want watchKind) {
		for w, k := range m.byPath[p] {
			if k&want == 0 {
				continue
			}
			if _, dup := seen[w]; !dup {
				seen[w] = struct{}{}
				hit = append(hit, w)
			}
			if k&consume != 0 {
				m.clearLocked(w, p, k&consume)
			}
		}
	}
	switch t {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		collect(path, watchData, watchData|watchPersist|watchRecursive)
		m.collectRecursiveAncestors(path, collect)
	case zkproto.EventNodeDeleted:
		collect(path, watchData|watchChild, watchData|watchChild|watchPersist|watchRecursive)
		m.collectRecursiveAncestors(path, collect)
	case zkproto.EventNodeChildrenChanged:
		collect(path, watchChild, watchChild|watchPersist)
	}
	m.mu.Unlock()

	// Deliver in a stable order so a connection's event order never depends
	// on map iteration (it does not matter across connections).
	sort.Slice(hit, func(i, j int) bool { return hit[i].watcherID() < hit[j].watcherID() })
	ev := zkproto.WatcherEvent{Type: t, State: zkproto.StateSyncConnected, Path: path}
	for _, w := range hit {
		if w.canRead(acl) {
			w.deliver(ev)
		}
	}
}

func (m *watchManager) collectRecursiveAncestors(path string, collect func(string, watchKind, watchKind)) {
	if m.recursive == 0 {
		return
	}
	for p := zkproto.ParentPath(path); p != ""; p = zkproto.ParentPath(p) {
		collect(p, 0, watchRecursive)
	}
}

// watchStats is what wchs, mntr and the admin endpoints report.
type watchStats struct {
	Connections int // connections with at least one data watch
	Paths       int // paths with at least one data watch
	DataWatches int // data-manager registrations (wchs "Total watches")
	AllWatches  int // data plus child registrations (mntr zk_watch_count)
}

func (m *watchManager) stats() watchStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s watchStats
	conns := map[watcher]struct{}{}
	for _, ws := range m.byPath {
		dataHere := false
		for w, k := range ws {
			if k.inDataManager() {
				dataHere = true
				conns[w] = struct{}{}
				s.DataWatches++
				s.AllWatches++
			}
			if k&(watchChild|watchPersist) != 0 {
				s.AllWatches++
			}
		}
		if dataHere {
			s.Paths++
		}
	}
	s.Connections = len(conns)
	return s
}

// bySession returns session → sorted data-watch paths (wchc).
func (m *watchManager) bySession() map[int64][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int64][]string{}
	for w, paths := range m.byWatcher {
		for p := range paths {
			if m.byPath[p][w].inDataManager() {
				out[w.sessionID()] = append(out[w.sessionID()], p)
			}
		}
	}
	for _, ps := range out {
		sort.Strings(ps)
	}
	return out
}

// byPathSessions returns path → sorted sessions with a data watch (wchp).
func (m *watchManager) byPathSessions() map[string][]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]int64{}
	for p, ws := range m.byPath {
		for w, k := range ws {
			if k.inDataManager() {
				out[p] = append(out[p], w.sessionID())
			}
		}
	}
	for _, ss := range out {
		sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
	}
	return out
}
