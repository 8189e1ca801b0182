package zk

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// heapPerWatch registers watches one-shot data watches spread evenly over
// paths nodes from watchers connections, the shape of the bench watches
// workload, and returns the live heap they hold per watch after a full GC.
// Each registration brings its own copy of the path, as a decoded request
// does.
func heapPerWatch(tb testing.TB, watches, paths, watchers int) float64 {
	tb.Helper()
	ws := make([]*fakeWatcher, watchers)
	for i := range ws {
		ws[i] = newFake(uint64(i + 1))
	}
	names := make([]string, paths)
	for i := range names {
		names[i] = fmt.Sprintf("/bench/watches/n%07d", i)
	}
	perPath := watches / paths // consecutive watches come from distinct watchers
	before := liveHeap()
	m := newWatchManager()
	for i := 0; i < watches; i++ {
		m.add(ws[i%watchers], strings.Clone(names[(i/perPath)%paths]), watchData)
	}
	after := liveHeap()
	if got := m.stats().DataWatches; got != watches {
		tb.Fatalf("%d watches registered, want %d", got, watches)
	}
	runtime.KeepAlive(m)
	return float64(after-before) / float64(watches)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkWatchHeap reports the heap one registered watch holds (B/watch)
// at the bench watches shape: 10 watchers per path, 100 connections.
func BenchmarkWatchHeap(b *testing.B) {
	for _, n := range []int{20_000, 200_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var per float64
			for i := 0; i < b.N; i++ {
				per = heapPerWatch(b, n, n/10, 100)
			}
			b.ReportMetric(per, "B/watch")
		})
	}
}

// BenchmarkWatchSetAndFire is one watch's whole life: a getData watch set,
// then the setData that fires it (10 connections watch each path).
func BenchmarkWatchSetAndFire(b *testing.B) {
	ws := make([]*fakeWatcher, 10)
	for i := range ws {
		ws[i] = newFake(uint64(i + 1))
		ws[i].got = make([]string, 0, 1)
	}
	m := newWatchManager()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := fmt.Sprintf("/w/%d", i%1000)
		for _, w := range ws {
			m.add(w, p, watchData)
		}
		m.trigger(zkproto.EventNodeDataChanged, p, nil)
		for _, w := range ws {
			w.got = w.got[:0]
		}
	}
}

// TestWatchHeapPerWatch holds the watch manager to a third of the heap
// ZooKeeper 3.8 keeps per watch (137 bytes after a full GC, 20,000 watches
// over 2,000 nodes from 100 sessions, docs/performance.md): two maps with
// interface keys and a path copy per registration held 109-129 bytes.
func TestWatchHeapPerWatch(t *testing.T) {
	if per := heapPerWatch(t, 50_000, 5_000, 100); per > 137.0/3 {
		t.Fatalf("%.1f heap bytes per watch, want at most %.1f", per, 137.0/3)
	}
}

// TestWatchRearmAndDisconnect fires and re-arms watches many times, as a
// cache client does, then disconnects: the connection's bookkeeping stays
// bounded, nothing is left behind, and a connection that reuses the freed
// slot gets only its own events.
func TestWatchRearmAndDisconnect(t *testing.T) {
	m := newWatchManager()
	a, b := newFake(1), newFake(2)
	m.add(b, "/keep", watchData)
	for i := 0; i < 1000; i++ {
		m.add(a, "/a", watchData)
		m.add(b, "/a", watchChild) // /a stays in the manager while a's watch fires
		m.trigger(zkproto.EventNodeDataChanged, "/a", nil)
		if got := a.take(); len(got) != 1 {
			t.Fatalf("round %d: %v, want one event", i, got)
		}
	}
	m.add(a, "/x", watchPersist)
	if e := m.byID[a.id]; e.live != 1 || len(e.paths) > 2*e.live+8 {
		t.Fatalf("after 1000 re-arms: live %d, %d paths kept", e.live, len(e.paths))
	}
	freed := m.byID[a.id].slot
	m.removeWatcher(a)
	c := newFake(3)
	m.add(c, "/y", watchData)
	if e := m.byID[c.id]; e.slot != freed {
		t.Fatalf("the freed slot was not reused: %d", e.slot)
	}
	m.trigger(zkproto.EventNodeDataChanged, "/x", nil)
	m.trigger(zkproto.EventNodeDataChanged, "/y", nil)
	if got := c.take(); !reflect.DeepEqual(got, []string{"NodeDataChanged /y"}) {
		t.Fatalf("the slot's new connection got %v", got)
	}
	if got := a.take(); len(got) != 0 {
		t.Fatalf("a disconnected watcher got %v", got)
	}
	if s := m.stats(); s.AllWatches != 2 || s.Connections != 1 {
		t.Fatalf("stats after the disconnect %+v, want b's two left", s)
	}
}

// TestWatchFanOutEachOnceInOrder: 10,000 connections on one path (the
// fan-out workload) each get the event once, and one connection's events
// keep the order of the triggers.
func TestWatchFanOutEachOnceInOrder(t *testing.T) {
	m := newWatchManager()
	ws := make([]*fakeWatcher, 10_000)
	for i := range ws {
		ws[i] = newFake(uint64(len(ws) - i)) // ids against slot order
		m.add(ws[i], "/wide", watchChild)
		m.add(ws[i], "/wide", watchPersist)
		m.add(ws[i], "/", watchRecursive)
	}
	m.trigger(zkproto.EventNodeChildrenChanged, "/wide", nil)
	m.trigger(zkproto.EventNodeCreated, "/wide/c", nil)
	m.trigger(zkproto.EventNodeDataChanged, "/wide", nil)
	want := []string{"NodeChildrenChanged /wide", "NodeCreated /wide/c", "NodeDataChanged /wide"}
	for _, w := range ws {
		if got := w.take(); !reflect.DeepEqual(got, want) {
			t.Fatalf("watcher %d got %v, want %v", w.id, got, want)
		}
	}
	if s := m.stats(); s.AllWatches != 30_000 {
		t.Fatalf("child watches consumed, persistent ones kept: %+v", s)
	}
}
