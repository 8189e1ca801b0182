package zk

import (
	"slices"
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

	watchAll = watchData | watchChild | watchPersist | watchRecursive
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

// watchReg is one connection's registrations on one path, packed in four
// bytes: the connection's slot (a small dense number the manager hands
// out) in the high bits, its watchKind in the low four. A million watches
// are a million of these, not a million map entries.
type watchReg uint32

const watchKindBits = 4

func makeReg(slot uint32, k watchKind) watchReg { return watchReg(slot<<watchKindBits | uint32(k)) }
func (r watchReg) slot() uint32                 { return uint32(r) >> watchKindBits }
func (r watchReg) kind() watchKind              { return watchKind(r & (1<<watchKindBits - 1)) }

// pathWatches is every registration on one path. Its path string is the
// only copy the manager keeps (requests bring their own, which are let go);
// regs are sorted by slot, so finding a connection's is a binary search.
type pathWatches struct {
	path string
	regs []watchReg
}

func (pw *pathWatches) find(slot uint32) (int, bool) {
	return slices.BinarySearchFunc(pw.regs, slot, func(r watchReg, s uint32) int {
		switch {
		case r.slot() < s:
			return -1
		case r.slot() > s:
			return 1
		}
		return 0
	})
}

// watcherEntry is one connection known to the manager (from its first
// registration until it disconnects).
type watcherEntry struct {
	w    watcher
	slot uint32
	// live counts the paths where the connection holds a registration.
	live int
	// paths lists those paths, for the disconnect: a superset, since a
	// fired watch leaves its entry behind (finding it would cost a scan).
	// The list is compacted once it is twice as long as live.
	paths []*pathWatches
}

// watchManager holds every watch registered on this node. It is driven by
// the apply path (trigger) and by request handlers (register, remove).
type watchManager struct {
	mu     sync.Mutex
	byPath map[string]*pathWatches
	byID   map[uint64]*watcherEntry // by watcherID
	slots  []*watcherEntry          // by slot; nil when free
	free   []uint32                 // free slots, reused first
	// recursive counts recursive registrations: ancestor walks are skipped
	// while there are none.
	recursive int
}

func newWatchManager() *watchManager {
	return &watchManager{
		byPath: map[string]*pathWatches{},
		byID:   map[uint64]*watcherEntry{},
	}
}

func (m *watchManager) add(w watcher, path string, k watchKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(w, path, k)
}

// entryLocked returns w's entry, giving it a slot if it has none.
func (m *watchManager) entryLocked(w watcher) *watcherEntry {
	id := w.watcherID()
	if e := m.byID[id]; e != nil {
		return e
	}
	e := &watcherEntry{w: w}
	if n := len(m.free); n > 0 {
		e.slot = m.free[n-1]
		m.free = m.free[:n-1]
		m.slots[e.slot] = e
	} else {
		e.slot = uint32(len(m.slots))
		m.slots = append(m.slots, e)
	}
	m.byID[id] = e
	return e
}

func (m *watchManager) addLocked(w watcher, path string, k watchKind) {
	e := m.entryLocked(w)
	pw := m.byPath[path]
	if pw == nil {
		pw = &pathWatches{path: path}
		m.byPath[path] = pw
	}
	i, ok := pw.find(e.slot)
	if ok {
		old := pw.regs[i].kind()
		if k&watchRecursive != 0 && old&watchRecursive == 0 {
			m.recursive++
		}
		pw.regs[i] = makeReg(e.slot, old|k)
		return
	}
	if k&watchRecursive != 0 {
		m.recursive++
	}
	pw.regs = slices.Insert(pw.regs, i, makeReg(e.slot, k))
	e.live++
	e.paths = append(e.paths, pw)
	if len(e.paths) >= 2*e.live+8 {
		m.compactLocked(e)
	}
}

// compactLocked drops from e.paths the paths where e holds nothing any
// more, and duplicates (a path watched, fired and watched again).
func (m *watchManager) compactLocked(e *watcherEntry) {
	seen := make(map[*pathWatches]struct{}, e.live)
	kept := e.paths[:0]
	for _, pw := range e.paths {
		if _, dup := seen[pw]; dup {
			continue
		}
		if _, ok := pw.find(e.slot); ok && m.byPath[pw.path] == pw {
			seen[pw] = struct{}{}
			kept = append(kept, pw)
		}
	}
	clear(e.paths[len(kept):]) // let go of the dropped paths
	e.paths = kept
}

// clearAtLocked removes kinds k of the registration at index i of pw and
// reports whether the registration is gone (pw.regs shrank). The path
// leaves byPath once nobody watches it.
func (m *watchManager) clearAtLocked(pw *pathWatches, i int, k watchKind) bool {
	r := pw.regs[i]
	old := r.kind()
	if k&watchRecursive != 0 && old&watchRecursive != 0 {
		m.recursive--
	}
	if left := old &^ k; left != 0 {
		pw.regs[i] = makeReg(r.slot(), left)
		return false
	}
	pw.regs = slices.Delete(pw.regs, i, i+1)
	if e := m.slots[r.slot()]; e != nil {
		e.live--
	}
	if len(pw.regs) == 0 && m.byPath[pw.path] == pw {
		delete(m.byPath, pw.path)
	}
	return true
}

// removeWatcher drops every registration of w (its connection closed) and
// frees its slot.
func (m *watchManager) removeWatcher(w watcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := w.watcherID()
	e := m.byID[id]
	if e == nil {
		return
	}
	for _, pw := range e.paths {
		if i, ok := pw.find(e.slot); ok {
			m.clearAtLocked(pw, i, watchAll)
		}
	}
	delete(m.byID, id)
	m.slots[e.slot] = nil
	m.free = append(m.free, e.slot)
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
		return watchAll, true
	case zkproto.WatcherPersistent:
		return watchPersist, true
	case zkproto.WatcherPersistentRecursive:
		return watchRecursive, true
	}
	return 0, false
}

