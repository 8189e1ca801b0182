package compattests

import (
	"github.com/zkbridge/zkbridge/zkproto"
)

// OpCreate2 builds a multi create2 (op 15).
func OpCreate2(path string, data []byte, flags int32) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpCreate2, Request: &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags}}
}

// OpCreateContainer builds a multi createContainer (op 19).
func OpCreateContainer(path string, data []byte) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpCreateContainer, Request: &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeContainer)}}
}

// OpCreateTTL builds a multi createTTL (op 21).
func OpCreateTTL(path string, data []byte, flags int32, ttl int64) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpCreateTTL, Request: &zkproto.CreateTTLRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags, TTL: ttl}}
}

// OpGetData builds a multiRead getData.
func OpGetData(path string, watch bool) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: path, Watch: watch}}
}

// OpGetChildren builds a multiRead getChildren.
func OpGetChildren(path string, watch bool) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpGetChildren, Request: &zkproto.GetChildrenRequest{Path: path, Watch: watch}}
}

// MultiRead is multiRead (op 22).
func (s *S) MultiRead(c *Client, ops ...zkproto.MultiOp) *Reply {
	return s.Do(c, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: ops})
}

func init() {
	register(
		&Scenario{Area: "multi", Name: "every write op type succeeds", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("old"), []byte("o"), 0)
			s.Multi(c,
				OpCreate(s.P("a"), []byte("a"), 0),
				OpCreate2(s.P("b"), []byte("b"), 0),
				OpCreateContainer(s.P("c"), []byte("c")),
				OpCreateTTL(s.P("t"), []byte("t"), int32(zkproto.ModePersistentWithTTL), 60000),
				OpSet(s.P("old"), []byte("o2"), 0),
				OpCheck(s.P("old"), 1),
				OpDelete(s.P("old"), 1),
			)
			s.Exists(c, s.P("b"), false)
			s.Exists(c, s.P("c"), false)
			s.Exists(c, s.P("t"), false)
			s.Exists(c, s.P("old"), false)
		}},
		&Scenario{Area: "multi", Name: "create2 sequential and ephemeral inside multi", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c1")
			s.Multi(c,
				OpCreate2(s.P("s-"), nil, int32(zkproto.ModePersistentSequential)),
				OpCreate2(s.P("e"), []byte("e"), int32(zkproto.ModeEphemeral)),
				OpCreate2(s.P("es-"), nil, int32(zkproto.ModeEphemeralSequential)),
				OpCreateTTL(s.P("ts-"), nil, int32(zkproto.ModePersistentSequentialWithTTL), 60000),
			)
			s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
		}},
		&Scenario{Area: "multi", Name: "failure at the first op", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c, OpCreate(s.P("a"), nil, 0), OpCreate(s.P("b"), nil, 0), OpSet(s.P("a"), []byte("x"), -1))
			s.Exists(c, s.P("b"), false)
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "failure at a middle op", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c, OpCreate(s.P("b"), nil, 0), OpSet(s.P("missing"), []byte("x"), -1), OpDelete(s.P("a"), -1), OpCheck(s.P("a"), 0))
			s.Exists(c, s.P("a"), false)
			s.Exists(c, s.P("b"), false)
		}},
		&Scenario{Area: "multi", Name: "failure at the last op", Run: func(s *S) {
			c := s.Client("c1")
			s.Multi(c, OpCreate(s.P("a"), nil, 0), OpCreate(s.P("a/b"), nil, 0), OpDelete(s.P("nothere"), -1))
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "check versions", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c, OpCheck(s.P("a"), 0))
			s.Multi(c, OpCheck(s.P("a"), -1))
			s.Multi(c, OpCheck(s.P("a"), 3))
			s.Multi(c, OpCheck(s.P("missing"), -1))
			s.Multi(c, OpCheck(s.P("bad/"), -1))
			// later ops see the effects of earlier ones
			s.Multi(c, OpSet(s.P("a"), []byte("1"), 0), OpCheck(s.P("a"), 1), OpSet(s.P("a"), []byte("2"), 1), OpCheck(s.P("a"), 2))
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "error codes inside multi", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("p"), nil, 0)
			s.Create(c, s.P("p/kid"), nil, 0)
			s.CreateACL(c, s.P("ro"), nil, zkproto.ReadACLUnsafe())
			s.Create(c, s.P("eph"), nil, int32(zkproto.ModeEphemeral))
			s.Multi(c, OpCreate(s.P("p"), nil, 0))
			s.Multi(c, OpCreate(s.P("nope/x"), nil, 0))
			s.Multi(c, OpDelete(s.P("p"), -1))
			s.Multi(c, OpSet(s.P("p"), nil, 4))
			s.Multi(c, OpDelete(s.P("p/kid"), 9))
			s.Multi(c, OpSet(s.P("ro"), nil, -1))
			s.Multi(c, OpCreate(s.P("ro/kid"), nil, 0))
			s.Multi(c, OpCreate(s.P("eph/kid"), nil, 0))
			s.Multi(c, OpCreate(s.P("bad/"), nil, 0))
			s.Multi(c, OpCreate(s.P("flags"), nil, 42))
			s.Multi(c, OpCreateTTL(s.P("ttl"), nil, int32(zkproto.ModePersistentWithTTL), 0))
			s.Multi(c, OpCreateTTL(s.P("ttl"), nil, 0, 100))
			s.Multi(c, zkproto.MultiOp{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{Path: s.P("acl"), ACL: []zkproto.ACL{}}})
			s.Multi(c, OpCreate(s.P("ttlflags"), nil, int32(zkproto.ModePersistentWithTTL)))
			s.Multi(c, OpCreateTTL(s.P("ttlbadflags"), nil, 42, 100))
			s.Multi(c, zkproto.MultiOp{Type: zkproto.OpCreateContainer, Request: &zkproto.CreateRequest{Path: s.P("plain19"), ACL: zkproto.OpenACLUnsafe()}})
			s.Multi(c, OpCreate(s.P("container1"), nil, int32(zkproto.ModeContainer)))
			s.Multi(c, OpCreateTTL(s.P("container21"), nil, int32(zkproto.ModeContainer), 100))
			s.Multi(c, OpDelete("/zookeeper", -1))
			s.Multi(c, OpDelete("/", -1))
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "multi", Name: "sequential names are consecutive", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("q"), nil, 0)
			s.Create(c, s.P("q/plain"), nil, 0)
			s.Multi(c,
				OpCreate(s.P("q/n-"), nil, int32(zkproto.ModePersistentSequential)),
				OpCreate(s.P("q/other"), nil, 0),
				OpCreate(s.P("q/n-"), nil, int32(zkproto.ModeEphemeralSequential)),
				OpCreate(s.P("q/"), nil, int32(zkproto.ModePersistentSequential)),
			)
			// a failed multi does not use up sequence numbers
			s.Multi(c, OpCreate(s.P("q/n-"), nil, int32(zkproto.ModePersistentSequential)), OpCheck(s.P("q"), 99))
			s.Create(c, s.P("q/n-"), nil, int32(zkproto.ModePersistentSequential))
			s.Children(c, s.P("q"), false)
		}},
		&Scenario{Area: "multi", Name: "create then delete the same node", Run: func(s *S) {
			c := s.Client("c1")
			s.Exists(c, s.P("x"), true)
			s.Children(c, s.P(""), true)
			s.Multi(c, OpCreate(s.P("x"), []byte("x"), 0), OpSet(s.P("x"), []byte("y"), 0), OpDelete(s.P("x"), 1))
			s.Exists(c, s.P("x"), false)
			s.Exists(c, s.P(""), false)
			s.Flush(c)
		}},
		&Scenario{Area: "multi", Name: "delete a parent after its child", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("p"), nil, 0)
			s.Create(c, s.P("p/c"), nil, 0)
			s.Multi(c, OpDelete(s.P("p"), -1), OpDelete(s.P("p/c"), -1))
			s.Multi(c, OpDelete(s.P("p/c"), -1), OpDelete(s.P("p"), -1))
			s.Exists(c, s.P("p"), false)
			// and build a tree bottom-up fails, top-down works
			s.Multi(c, OpCreate(s.P("t/u"), nil, 0), OpCreate(s.P("t"), nil, 0))
			s.Multi(c, OpCreate(s.P("t"), nil, 0), OpCreate(s.P("t/u"), nil, 0))
			s.Children(c, s.P("t"), false)
		}},
		&Scenario{Area: "multi", Name: "empty multi consumes a zxid", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c)
			s.Create(c, s.P("b"), nil, 0)
			s.Exists(c, s.P("b"), false)
		}},
		&Scenario{Area: "multi", Name: "read op in a write multi", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.Multi(c, OpCreate(s.P("b"), nil, 0), OpGetData(s.P("a"), false))
			s.Multi(c, OpGetChildren(s.P("a"), false))
			s.Create(c, s.P("c"), nil, 0)
			s.Exists(c, s.P("b"), false)
			s.Exists(c, s.P("c"), false)
		}},
		&Scenario{Area: "multi", Name: "unknown op type in multi", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c, zkproto.MultiOp{Type: zkproto.OpDeleteContainer, Request: &zkproto.DeleteRequest{Path: s.P("a"), Version: -1}})
			s.Create(c, s.P("b"), nil, 0)
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "multiRead with NoNode and NoAuth members", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.Create(c, s.P("a/b"), nil, 0)
			s.CreateACL(c, s.P("secret"), []byte("s"), acl(zkproto.PermWrite, "world", "anyone"))
			s.MultiRead(c,
				OpGetData(s.P("secret"), false),
				OpGetChildren(s.P("a"), false),
				OpGetChildren(s.P("missing"), false),
				OpGetData(s.P("a"), false),
				OpGetChildren(s.P("secret"), false),
				OpGetData(s.P("a/b"), false),
			)
			s.MultiRead(c)
			s.MultiRead(c, OpGetData(s.P("bad/"), false), OpGetData("noslash", false))
		}},
		&Scenario{Area: "multi", Name: "multiRead with a write op", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.MultiRead(c, OpGetData(s.P("a"), false), OpCreate(s.P("b"), nil, 0))
			s.MultiRead(c, OpCheck(s.P("a"), 0))
			s.Create(c, s.P("c"), nil, 0)
			s.Exists(c, s.P("b"), false)
		}},
		&Scenario{Area: "multi", Name: "multiRead ignores watch flags", Run: func(s *S) {
			c := s.Client("c1")
			o := s.Client("other")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.MultiRead(c, OpGetData(s.P("a"), true), OpGetChildren(s.P("a"), true))
			s.Set(o, s.P("a"), []byte("y"), -1)
			s.Create(o, s.P("a/kid"), nil, 0)
			s.Flush(c)
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "multi events in op order before the reply", Run: func(s *S) {
			c := s.Client("c1")
			w := s.Client("watcher")
			s.Create(c, s.P("d"), []byte("d"), 0)
			s.Create(c, s.P("gone"), nil, 0)
			for _, p := range []string{"n", "d", "gone"} {
				s.Exists(w, s.P(p), true)
			}
			s.Children(w, s.P(""), true)
			s.Get(c, s.P("d"), true)
			s.Multi(c,
				OpCreate(s.P("n"), nil, 0),
				OpSet(s.P("d"), []byte("d2"), -1),
				OpDelete(s.P("gone"), -1),
			)
			s.Flush(w)
		}},
		&Scenario{Area: "multi", Name: "failed multi fires no events", Run: func(s *S) {
			c := s.Client("c1")
			w := s.Client("watcher")
			s.Create(c, s.P("d"), []byte("d"), 0)
			s.Exists(w, s.P("n"), true)
			s.Get(w, s.P("d"), true)
			s.Children(w, s.P(""), true)
			s.Multi(c, OpCreate(s.P("n"), nil, 0), OpSet(s.P("d"), []byte("x"), -1), OpCheck(s.P("d"), 0))
			s.Flush(w)
			s.Set(c, s.P("d"), []byte("y"), -1)
			s.Flush(w)
		}},
		&Scenario{Area: "multi", Name: "failed multi stat effects", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("p"), nil, 0)
			s.Multi(c, OpCreate(s.P("p/a"), nil, 0), OpDelete(s.P("p/zz"), -1))
			s.Exists(c, s.P("p"), false)
			s.Multi(c, OpCreate(s.P("p/a"), nil, 0), OpCreate(s.P("p/b"), nil, 0), OpDelete(s.P("p/a"), -1))
			s.Exists(c, s.P("p"), false)
			s.Create(c, s.P("p/s-"), nil, int32(zkproto.ModePersistentSequential))
		}},
		&Scenario{Area: "multi", Name: "same node created twice", Run: func(s *S) {
			c := s.Client("c1")
			s.Multi(c, OpCreate(s.P("a"), nil, 0), OpCreate(s.P("a"), nil, 0))
			s.Multi(c, OpCreate(s.P("a"), nil, 0), OpDelete(s.P("a"), -1), OpCreate(s.P("a"), []byte("again"), 0))
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "multi", Name: "ephemeral parent inside multi", Needs: NeedTTL, Run: func(s *S) {
			c := s.Client("c1")
			s.Multi(c, OpCreate(s.P("e"), nil, int32(zkproto.ModeEphemeral)), OpCreate(s.P("e/kid"), nil, 0))
			s.Multi(c, OpCreateContainer(s.P("k"), nil), OpCreate(s.P("k/kid"), nil, 0), OpCreateTTL(s.P("t"), nil, int32(zkproto.ModePersistentWithTTL), 60000), OpCreate(s.P("t/kid"), nil, 0))
			s.Children(c, s.P(""), false)
		}},
	)
}
