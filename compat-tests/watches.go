package compattests

import (
	"fmt"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Helpers of the watches area (prefixed so other areas' helpers cannot clash).

// wtAdd is addWatch (op 106).
func wtAdd(s *S, c *Client, path string, mode zkproto.AddWatchMode) *Reply {
	return s.Do(c, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: path, Mode: mode})
}

// wtRemove is removeWatches (op 18).
func wtRemove(s *S, c *Client, path string, t zkproto.WatcherType) *Reply {
	return s.Do(c, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: path, Type: t})
}

// wtCheck is checkWatches (op 17).
func wtCheck(s *S, c *Client, path string, t zkproto.WatcherType) *Reply {
	return s.Do(c, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: path, Type: t})
}

// wtDoXid sends a request with an explicit xid (the Java client's special
// xids, e.g. -8 for SetWatches) and records the reply's xid too.
func wtDoXid(s *S, c *Client, xid int32, op zkproto.OpCode, req zkproto.Record) *Reply {
	if c == nil {
		s.Failf("request %v on a client that did not connect", op)
		return nil
	}
	s.T.request(c.Name, op, req)
	if err := s.catchUp(c); err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	defer s.nodes.did(s.nodeOf(c))
	if err := c.SendXid(xid, op, req); err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	r, err := c.Receive(xid, op)
	if err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	s.T.Logf("%s < reply xid=%d", c.Name, r.Header.Xid)
	s.T.reply(c.Name, r)
	return r
}

// wtReconnect opens a new connection to c's session (the old one is closed
// by the server) with the right password.
func wtReconnect(s *S, c *Client, name string) *Client {
	if c == nil {
		s.Failf("reconnect of a client that did not connect")
		return nil
	}
	return s.Connect(name, DialOptions{SessionID: c.SessionID, Passwd: c.Passwd, LastZxidSeen: c.LastZxid})
}