// lookupLocked finds w's registration on path: the path's set and the
// index in it.
func (m *watchManager) lookupLocked(w watcher, path string) (*pathWatches, int, bool) {
	e := m.byID[w.watcherID()]
	pw := m.byPath[path]
	if e == nil || pw == nil {
		return nil, 0, false
	}
	i, ok := pw.find(e.slot)
	return pw, i, ok
}

// check reports whether w holds a watch of type t on path.
func (m *watchManager) check(w watcher, path string, t zkproto.WatcherType) bool {
	k, _ := kindsFor(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	pw, i, ok := m.lookupLocked(w, path)
	return ok && pw.regs[i].kind()&k != 0
}

// remove drops w's watches of type t on path and reports whether any was there.
func (m *watchManager) remove(w watcher, path string, t zkproto.WatcherType) bool {
	k, _ := kindsFor(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	pw, i, ok := m.lookupLocked(w, path)
	if !ok || pw.regs[i].kind()&k == 0 {
		return false
	}
	m.clearAtLocked(pw, i, k)
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
	var hit []uint32 // slots, possibly repeated across the path and its ancestors
	collect := func(p string, consume, want watchKind) {
		pw := m.byPath[p]
		if pw == nil {
			return
		}
		for i := 0; i < len(pw.regs); {
			r := pw.regs[i]
			if r.kind()&want == 0 {
				i++
				continue
			}
			hit = append(hit, r.slot())
			if c := r.kind() & consume; c != 0 && m.clearAtLocked(pw, i, c) {
				continue // the next registration moved to i
			}
			i++
		}
	}
	switch t {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		collect(path, watchData, watchData|watchPersist|watchRecursive)
		m.collectRecursiveAncestors(path, collect)
	case zkproto.EventNodeDeleted:
		collect(path, watchData|watchChild, watchAll)
		m.collectRecursiveAncestors(path, collect)
	case zkproto.EventNodeChildrenChanged:
		collect(path, watchChild, watchChild|watchPersist)
	}
	if len(hit) == 0 {
		m.mu.Unlock()
		return
	}
	slices.Sort(hit)
	hit = slices.Compact(hit)
	ws := make([]watcher, len(hit))
	for i, s := range hit {
		ws[i] = m.slots[s].w
	}
	m.mu.Unlock()

	// Deliver in a stable order (by connection id) so event order never
	// depends on slot reuse (it does not matter across connections).
	sort.Slice(ws, func(i, j int) bool { return ws[i].watcherID() < ws[j].watcherID() })
	ev := zkproto.WatcherEvent{Type: t, State: zkproto.StateSyncConnected, Path: path}
	for _, w := range ws {
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
	conns := make([]bool, len(m.slots))
	for _, pw := range m.byPath {
		dataHere := false
		for _, r := range pw.regs {
			k := r.kind()
			if k.inDataManager() {
				dataHere = true
				conns[r.slot()] = true
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
	for _, c := range conns {
		if c {
			s.Connections++
		}
	}
	return s
}

// bySession returns session → sorted data-watch paths (wchc).
func (m *watchManager) bySession() map[int64][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int64][]string{}
	for p, pw := range m.byPath {
		for _, r := range pw.regs {
			if r.kind().inDataManager() {
				id := m.slots[r.slot()].w.sessionID()
				out[id] = append(out[id], p)
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
	for p, pw := range m.byPath {
		for _, r := range pw.regs {
			if r.kind().inDataManager() {
				out[p] = append(out[p], m.slots[r.slot()].w.sessionID())
			}
		}
	}
	for _, ss := range out {
		sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
	}
	return out
}

// kindsByWatcher returns, per watcher id, the kinds it holds on each path
// (the web console's counts).
func (m *watchManager) kindsByWatcher() map[uint64][]watchKind {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[uint64][]watchKind, len(m.byID))
	for _, pw := range m.byPath {
		for _, r := range pw.regs {
			id := m.slots[r.slot()].w.watcherID()
			out[id] = append(out[id], r.kind())
		}
	}
	return out
}
