package zk

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// fakeWatcher records the events delivered to it.
type fakeWatcher struct {
	id       uint64
	readable bool
	mu       sync.Mutex
	got      []string
}

func (f *fakeWatcher) watcherID() uint64          { return f.id }
func (f *fakeWatcher) sessionID() int64           { return int64(f.id) }
func (f *fakeWatcher) canRead([]zkproto.ACL) bool { return f.readable }
func (f *fakeWatcher) deliver(e zkproto.WatcherEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fmt.Sprintf("%s %s", e.Type, e.Path))
}

func (f *fakeWatcher) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.got
	f.got = nil
	return out
}

func newFake(id uint64) *fakeWatcher { return &fakeWatcher{id: id, readable: true} }

func TestWatchOneEventPerConnectionAndOneShot(t *testing.T) {
	m := newWatchManager()
	w := newFake(1)
	m.add(w, "/a", watchData)
	m.add(w, "/a", watchChild)
	m.trigger(zkproto.EventNodeDeleted, "/a", nil)
	if got := w.take(); !reflect.DeepEqual(got, []string{"NodeDeleted /a"}) {
		t.Fatalf("delete with data+child watches: %v", got)
	}
	m.trigger(zkproto.EventNodeCreated, "/a", nil)
	if got := w.take(); len(got) != 0 {
		t.Fatalf("one-shot watches fired twice: %v", got)
	}
	if s := m.stats(); s.AllWatches != 0 || s.Paths != 0 {
		t.Fatalf("watches left after firing: %+v", s)
	}
}

func TestWatchKindsReachTheRightEvents(t *testing.T) {
	cases := []struct {
		name  string
		kind  watchKind
		at    string
		event zkproto.EventType
		path  string
		fires bool
	}{
		{"data watch on setData", watchData, "/a", zkproto.EventNodeDataChanged, "/a", true},
		{"data watch ignores children", watchData, "/a", zkproto.EventNodeChildrenChanged, "/a", false},
		{"child watch on children", watchChild, "/a", zkproto.EventNodeChildrenChanged, "/a", true},
		{"child watch ignores data", watchChild, "/a", zkproto.EventNodeDataChanged, "/a", false},
		{"child watch sees its node deleted", watchChild, "/a", zkproto.EventNodeDeleted, "/a", true},
		{"persistent gets children", watchPersist, "/a", zkproto.EventNodeChildrenChanged, "/a", true},
		{"persistent gets data", watchPersist, "/a", zkproto.EventNodeDataChanged, "/a", true},
		{"persistent is not recursive", watchPersist, "/a", zkproto.EventNodeDataChanged, "/a/b", false},
		{"recursive gets descendants", watchRecursive, "/a", zkproto.EventNodeCreated, "/a/b/c", true},
		{"recursive never gets children changed", watchRecursive, "/a", zkproto.EventNodeChildrenChanged, "/a", false},
		{"recursive on root", watchRecursive, "/", zkproto.EventNodeDeleted, "/x", true},
		{"recursive is not a prefix match", watchRecursive, "/a", zkproto.EventNodeCreated, "/ab", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newWatchManager()
			w := newFake(1)
			m.add(w, tc.at, tc.kind)
			m.trigger(tc.event, tc.path, nil)
			if got := len(w.take()) == 1; got != tc.fires {
				t.Fatalf("fired=%v, want %v", got, tc.fires)
			}
		})
	}
}

func TestPersistentWatchesStayAndCombineWithStandard(t *testing.T) {
	m := newWatchManager()
	w := newFake(1)
	m.add(w, "/", watchRecursive)
	m.add(w, "/a", watchData)
	m.trigger(zkproto.EventNodeDataChanged, "/a", nil)
	if got := w.take(); len(got) != 1 {
		t.Fatalf("recursive on / plus data on /a: %v, want one event", got)
	}
	m.trigger(zkproto.EventNodeDataChanged, "/a", nil)
	if got := w.take(); len(got) != 1 {
		t.Fatalf("recursive watch did not persist: %v", got)
	}
}

func TestWatchDeliveryIsFilteredByRead(t *testing.T) {
	m := newWatchManager()
	blind := &fakeWatcher{id: 1}
	sees := newFake(2)
	m.add(blind, "/a", watchData)
	m.add(sees, "/a", watchData)
	m.trigger(zkproto.EventNodeDataChanged, "/a", nil)
	if len(blind.take()) != 0 || len(sees.take()) != 1 {
		t.Fatal("an event reached a watcher without READ, or missed one with it")
	}
}

func TestRemoveCheckAndDisconnect(t *testing.T) {
	m := newWatchManager()
	w, other := newFake(1), newFake(2)
	m.add(w, "/a", watchData)
	m.add(w, "/a", watchPersist)
	m.add(other, "/a", watchChild)
	if m.check(w, "/a", zkproto.WatcherChildren) {
		t.Fatal("checkWatches(children) must be per connection: only another connection has one")
	}
	if !m.remove(w, "/a", zkproto.WatcherData) || m.remove(w, "/a", zkproto.WatcherData) {
		t.Fatal("removeWatches(data) must succeed once")
	}
	if !m.check(w, "/a", zkproto.WatcherPersistent) {
		t.Fatal("the persistent watch must survive removing the data watch")
	}
	m.removeWatcher(w)
	if m.check(w, "/a", zkproto.WatcherAny) || !m.check(other, "/a", zkproto.WatcherChildren) {
		t.Fatal("disconnect removed the wrong watches")
	}
	if _, ok := kindsFor(9); ok {
		t.Fatal("watcher type 9 must be invalid")
	}
}

func TestWatchStatsCountDataManagerLikeZooKeeper(t *testing.T) {
	m := newWatchManager()
	a, b := newFake(1), newFake(2)
	m.add(a, "/x", watchData)
	m.add(b, "/x", watchChild) // child-only: not in wchs
	m.add(b, "/y", watchRecursive)
	s := m.stats()
	if s.Connections != 2 || s.Paths != 2 || s.DataWatches != 2 || s.AllWatches != 3 {
		t.Fatalf("stats %+v", s)
	}
	if got := m.bySession(); !reflect.DeepEqual(got, map[int64][]string{1: {"/x"}, 2: {"/y"}}) {
		t.Fatalf("bySession %v", got)
	}
}
