package compattests

import (
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Helpers of the containers area.

// ctReapWait bounds waiting for the reaper: five check intervals of the
// slower server, at least 5 s (the go tests' servers check every second).
func ctReapWait(s *S) time.Duration { return max(5*time.Second, 5*s.Reaper()) }

// ctQuiet is how long a scenario watches for a reap that must not happen:
// more than two reaper passes.
func ctQuiet(s *S) time.Duration { return s.Reaper() * 5 / 2 }

// ctContainer is createContainer (op 19) with an open ACL.
func ctContainer(s *S, c *Client, path string, data []byte, flags int32) *Reply {
	return s.Do(c, zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags})
}

// ctTTL is createTTL (op 21) with an open ACL.
func ctTTL(s *S, c *Client, path string, data []byte, flags int32, ttl int64) *Reply {
	return s.Do(c, zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags, TTL: ttl})
}

// ctQuietFor waits d for events on c that must not come, recording any.
func ctQuietFor(s *S, c *Client, d time.Duration) {
	if c == nil {
		return
	}
	if n := c.WaitEvents(1, d); n > 0 {
		s.T.Logf("%s got an event while it should stay quiet", c.Name)
	}
}

func init() {
	register(
		&Scenario{Area: "containers", Name: "createContainer stat", Run: func(s *S) {
			c := s.Client("c")
			ctContainer(s, c, s.P("k"), []byte("d"), int32(zkproto.ModeContainer))
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Exists(c, s.P("k"), false)
			s.Get(c, s.P("k"), false)
			s.Set(c, s.P("k"), []byte("e"), 0)
		}},
		&Scenario{Area: "containers", Name: "container reaped after its last child is deleted", Needs: NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("k/a"), nil, 0)
			s.Create(c, s.P("k/b"), nil, 0)
			s.Exists(w, s.P("k"), true)
			s.Children(w, s.P(""), true)
			s.Delete(c, s.P("k/a"), -1)
			s.Delete(c, s.P("k/b"), -1)
			s.Await(w, 2, ctReapWait(s))
			s.Exists(c, s.P("k"), false)
			// A client creating under the reaped container sees NoNode.
			s.Create(c, s.P("k/c"), nil, 0)
		}},
		&Scenario{Area: "containers", Name: "never-used container is kept", Needs: NeedReaper, Run: func(s *S) {
			c := s.Client("c")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Exists(c, s.P("k"), true)
			ctQuietFor(s, c, ctQuiet(s))
			s.Exists(c, s.P("k"), false)
		}},
		&Scenario{Area: "containers", Name: "container with children is kept", Needs: NeedReaper, Run: func(s *S) {
			c := s.Client("c")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("k/a"), nil, 0)
			s.Create(c, s.P("k/b"), nil, 0)
			s.Delete(c, s.P("k/a"), -1)
			s.Exists(c, s.P("k"), true)
			ctQuietFor(s, c, ctQuiet(s))
			s.Children(c, s.P("k"), false)
		}},
		&Scenario{Area: "containers", Name: "flag 4 through create is a plain node", Needs: NeedReaper, Run: func(s *S) {
			c := s.Client("c")
			s.Create2(c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("k2"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("k/a"), nil, 0)
			s.Delete(c, s.P("k/a"), -1)
			s.Exists(c, s.P("k"), true)
			ctQuietFor(s, c, ctQuiet(s))
			s.Exists(c, s.P("k"), false)
		}},
		&Scenario{Area: "containers", Name: "createContainer with other flags", Run: func(s *S) {
			c := s.Client("c")
			// The opcode decides: every flag makes a container; sequential ones get a suffix.
			ctContainer(s, c, s.P("p0"), nil, int32(zkproto.ModePersistent))
			ctContainer(s, c, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			ctContainer(s, c, s.P("s-"), nil, int32(zkproto.ModePersistentSequential))
			ctContainer(s, c, s.P("es-"), nil, int32(zkproto.ModeEphemeralSequential))
			ctContainer(s, c, s.P("t"), nil, int32(zkproto.ModePersistentWithTTL))
			ctContainer(s, c, s.P("bad"), nil, 9)
			s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "containers", Name: "sequential containers are reaped too", Needs: NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctContainer(s, c, s.P("q-"), nil, int32(zkproto.ModePersistentSequential))
			s.Create(c, s.P("q-0000000000/x"), nil, 0)
			s.Exists(w, s.P("q-0000000000"), true)
			s.Delete(c, s.P("q-0000000000/x"), -1)
			s.Await(w, 1, ctReapWait(s))
			ctContainer(s, c, s.P("q-"), nil, int32(zkproto.ModePersistentSequential))
		}},
		&Scenario{Area: "containers", Name: "container emptied by closeSession is reaped", Needs: NeedReaper, Run: func(s *S) {
			c, e, w := s.Client("c"), s.Client("e"), s.Client("w")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Create(e, s.P("k/member"), nil, int32(zkproto.ModeEphemeral))
			s.Exists(w, s.P("k"), true)
			s.Do(e, zkproto.OpCloseSession, nil)
			s.Await(w, 1, ctReapWait(s))
		}},
		&Scenario{Area: "containers", Name: "nested containers reaped bottom up", Needs: NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctContainer(s, c, s.P("a"), nil, int32(zkproto.ModeContainer))
			ctContainer(s, c, s.P("a/b"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("a/b/c"), nil, 0)
			s.Exists(w, s.P("a"), true)
			s.Exists(w, s.P("a/b"), true)
			s.Delete(c, s.P("a/b/c"), -1)
			s.Await(w, 2, 2*ctReapWait(s))
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "containers", Name: "container deleted by a client", Run: func(s *S) {
			c := s.Client("c")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Create(c, s.P("k/a"), nil, 0)
			s.Delete(c, s.P("k"), -1)
			s.Delete(c, s.P("k/a"), -1)
			s.Delete(c, s.P("k"), 0)
			s.Exists(c, s.P("k"), false)
		}},
		&Scenario{Area: "containers", Name: "deleteContainer from a client", Run: func(s *S) {
			c := s.Client("c")
			ctContainer(s, c, s.P("k"), nil, int32(zkproto.ModeContainer))
			s.Do(c, zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{Path: s.P("k")})
			s.Do(c, zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{Path: s.P("missing")})
			// The failed request consumed a zxid: the next write shows it.
			s.Create(c, s.P("x"), nil, 0)
			s.Exists(c, s.P("k"), false)
		}},
		&Scenario{Area: "containers", Name: "containers and TTL nodes in a multi", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c")
			s.Multi(c,
				zkproto.MultiOp{Type: zkproto.OpCreateContainer, Request: &zkproto.CreateRequest{Path: s.P("k"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeContainer)}},
				zkproto.MultiOp{Type: zkproto.OpCreateTTL, Request: &zkproto.CreateTTLRequest{Path: s.P("t"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModePersistentWithTTL), TTL: 60000}},
				zkproto.MultiOp{Type: zkproto.OpCreate2, Request: &zkproto.CreateRequest{Path: s.P("k/a"), ACL: zkproto.OpenACLUnsafe()}},
			)
			s.Multi(c,
				zkproto.MultiOp{Type: zkproto.OpCreateTTL, Request: &zkproto.CreateTTLRequest{Path: s.P("t2"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModePersistentWithTTL), TTL: 0}},
			)
			s.Exists(c, s.P("k"), false)
			s.Exists(c, s.P("t"), false)
		}},
		&Scenario{Area: "containers", Name: "createTTL stat and sequential name", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c")
			ctTTL(s, c, s.P("t"), []byte("d"), int32(zkproto.ModePersistentWithTTL), 60000)
			ctTTL(s, c, s.P("t"), nil, int32(zkproto.ModePersistentWithTTL), 60000)
			ctTTL(s, c, s.P("s-"), nil, int32(zkproto.ModePersistentSequentialWithTTL), 60000)
			ctTTL(s, c, s.P("s-"), nil, int32(zkproto.ModePersistentSequentialWithTTL), 60000)
			s.Get(c, s.P("t"), false)
			s.Create(c, s.P("t/child"), nil, 0)
			s.Create(c, s.P("t/eph"), nil, int32(zkproto.ModeEphemeral))
		}},
		&Scenario{Area: "containers", Name: "TTL validation", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c")
			ctTTL(s, c, s.P("t0"), nil, int32(zkproto.ModePersistentWithTTL), 0)
			ctTTL(s, c, s.P("tn"), nil, int32(zkproto.ModePersistentWithTTL), -1)
			ctTTL(s, c, s.P("tmax"), nil, int32(zkproto.ModePersistentWithTTL), 0xFFFFFFFFFF)
			ctTTL(s, c, s.P("tover"), nil, int32(zkproto.ModePersistentWithTTL), 0xFFFFFFFFFF+1)
			ctTTL(s, c, s.P("f0"), nil, int32(zkproto.ModePersistent), 1000)
			ctTTL(s, c, s.P("f1"), nil, int32(zkproto.ModeEphemeral), 1000)
			ctTTL(s, c, s.P("f2"), nil, int32(zkproto.ModePersistentSequential), 1000)
			ctTTL(s, c, s.P("f4"), nil, int32(zkproto.ModeContainer), 1000)
			ctTTL(s, c, s.P("f9"), nil, 9, 1000)
			ctTTL(s, c, s.P("missing/t"), nil, int32(zkproto.ModePersistentWithTTL), 1000)
			s.Create(c, s.P("c5"), nil, int32(zkproto.ModePersistentWithTTL))
			s.Create2(c, s.P("c6"), nil, int32(zkproto.ModePersistentSequentialWithTTL))
			s.Create(c, s.P("x"), nil, 0)
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "containers", Name: "TTL node reaped after its TTL", Needs: NeedTTL | NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctTTL(s, c, s.P("t"), []byte("x"), int32(zkproto.ModePersistentWithTTL), 500)
			s.Exists(w, s.P("t"), true)
			s.Children(w, s.P(""), true)
			s.Await(w, 2, ctReapWait(s))
			s.Exists(c, s.P("t"), false)
		}},
		&Scenario{Area: "containers", Name: "sequential TTL node reaped after its TTL", Needs: NeedTTL | NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctTTL(s, c, s.P("t-"), nil, int32(zkproto.ModePersistentSequentialWithTTL), 300)
			s.Exists(w, s.P("t-0000000000"), true)
			s.Await(w, 1, ctReapWait(s))
		}},
		&Scenario{Area: "containers", Name: "setData refreshes a TTL", Needs: NeedTTL | NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctTTL(s, c, s.P("t"), nil, int32(zkproto.ModePersistentWithTTL), 1500)
			s.Exists(w, s.P("t"), true)
			// Writes every 500 ms for 3 s keep it alive past twice its TTL.
			for i := 0; i < 6; i++ {
				time.Sleep(500 * time.Millisecond)
				s.Set(c, s.P("t"), []byte{byte('0' + i)}, -1)
			}
			s.Flush(w)
			s.Exists(w, s.P("t"), true)
			s.Await(w, 1, ctReapWait(s))
		}},
		&Scenario{Area: "containers", Name: "TTL node with a child is kept", Needs: NeedTTL | NeedReaper, Run: func(s *S) {
			c, w := s.Client("c"), s.Client("w")
			ctTTL(s, c, s.P("t"), nil, int32(zkproto.ModePersistentWithTTL), 200)
			s.Create(c, s.P("t/a"), nil, 0)
			s.Exists(w, s.P("t"), true)
			ctQuietFor(s, w, ctQuiet(s))
			// Child activity does not refresh the TTL: once empty it goes.
			s.Delete(c, s.P("t/a"), -1)
			s.Await(w, 1, ctReapWait(s))
		}},
		&Scenario{Area: "containers", Name: "plain nodes and ephemerals are never reaped", Needs: NeedReaper, Run: func(s *S) {
			c := s.Client("c")
			s.Create(c, s.P("p"), nil, 0)
			s.Create(c, s.P("p/a"), nil, 0)
			s.Delete(c, s.P("p/a"), -1)
			s.Create(c, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			s.Exists(c, s.P("p"), true)
			s.Exists(c, s.P("e"), true)
			ctQuietFor(s, c, ctQuiet(s))
			s.Children(c, s.P(""), false)
		}},
	)
}
