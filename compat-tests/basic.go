package compattests

import (
	"bytes"
	"strconv"

	"github.com/zkbridge/zkbridge/zkproto"
)

func init() {
	register(
		&Scenario{Area: "special", Name: "fresh root and zookeeper nodes", Needs: NeedFresh, Run: func(s *S) {
			c := s.Client("c1")
			s.Exists(c, "/zookeeper", false)
			s.Get(c, "/zookeeper/quota", false)
			s.GetConfig(c, false)
			s.GetConfig(c, true)
			s.Do(c, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/"})
			s.Do(c, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/zookeeper"})
		}},
		&Scenario{Area: "basic", Name: "create get set delete", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("hello"), 0)
			s.Get(c, s.P("a"), false)
			s.Set(c, s.P("a"), []byte("world"), -1)
			s.Set(c, s.P("a"), []byte("again"), 1)
			s.Get(c, s.P("a"), false)
			s.Exists(c, s.P("a"), false)
			s.Delete(c, s.P("a"), 2)
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "basic", Name: "create errors consume zxids", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Create(c, s.P("a"), nil, 0)
			s.Create(c, s.P("nope/x"), nil, 0)
			s.Create(c, s.P("bad/"), nil, 0)
			s.Create(c, s.P("nope/x/"), nil, 0)
			s.Create(c, s.P("a"), nil, 9)
			s.Create(c, "relative", nil, 0)
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "basic", Name: "null and empty data", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("null"), nil, 0)
			s.Create(c, s.P("empty"), []byte{}, 0)
			s.Get(c, s.P("null"), false)
			s.Get(c, s.P("empty"), false)
			s.Set(c, s.P("empty"), nil, -1)
			s.Get(c, s.P("empty"), false)
		}},
		&Scenario{Area: "basic", Name: "create2 returns the stat", Run: func(s *S) {
			c := s.Client("c1")
			s.Create2(c, s.P("a"), []byte("x"), 0)
			s.Create2(c, s.P("a"), []byte("x"), 0)
			s.Create2(c, s.P("s-"), []byte("x"), int32(zkproto.ModePersistentSequential))
		}},
		&Scenario{Area: "basic", Name: "set and delete version checks", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("1"), 0)
			s.Set(c, s.P("a"), []byte("2"), 5)
			s.Delete(c, s.P("a"), 7)
			s.Set(c, s.P("missing"), []byte("2"), -1)
			s.Delete(c, s.P("missing"), -1)
			s.Create(c, s.P("a/b"), nil, 0)
			s.Delete(c, s.P("a"), -1)
			s.Delete(c, s.P("a/b"), 0)
			s.Delete(c, s.P("a"), 0)
		}},
		&Scenario{Area: "basic", Name: "children and child stats", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("p"), nil, 0)
			for _, n := range []string{"c", "a", "b"} {
				s.Create(c, s.P("p/"+n), []byte(n), 0)
			}
			s.Children(c, s.P("p"), false)
			s.Do(c, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: s.P("p")})
			s.Delete(c, s.P("p/a"), -1)
			s.Children(c, s.P("p"), false)
			s.Set(c, s.P("p/b"), []byte("bb"), -1)
			s.Exists(c, s.P("p"), false)
			s.Children(c, s.P("nope"), false)
			s.Children(c, s.P("p/c"), false)
		}},
		&Scenario{Area: "basic", Name: "sequential naming", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("seq"), nil, 0)
			s.Create(c, s.P("seq/a"), nil, 0)
			s.Delete(c, s.P("seq/a"), -1)
			s.Create(c, s.P("seq/"), nil, int32(zkproto.ModePersistentSequential))
			s.Create(c, s.P("seq/x-"), nil, int32(zkproto.ModePersistentSequential))
			s.Create(c, s.P("seq/x-"), nil, int32(zkproto.ModeEphemeralSequential))
			s.Exists(c, s.P("seq"), false)
		}},
		&Scenario{Area: "basic", Name: "ephemerals", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("e"), []byte("x"), int32(zkproto.ModeEphemeral))
			s.Exists(c, s.P("e"), false)
			s.Create(c, s.P("e/child"), nil, 0)
			s.Create(c, s.P("e/child"), nil, int32(zkproto.ModeEphemeral))
			s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
			s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("nomatch")})
		}},
		&Scenario{Area: "basic", Name: "getAllChildrenNumber", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Create(c, s.P("a/b"), nil, 0)
			s.Create(c, s.P("a/b/c"), nil, 0)
			s.Create(c, s.P("ab"), nil, 0)
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("a")})
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("")})
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("missing")})
		}},
		&Scenario{Area: "basic", Name: "sync and ping", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Do(c, zkproto.OpSync, &zkproto.SyncRequest{Path: s.P("a")})
			s.Do(c, zkproto.OpSync, &zkproto.SyncRequest{Path: s.P("missing")})
			s.Do(c, zkproto.OpPing, nil)
		}},
		&Scenario{Area: "basic", Name: "data at the 1 MiB boundary", Run: func(s *S) {
			c := s.Client("c1")
			path := s.P("big")
			// The largest frame ZooKeeper accepts is 1048575 bytes: header 8,
			// path, data length 4, ACL vector 4+4+5+4+6+4, flags 4.
			overhead := 8 + 4 + len(path) + 4 + 31 + 4
			fits := bytes.Repeat([]byte("x"), zkproto.DefaultMaxBuffer-overhead)
			s.Create(c, path, fits, 0)
			s.Exists(c, path, false)
			c2 := s.Client("c2")
			s.Create(c2, s.P("toobig"), bytes.Repeat([]byte("y"), 1<<20), 0)
		}},
		&Scenario{Area: "basic", Name: "pipelined reads and writes reply in order", Run: func(s *S) {
			c := s.Client("c1")
			pl := s.Pipeline(c)
			pl.Send(zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("p"), ACL: zkproto.OpenACLUnsafe()})
			pl.Send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: s.P("p")})
			pl.Send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: s.P("p"), Data: []byte("1"), Version: -1})
			pl.Send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: s.P("p"), Data: []byte("2"), Version: -1})
			pl.Send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: s.P("p")})
			pl.Send(zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("p/c"), ACL: zkproto.OpenACLUnsafe()})
			pl.Send(zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: s.P("p")})
			pl.Replies()
		}},
		&Scenario{Area: "basic", Name: "pipelined read between writes of other paths sees its place", Run: func(s *S) {
			// The read touches none of the writes' paths, so only the
			// session order places it: it sees setData /a and not setData
			// /b, and its watch event comes after its reply and before
			// setData /b's.
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("0"), 0)
			s.Create(c, s.P("b"), []byte("0"), 0)
			pl := s.Pipeline(c)
			for i := 1; i <= 3; i++ {
				v := []byte(strconv.Itoa(i))
				pl.Send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: s.P("a"), Data: v, Version: -1})
				pl.Send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: s.P("b"), Watch: true})
				pl.Send(zkproto.OpExists, &zkproto.ExistsRequest{Path: s.P("a")})
				pl.Send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: s.P("b"), Data: v, Version: -1})
			}
			pl.Replies()
		}},
		&Scenario{Area: "basic", Name: "setACL versions and stat", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.Do(c, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("a"), ACL: zkproto.ReadACLUnsafe(), Version: 3})
			s.Do(c, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("a"), ACL: zkproto.OpenACLUnsafe(), Version: 0})
			s.Do(c, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("a"), ACL: zkproto.OpenACLUnsafe(), Version: -1})
			s.Do(c, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: s.P("a")})
			s.Do(c, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: s.P("missing"), ACL: zkproto.OpenACLUnsafe(), Version: -1})
		}},
		&Scenario{Area: "multi", Name: "successful multi", Run: func(s *S) {
			c := s.Client("c1")
			s.Multi(c,
				OpCreate(s.P("m"), []byte("a"), 0),
				OpCreate(s.P("m/n-"), nil, int32(zkproto.ModePersistentSequential)),
				OpCreate(s.P("m/n-"), nil, int32(zkproto.ModePersistentSequential)),
				OpSet(s.P("m"), []byte("b"), 0),
				OpCheck(s.P("m"), 1),
				OpDelete(s.P("m/n-0000000000"), -1),
			)
			s.Children(c, s.P("m"), false)
		}},
		&Scenario{Area: "multi", Name: "failed multi framing", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Multi(c,
				OpCreate(s.P("b"), nil, 0),
				OpCheck(s.P("a"), 5),
				OpDelete(s.P("a"), -1),
			)
			s.Exists(c, s.P("b"), false)
			s.Multi(c)
		}},
		&Scenario{Area: "multi", Name: "multiRead partial failure", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.Create(c, s.P("a/b"), nil, 0)
			s.Do(c, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
				{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: s.P("a")}},
				{Type: zkproto.OpGetChildren, Request: &zkproto.GetChildrenRequest{Path: s.P("a")}},
				{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: s.P("missing")}},
			}})
			s.Do(c, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
				OpCreate(s.P("c"), nil, 0),
				{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: s.P("a")}},
			}})
			s.Exists(c, s.P("c"), false)
		}},
		&Scenario{Area: "watches", Name: "own write events before the reply", Run: func(s *S) {
			c := s.Client("c1")
			s.Exists(c, s.P("w"), true)
			s.Children(c, s.P(""), true)
			s.Create(c, s.P("w"), nil, 0)
			s.Get(c, s.P("w"), true)
			s.Set(c, s.P("w"), []byte("x"), -1)
			s.Exists(c, s.P("w"), true)
			s.Children(c, s.P("w"), true)
			s.Delete(c, s.P("w"), -1)
		}},
		&Scenario{Area: "watches", Name: "other session sees events before the new data", Run: func(s *S) {
			a := s.Client("a")
			b := s.Client("b")
			s.Create(a, s.P("x"), []byte("1"), 0)
			s.Get(b, s.P("x"), true)
			s.Set(a, s.P("x"), []byte("2"), -1)
			s.Get(b, s.P("x"), false)
			s.Delete(a, s.P("x"), -1)
			s.Flush(b)
		}},
		&Scenario{Area: "watches", Name: "persistent recursive", Run: func(s *S) {
			c := s.Client("c1")
			s.Do(c, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: s.P("r"), Mode: zkproto.AddWatchPersistentRecursive})
			s.Create(c, s.P("r"), nil, 0)
			s.Create(c, s.P("r/y"), nil, 0)
			s.Set(c, s.P("r/y"), []byte("d"), -1)
			s.Delete(c, s.P("r/y"), -1)
			s.Do(c, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: s.P("r"), Mode: 7})
			s.Do(c, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: s.P("r"), Type: zkproto.WatcherAny})
			s.Do(c, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: s.P("r"), Type: zkproto.WatcherAny})
			s.Create(c, s.P("r/z"), nil, 0)
		}},
		&Scenario{Area: "auth", Name: "digest ACL and masking", Needs: NeedSuper, Run: func(s *S) {
			a := s.Client("alice")
			s.Auth(a, "alice:secret")
			s.Do(a, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("d"), Data: []byte("x"), ACL: zkproto.CreatorAllACL()})
			s.Do(a, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: s.P("d")})
			s.Do(a, zkproto.OpWhoAmI, nil)
			anon := s.Client("anon")
			s.Get(anon, s.P("d"), false)
			s.Do(anon, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: s.P("d")})
			s.Do(anon, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("e"), ACL: zkproto.CreatorAllACL()})
			s.Do(anon, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("e"), ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "world", ID: "foo"}}}})
			s.Do(anon, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("e"), ACL: []zkproto.ACL{}})
			s.Do(anon, zkproto.OpWhoAmI, nil)
			sup := s.Client("super")
			s.Auth(sup, s.Super())
			s.Get(sup, s.P("d"), false)
			s.Do(sup, zkproto.OpWhoAmI, nil)
			s.Do(anon, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "nosuchscheme", Auth: []byte("x")})
		}},
	)
}