func init() {
	register(
		&Scenario{Area: "watches", Name: "data watch fires once", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), []byte("0"), 0)
			s.Get(b, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Set(a, s.P("x"), []byte("2"), -1)
			s.Flush(b)
			// Re-arming with getData gives exactly one more event.
			s.Get(b, s.P("x"), true)
			s.Get(b, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("3"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "exists watch fires once", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Exists(b, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Delete(a, s.P("x"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "child watch fires once", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("p"), nil, 0)
			s.Children(b, s.P("p"), true)
			s.Create(a, s.P("p/c1"), nil, 0)
			s.Create(a, s.P("p/c2"), nil, 0)
			s.Flush(b)
			s.Do(b, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: s.P("p"), Watch: true})
			s.Delete(a, s.P("p/c1"), -1)
			s.Delete(a, s.P("p/c2"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "exists on a missing node watches for NodeCreated", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Exists(b, s.P("x"), true)
			s.Create(a, s.P("x"), nil, 0)
			s.Flush(b)
			// Consumed by the create: a delete brings nothing.
			s.Delete(a, s.P("x"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "getData and getChildren on a missing node set no watch", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			s.Do(b, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: s.P("x"), Watch: true})
			s.Create(a, s.P("x"), nil, 0)
			s.Create(a, s.P("x/c"), nil, 0)
			s.Set(a, s.P("x"), []byte("d"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "one NodeDeleted per connection with data exist and child watches", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Exists(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			s.Children(b, s.P(""), true)
			s.Delete(a, s.P("x"), -1)
			s.Flush(b)
			// Every kind was consumed by the one event.
			s.Create(a, s.P("x"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "NodeDeleted reaches a child watch on the deleted node", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Children(b, s.P("x"), true)
			s.Delete(a, s.P("x"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "NodeChildrenChanged on child create and delete only", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("p/c"), nil, 0)
			s.Children(b, s.P("p"), true)
			// Neither a child's data nor a grandchild touches the child watch.
			s.Set(a, s.P("p/c"), []byte("d"), -1)
			s.Create(a, s.P("p/c/g"), nil, 0)
			s.Delete(a, s.P("p/c/g"), -1)
			s.Set(a, s.P("p"), []byte("d"), -1)
			s.Flush(b)
			s.Delete(a, s.P("p/c"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "setData fires only data watches", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Children(b, s.P("x"), true)
			s.Exists(b, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
			// The child watch is still armed.
			s.Create(a, s.P("x/c"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "setACL fires nothing", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
			s.Do(a, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("x"), ACL: zkproto.OpenACLUnsafe(), Version: -1})
			s.Flush(b)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "own create fires before its reply", Run: func(s *S) {
			c := s.Client("c")
			s.Create(c, s.P("p"), nil, 0)
			s.Exists(c, s.P("p/x"), true)
			s.Children(c, s.P("p"), true)
			s.Create(c, s.P("p/x"), nil, 0)
			s.Get(c, s.P("p/x"), true)
			s.Delete(c, s.P("p/x"), -1)
		}},
		&Scenario{Area: "watches", Name: "persistent watch keeps firing with child events", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			wtAdd(s, b, s.P("p"), zkproto.AddWatchPersistent)
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("p/c"), nil, 0)
			s.Set(a, s.P("p"), []byte("1"), -1)
			s.Set(a, s.P("p"), []byte("2"), -1)
			s.Set(a, s.P("p/c"), []byte("x"), -1)
			s.Create(a, s.P("p/c/g"), nil, 0)
			s.Delete(a, s.P("p/c/g"), -1)
			s.Delete(a, s.P("p/c"), -1)
			s.Delete(a, s.P("p"), -1)
			s.Create(a, s.P("p"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "persistent recursive over several levels", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("r"), nil, 0)
			wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
			s.Create(a, s.P("r/a"), nil, 0)
			s.Create(a, s.P("r/a/b"), nil, 0)
			s.Create(a, s.P("r/a/b/c"), nil, 0)
			s.Set(a, s.P("r/a/b/c"), []byte("1"), -1)
			s.Set(a, s.P("r"), []byte("1"), -1)
			s.Delete(a, s.P("r/a/b/c"), -1)
			s.Delete(a, s.P("r/a/b"), -1)
			// A sibling sharing the prefix is outside the subtree.
			s.Create(a, s.P("rr"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "standard then persistent on one path give one event", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Create(a, s.P("x/c"), nil, 0)
			s.Set(a, s.P("x"), []byte("2"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "persistent then standard on one path",
			Differs: "ZooKeeper 3.8 keeps one mode per connection and path, so a later getData/getChildren " +
				"watch turns a persistent watch into a one-shot one and it is silently lost after the next event " +
				"(fixed in ZooKeeper 3.9, ZOOKEEPER-4466); zkbridge keeps both registrations, as 3.9 does: " +
				"one event per trigger and the persistent watch stays",
			Run: func(s *S) {
				a, b := s.Client("a"), s.Client("b")
				s.Create(a, s.P("x"), nil, 0)
				wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
				s.Get(b, s.P("x"), true)
				s.Children(b, s.P("x"), true)
				s.Set(a, s.P("x"), []byte("1"), -1)
				s.Create(a, s.P("x/c"), nil, 0)
				s.Set(a, s.P("x"), []byte("2"), -1)
				s.Create(a, s.P("x/d"), nil, 0)
				s.Flush(b)
			},
			Check: func(lines []string) error {
				n := 0
				for _, l := range lines {
					if strings.HasPrefix(l, "b ! ") {
						n++
					}
				}
				if n != 4 {
					return fmt.Errorf("want 4 events (one per trigger), got %d", n)
				}
				return contains("b ! NodeDataChanged", "b ! NodeChildrenChanged", "b ! NodeDataChanged", "b ! NodeChildrenChanged")(lines)
			},
		},
		&Scenario{Area: "watches", Name: "removeWatches data and children on persistent watches",
			Differs: "ZooKeeper 3.8 lets removeWatches type Data or Children drop a persistent or recursive " +
				"registration of that manager (half a persistent watch survives); zkbridge is mode-exact as " +
				"ZooKeeper 3.9: Data and Children name the one-shot watches, persistent ones are removed with " +
				"Persistent, PersistentRecursive or Any (which is what 3.8 Java clients send for them)",
			Check: contains(
				"b > removeWatches", "b < NOWATCHER",
				"a > setData", "a > create", "b ! NodeDataChanged", "b ! NodeChildrenChanged",
				"b > removeWatches", "b < NOWATCHER",
				"a > create", "b ! NodeChildrenChanged",
				"b > removeWatches", "b < NOWATCHER",
				"b > removeWatches", "b < NOWATCHER",
				"a > create", "b ! NodeCreated"),
			Run: func(s *S) {
				a, b := s.Client("a"), s.Client("b")
				s.Create(a, s.P("x"), nil, 0)
				s.Create(a, s.P("r"), nil, 0)
				wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
				wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
				wtRemove(s, b, s.P("x"), zkproto.WatcherData)
				s.Set(a, s.P("x"), []byte("1"), -1)
				s.Create(a, s.P("x/c"), nil, 0)
				s.Flush(b)
				wtRemove(s, b, s.P("x"), zkproto.WatcherChildren)
				s.Create(a, s.P("x/d"), nil, 0)
				s.Flush(b)
				wtRemove(s, b, s.P("r"), zkproto.WatcherChildren)
				wtRemove(s, b, s.P("r"), zkproto.WatcherData)
				s.Create(a, s.P("r/c"), nil, 0)
				s.Flush(b)
			}},
		&Scenario{Area: "watches", Name: "recursive ancestor and standard watch give one event", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("r"), nil, 0)
			s.Create(a, s.P("r/x"), nil, 0)
			wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
			s.Get(b, s.P("r/x"), true)
			s.Exists(b, s.P("r/x"), true)
			s.Set(a, s.P("r/x"), []byte("1"), -1)
			s.Set(a, s.P("r/x"), []byte("2"), -1)
			s.Delete(a, s.P("r/x"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "recursive watch and child watch on one node", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("r"), nil, 0)
			wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
			s.Children(b, s.P("r"), true)
			s.Create(a, s.P("r/c"), nil, 0)
			s.Create(a, s.P("r/d"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "persistent watch under a recursive one", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("r"), nil, 0)
			s.Create(a, s.P("r/x"), nil, 0)
			wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
			wtAdd(s, b, s.P("r/x"), zkproto.AddWatchPersistent)
			s.Create(a, s.P("r/x/z"), nil, 0)
			s.Set(a, s.P("r/x"), []byte("1"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "removeWatches by type", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			wtRemove(s, b, s.P("x"), zkproto.WatcherData)
			wtRemove(s, b, s.P("x"), zkproto.WatcherData)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
			wtRemove(s, b, s.P("x"), zkproto.WatcherChildren)
			wtRemove(s, b, s.P("x"), zkproto.WatcherChildren)
			s.Create(a, s.P("x/c"), nil, 0)
			s.Flush(b)
			wtRemove(s, b, s.P("x"), zkproto.WatcherAny)
			wtRemove(s, b, s.P("missing"), zkproto.WatcherAny)
		}},
		&Scenario{Area: "watches", Name: "removeWatches any removes every kind", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P("x"), true)
			wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
			wtRemove(s, b, s.P("x"), zkproto.WatcherAny)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Create(a, s.P("x/c"), nil, 0)
			s.Delete(a, s.P("x/c"), -1)
			s.Flush(b)
			wtRemove(s, b, s.P("x"), zkproto.WatcherAny)
			// An exists watch on a missing node is removable too.
			s.Exists(b, s.P("y"), true)
			wtRemove(s, b, s.P("y"), zkproto.WatcherData)
			s.Create(a, s.P("y"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "removeWatches of a recursive watch", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("r"), nil, 0)
			wtAdd(s, b, s.P("r"), zkproto.AddWatchPersistentRecursive)
			s.Create(a, s.P("r/c"), nil, 0)
			wtRemove(s, b, s.P("r"), zkproto.WatcherAny)
			s.Create(a, s.P("r/d"), nil, 0)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "removeWatches only touches the own connection", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			wtRemove(s, a, s.P("x"), zkproto.WatcherData)
			wtRemove(s, a, s.P("x"), zkproto.WatcherAny)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "checkWatches on own watches", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			wtCheck(s, a, s.P("x"), zkproto.WatcherData)
			wtCheck(s, a, s.P("x"), zkproto.WatcherAny)
			s.Get(a, s.P("x"), true)
			wtCheck(s, a, s.P("x"), zkproto.WatcherData)
			wtCheck(s, a, s.P("x"), zkproto.WatcherAny)
			s.Children(a, s.P("x"), true)
			wtCheck(s, a, s.P("x"), zkproto.WatcherChildren)
			// checkWatches does not consume the watch.
			s.Set(a, s.P("x"), []byte("1"), -1)
			wtCheck(s, a, s.P("x"), zkproto.WatcherChildren)
			wtCheck(s, a, s.P("missing"), zkproto.WatcherAny)
		}},
		&Scenario{Area: "watches", Name: "checkWatches sees only the own connection",
			Differs: "ZooKeeper 3.8 answers checkWatches OK when any connection watches the path " +
				"(WatchManager.containsWatcher ignores the watcher); zkbridge checks the caller's own " +
				"registrations, as ZooKeeper 3.9 does, so a client is never told it holds a watch it does not",
			Run: func(s *S) {
				a, b := s.Client("a"), s.Client("b")
				s.Create(a, s.P("x"), nil, 0)
				s.Get(b, s.P("x"), true)
				wtCheck(s, a, s.P("x"), zkproto.WatcherData)
				wtCheck(s, b, s.P("x"), zkproto.WatcherData)
			},
			Check: contains(
				"a > checkWatches", "a < NOWATCHER",
				"b > checkWatches", "b < OK"),
		},
		&Scenario{Area: "watches", Name: "checkWatches and removeWatches of persistent types",
			Differs: "ZooKeeper 3.8 cannot name persistent watches in checkWatches/removeWatches " +
				"(WatcherType 4 and 5 fail with MarshallingError); zkbridge accepts them as ZooKeeper 3.9 does, " +
				"so 3.9 clients can check and remove exactly one kind",
			Run: func(s *S) {
				a, b := s.Client("a"), s.Client("b")
				s.Create(a, s.P("x"), nil, 0)
				wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistent)
				wtAdd(s, b, s.P("x"), zkproto.AddWatchPersistentRecursive)
				wtCheck(s, b, s.P("x"), zkproto.WatcherPersistent)
				wtCheck(s, b, s.P("x"), zkproto.WatcherPersistentRecursive)
				wtRemove(s, b, s.P("x"), zkproto.WatcherPersistentRecursive)
				wtCheck(s, b, s.P("x"), zkproto.WatcherPersistentRecursive)
				wtCheck(s, b, s.P("x"), zkproto.WatcherPersistent)
				s.Create(a, s.P("x/c"), nil, 0)
				s.Flush(b)
				wtRemove(s, b, s.P("x"), zkproto.WatcherPersistent)
				wtRemove(s, b, s.P("x"), zkproto.WatcherPersistent)
				s.Set(a, s.P("x"), []byte("1"), -1)
				s.Flush(b)
				wtCheck(s, b, s.P("x"), 6)
			},
			Check: func(lines []string) error {
				if err := contains(
					"b > checkWatches", "b < OK",
					"b > checkWatches", "b < OK",
					"b > removeWatches", "b < OK",
					"b > checkWatches", "b < NOWATCHER",
					"b > checkWatches", "b < OK",
					"b ! NodeChildrenChanged",
					"b > removeWatches", "b < OK",
					"b > removeWatches", "b < NOWATCHER",
					"a > setData", "a < OK",
					"b > checkWatches", "b < MARSHALLINGERROR")(lines); err != nil {
					return err
				}
				return wtNoLine(lines, "NodeDataChanged")
			},
		},
		&Scenario{Area: "watches", Name: "checkWatches and removeWatches with an unknown type", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(a, s.P("x"), true)
			wtCheck(s, a, s.P("x"), 9)
			wtRemove(s, a, s.P("x"), 0)
			s.Exists(a, s.P("x"), false)
		}},
		&Scenario{Area: "watches", Name: "events are filtered by READ ACL", Run: func(s *S) {
			alice, anon := s.Client("alice"), s.Client("anon")
			s.Auth(alice, "alice:secret")
			s.Create(alice, s.P("p"), nil, 0)
			// addWatch checks no ACL; delivery does.
			wtAdd(s, anon, s.P("p/secret"), zkproto.AddWatchPersistent)
			s.Exists(anon, s.P("p/open"), true)
			s.Children(anon, s.P("p"), true)
			s.Do(alice, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("p/secret"), Data: []byte("x"), ACL: zkproto.CreatorAllACL()})
			s.Set(alice, s.P("p/secret"), []byte("y"), -1)
			s.Create(alice, s.P("p/open"), nil, 0)
			s.Flush(anon)
			s.Delete(alice, s.P("p/secret"), -1)
			s.Flush(anon)
		}},
		&Scenario{Area: "watches", Name: "write-only ACL hides events", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			// The watch was set while readable; the event is judged at delivery.
			s.Do(a, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("x"),
				ACL: []zkproto.ACL{{Perms: zkproto.PermAll &^ zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}, Version: -1})
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
			s.Get(b, s.P("x"), true)
		}},
		&Scenario{Area: "watches", Name: "watches of two sessions on one node", Run: func(s *S) {
			a, b, c := s.Client("a"), s.Client("b"), s.Client("c")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Exists(c, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(b)
			s.Flush(c)
			s.Get(b, s.P("x"), true)
			s.Delete(a, s.P("x"), -1)
			s.Flush(c)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "events of a multi in op order", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("p/old"), nil, 0)
			s.Create(a, s.P("d"), nil, 0)
			s.Children(b, s.P("p"), true)
			s.Exists(b, s.P("p/new"), true)
			s.Get(b, s.P("d"), true)
			s.Exists(b, s.P("p/old"), true)
			wtAdd(s, b, s.P("q"), zkproto.AddWatchPersistentRecursive)
			s.Multi(a,
				OpSet(s.P("d"), []byte("1"), -1),
				OpCreate(s.P("p/new"), nil, 0),
				OpDelete(s.P("p/old"), -1),
				OpCreate(s.P("q"), nil, 0),
				OpCreate(s.P("q/a"), nil, 0),
				OpSet(s.P("q/a"), []byte("1"), -1),
			)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "a failed multi fires nothing", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(b, s.P("x"), true)
			s.Children(b, s.P(""), true)
			s.Multi(a,
				OpSet(s.P("x"), []byte("1"), -1),
				OpCreate(s.P("y"), nil, 0),
				OpCheck(s.P("x"), 7),
			)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "events for sequential creates", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("q"), nil, 0)
			s.Exists(b, s.P("q/n-0000000000"), true)
			s.Exists(b, s.P("q/n-0000000001"), true)
			s.Children(b, s.P("q"), true)
			s.Create(a, s.P("q/n-"), nil, int32(zkproto.ModePersistentSequential))
			s.Create(a, s.P("q/n-"), nil, int32(zkproto.ModeEphemeralSequential))
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "ephemeral deletion at closeSession fires watches", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("e1"), nil, int32(zkproto.ModeEphemeral))
			s.Create(a, s.P("e2"), nil, int32(zkproto.ModeEphemeral))
			s.Exists(b, s.P("e1"), true)
			s.Get(b, s.P("e2"), true)
			s.Do(a, zkproto.OpCloseSession, nil)
			s.Flush(b)
			s.Children(b, s.P(""), false)
		}},
		&Scenario{Area: "watches", Name: "setWatches catch-up events on a new connection", Run: func(s *S) {
			a, w := s.Client("a"), s.Client("w")
			s.Create(a, s.P("data"), nil, 0)
			s.Create(a, s.P("same"), nil, 0)
			s.Create(a, s.P("gone"), nil, 0)
			s.Create(a, s.P("kids"), nil, 0)
			s.Create(a, s.P("calm"), nil, 0)
			s.Create(a, s.P("there"), nil, 0)
			s.Get(w, s.P("calm"), false)
			rel := w.LastZxid
			w2 := wtReconnect(s, w, "w2")
			s.Set(a, s.P("data"), []byte("1"), -1)
			s.Delete(a, s.P("gone"), -1)
			s.Create(a, s.P("born"), nil, 0)
			s.Create(a, s.P("kids/c"), nil, 0)
			wtDoXid(s, w2, zkproto.XidSetWatches, zkproto.OpSetWatches, &zkproto.SetWatches{
				RelativeZxid: rel,
				DataWatches:  []string{s.P("data"), s.P("same"), s.P("gone")},
				ExistWatches: []string{s.P("born"), s.P("there"), s.P("never")},
				ChildWatches: []string{s.P("kids"), s.P("calm"), s.P("gone")},
			})
			// The registered ones fire on later changes.
			s.Set(a, s.P("same"), []byte("1"), -1)
			s.Create(a, s.P("never"), nil, 0)
			s.Create(a, s.P("calm/c"), nil, 0)
			s.Set(a, s.P("data"), []byte("2"), -1)
			s.Flush(w2)
		}},
		&Scenario{Area: "watches", Name: "setWatches with a normal xid", Run: func(s *S) {
			a, w := s.Client("a"), s.Client("w")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(w, s.P("x"), false)
			rel := w.LastZxid
			w2 := wtReconnect(s, w, "w2")
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Do(w2, zkproto.OpSetWatches, &zkproto.SetWatches{
				RelativeZxid: rel,
				DataWatches:  []string{s.P("x")},
				ExistWatches: []string{},
				ChildWatches: []string{s.P("x")},
			})
			s.Create(a, s.P("x/c"), nil, 0)
			s.Flush(w2)
		}},
		&Scenario{Area: "watches", Name: "setWatches with relativeZxid 0 reports every existing node", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			s.Do(a, zkproto.OpSetWatches, &zkproto.SetWatches{
				RelativeZxid: 0,
				DataWatches:  []string{s.P("x")},
				ExistWatches: []string{s.P("x")},
				ChildWatches: []string{s.P("x")},
			})
			s.Set(a, s.P("x"), []byte("1"), -1)
		}},
		&Scenario{Area: "watches", Name: "setWatches2 persistent watches get no catch-up", Run: func(s *S) {
			a, w := s.Client("a"), s.Client("w")
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("r"), nil, 0)
			s.Get(w, s.P("p"), false)
			rel := w.LastZxid
			w2 := wtReconnect(s, w, "w2")
			s.Set(a, s.P("p"), []byte("1"), -1)
			s.Create(a, s.P("r/c"), nil, 0)
			wtDoXid(s, w2, zkproto.XidSetWatches, zkproto.OpSetWatches2, &zkproto.SetWatches2{
				RelativeZxid:               rel,
				DataWatches:                []string{},
				ExistWatches:               []string{},
				ChildWatches:               []string{},
				PersistentWatches:          []string{s.P("p")},
				PersistentRecursiveWatches: []string{s.P("r")},
			})
			s.Set(a, s.P("p"), []byte("2"), -1)
			s.Create(a, s.P("p/c"), nil, 0)
			s.Set(a, s.P("r/c"), []byte("1"), -1)
			s.Create(a, s.P("r/c/d"), nil, 0)
			s.Flush(w2)
		}},
		&Scenario{Area: "watches", Name: "setWatches2 mixes standard and persistent lists", Run: func(s *S) {
			a, w := s.Client("a"), s.Client("w")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(w, s.P("x"), false)
			rel := w.LastZxid
			w2 := wtReconnect(s, w, "w2")
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Create(a, s.P("y"), nil, 0)
			s.Do(w2, zkproto.OpSetWatches2, &zkproto.SetWatches2{
				RelativeZxid:               rel,
				DataWatches:                []string{s.P("x")},
				ExistWatches:               []string{s.P("y")},
				ChildWatches:               []string{s.P("x")},
				PersistentWatches:          []string{s.P("x")},
				PersistentRecursiveWatches: []string{},
			})
			s.Set(a, s.P("x"), []byte("2"), -1)
			s.Flush(w2)
		}},
		&Scenario{Area: "watches", Name: "watches do not follow a session to a new connection", Run: func(s *S) {
			a, w := s.Client("a"), s.Client("w")
			s.Create(a, s.P("x"), nil, 0)
			s.Get(w, s.P("x"), true)
			wtAdd(s, w, s.P(""), zkproto.AddWatchPersistentRecursive)
			w2 := wtReconnect(s, w, "w2")
			s.Set(a, s.P("x"), []byte("1"), -1)
			s.Flush(w2)
			// Watches set on the new connection flow as usual.
			s.Get(w2, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("2"), -1)
			s.Flush(w2)
			wtCheck(s, w2, s.P(""), zkproto.WatcherAny)
		}},
	)
}

// wtNoLine fails when a line containing what appears.
func wtNoLine(lines []string, what string) error {
	for _, l := range lines {
		if strings.Contains(l, what) {
			return fmt.Errorf("unexpected line %q", l)
		}
	}
	return nil
}
