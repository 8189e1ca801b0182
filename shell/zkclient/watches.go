package zkclient

import (
	"slices"

	"github.com/zkbridge/zkbridge/zkproto"
)

// watchTable is the client's record of the watches it has set, by client
// path: what a reconnect re-registers (setWatches2) and what decides
// whether a notification is delivered, as the Java client's ZKWatchManager.
type watchTable struct {
	data, exist, child, persistent, recursive map[string]bool
}

func newWatchTable() watchTable {
	return watchTable{data: map[string]bool{}, exist: map[string]bool{}, child: map[string]bool{},
		persistent: map[string]bool{}, recursive: map[string]bool{}}
}

// trigger removes the one-shot watches ev fires and reports whether any
// watch (one-shot or persistent) matched it.
func (w *watchTable) trigger(t zkproto.EventType, path string) bool {
	hit := false
	take := func(m map[string]bool) {
		if m[path] {
			delete(m, path)
			hit = true
		}
	}
	switch t {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		take(w.data)
		take(w.exist)
	case zkproto.EventNodeChildrenChanged:
		take(w.child)
	case zkproto.EventNodeDeleted:
		take(w.data)
		take(w.exist)
		take(w.child)
	default:
		return true
	}
	if w.persistent[path] {
		hit = true
	}
	// A persistent recursive watch on an ancestor (or the path itself)
	// sees every create, change and delete below it (never child events).
	if t != zkproto.EventNodeChildrenChanged {
		for p := path; ; p = zkproto.ParentPath(p) {
			if w.recursive[p] {
				hit = true
				break
			}
			if p == "/" || p == "" {
				break
			}
		}
	}
	return hit
}

// setWatches is the setWatches2 record that re-registers every watch on a
// new connection (nil when there is none).
func (w *watchTable) setWatches(zxid int64, chroot string) *zkproto.SetWatches2 {
	list := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for p := range m {
			if chroot != "" {
				if p == "/" {
					p = chroot
				} else {
					p = chroot + p
				}
			}
			out = append(out, p)
		}
		slices.Sort(out)
		return out
	}
	sw := &zkproto.SetWatches2{RelativeZxid: zxid, DataWatches: list(w.data), ExistWatches: list(w.exist),
		ChildWatches: list(w.child), PersistentWatches: list(w.persistent), PersistentRecursiveWatches: list(w.recursive)}
	if len(sw.DataWatches)+len(sw.ExistWatches)+len(sw.ChildWatches)+len(sw.PersistentWatches)+len(sw.PersistentRecursiveWatches) == 0 {
		return nil
	}
	return sw
}

// Watches lists the watches the client holds, by kind, sorted (for
// printwatches-style listings and tests).
func (c *Client) Watches() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]string{}
	for kind, m := range map[string]map[string]bool{"data": c.watches.data, "exist": c.watches.exist,
		"child": c.watches.child, "persistent": c.watches.persistent, "persistentRecursive": c.watches.recursive} {
		for p := range m {
			out[kind] = append(out[kind], p)
		}
		slices.Sort(out[kind])
	}
	return out
}

// removable lists the local watch maps of type t on path, with the event
// each removal produces.
func (w *watchTable) removable(t zkproto.WatcherType, path string) (maps []map[string]bool, events []zkproto.EventType) {
	if t == zkproto.WatcherData || t == zkproto.WatcherAny {
		if w.data[path] || w.exist[path] {
			maps = append(maps, w.data, w.exist)
			events = append(events, zkproto.EventDataWatchRemoved)
		}
	}
	if t == zkproto.WatcherChildren || t == zkproto.WatcherAny {
		if w.child[path] {
			maps = append(maps, w.child)
			events = append(events, zkproto.EventChildWatchRemoved)
		}
	}
	if t == zkproto.WatcherAny {
		if w.persistent[path] || w.recursive[path] {
			maps = append(maps, w.persistent, w.recursive)
			events = append(events, zkproto.EventPersistentWatchRemoved)
		}
	}
	return maps, events
}
