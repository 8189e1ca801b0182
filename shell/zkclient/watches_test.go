package zkclient

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// TestWatchTable checks which events reach the watcher and which one-shot
// watches they use up, as the Java client's ZKWatchManager.
func TestWatchTable(t *testing.T) {
	w := newWatchTable()
	w.data["/a"], w.exist["/b"], w.child["/a"], w.persistent["/p"], w.recursive["/r"] = true, true, true, true, true
	for _, c := range []struct {
		t    zkproto.EventType
		path string
		want bool
	}{
		{zkproto.EventNodeDataChanged, "/a", true},
		{zkproto.EventNodeDataChanged, "/a", false}, // the data watch was used up
		{zkproto.EventNodeChildrenChanged, "/a", true},
		{zkproto.EventNodeChildrenChanged, "/a", false},
		{zkproto.EventNodeCreated, "/b", true},
		{zkproto.EventNodeCreated, "/b", false},
		{zkproto.EventNodeDataChanged, "/p", true},
		{zkproto.EventNodeDataChanged, "/p", true}, // persistent
		{zkproto.EventNodeCreated, "/r/x/y", true}, // recursive below /r
		{zkproto.EventNodeChildrenChanged, "/r", false},
		{zkproto.EventNodeDeleted, "/q", false},
	} {
		if got := w.trigger(c.t, c.path); got != c.want {
			t.Errorf("%s %s: delivered %v, want %v", c.t, c.path, got, c.want)
		}
	}
	sw := w.setWatches(7, "/chroot")
	if sw == nil || len(sw.PersistentWatches) != 1 || sw.PersistentWatches[0] != "/chroot/p" || sw.PersistentRecursiveWatches[0] != "/chroot/r" || sw.RelativeZxid != 7 {
		t.Fatalf("setWatches: %+v", sw)
	}
	maps, events := w.removable(zkproto.WatcherAny, "/p")
	if len(maps) != 2 || len(events) != 1 || events[0] != zkproto.EventPersistentWatchRemoved {
		t.Fatalf("removable(any, /p): %d maps, %v", len(maps), events)
	}
}
