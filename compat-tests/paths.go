package compattests

import (
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// badPaths are paths PathUtils.validatePath rejects, built under root. The
// Java checks work on UTF-16 code units, so a character outside the BMP
// (a surrogate pair) is rejected too.
func badPaths(root string) []string {
	return []string{
		"noslash",
		root + "/",
		root + "//a",
		root + "/a//b",
		root + "/.",
		root + "/./a",
		root + "/..",
		root + "/../a",
		root + "/a\x00b",
		root + "/a\x01",
		root + "/a\x1f",
		root + "/a\x7f",
		root + "/a\u0085",
		root + "/a\u009f",
		root + "/a\ue000",
		root + "/a\uf8ff",
		root + "/a\ufff0",
		root + "/a\uffff",
		root + "/a\U0001F600",
	}
}

// goodNames are node names validatePath accepts.
var goodNames = []string{
	"ünïcødé", "日本語", "a b", "a.b", "...", ".x", "x.", "a:b*?", "\u00a0", "\u00a0x", "\uf900", "\uffef", "zookeeper",
}

func init() {
	register(
		&Scenario{Area: "paths", Name: "create rejects invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.Create(c, p, nil, 0)
			}
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "paths", Name: "create2 and createContainer reject invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P(""))[:10] {
				s.Create2(c, p, nil, 0)
				s.Do(c, zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: p, ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeContainer)})
			}
		}},
		&Scenario{Area: "paths", Name: "setData rejects invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.Set(c, p, []byte("x"), -1)
			}
		}},
		&Scenario{Area: "paths", Name: "delete with invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.Delete(c, p, -1)
			}
		}},
		&Scenario{Area: "paths", Name: "exists with invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.Exists(c, p, false)
			}
		}},
		&Scenario{Area: "paths", Name: "getData and getChildren with invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.Get(c, p, false)
				s.Children(c, p, false)
			}
		}},
		&Scenario{Area: "paths", Name: "setACL and getACL with invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P("")) {
				s.SetACL(c, p, zkproto.OpenACLUnsafe(), -1)
				s.GetACL(c, p)
			}
		}},
		&Scenario{Area: "paths", Name: "sync and getAllChildrenNumber with invalid paths", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range badPaths(s.P(""))[:10] {
				s.Do(c, zkproto.OpSync, &zkproto.SyncRequest{Path: p})
				s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: p})
			}
		}},
		&Scenario{Area: "paths", Name: "empty path", Needs: NeedFresh, Run: func(s *S) {
			// ZooKeeper keeps the root under "" too: reads of "" see it,
			// writes reject the path
			c := s.Client("c1")
			s.Exists(c, "", false)
			s.Get(c, "", false)
			s.Do(c, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: ""})
			s.GetACL(c, "")
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: ""})
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/"})
			s.MultiRead(c, OpGetData("", false), OpGetChildren("", false))
			s.Do(c, zkproto.OpSync, &zkproto.SyncRequest{Path: ""})
			s.Create(c, "", nil, 0)
			s.Create(c, "", nil, int32(zkproto.ModePersistentSequential))
			s.Set(c, "", nil, -1)
			s.Delete(c, "", -1)
			s.SetACL(c, "", zkproto.OpenACLUnsafe(), -1)
			s.Multi(c, OpCheck("", -1))
		}},
		&Scenario{Area: "paths", Name: "malformed UTF-8 in a path", Run: func(s *S) {
			c := s.Client("c1")
			for _, n := range []string{"a\xff", "b\xe2\x82", "c\xed\xa0\x80", "d\xc0\xaf"} {
				s.Create(c, s.P(n), nil, 0)
				s.Exists(c, s.P(n), false)
			}
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "paths", Name: "sequential creates with odd paths", Run: func(s *S) {
			c := s.Client("c1")
			seq := int32(zkproto.ModePersistentSequential)
			s.Create(c, s.P("q"), nil, 0)
			s.Create(c, s.P("q/"), nil, seq)
			s.Create(c, s.P("q//"), nil, seq)
			s.Create(c, s.P("q/."), nil, seq)
			s.Create(c, s.P("q/.."), nil, seq)
			s.Create(c, s.P("q/./"), nil, seq)
			s.Create(c, s.P("q/a\x00"), nil, seq)
			s.Create(c, s.P("q/a\x01"), nil, seq)
			s.Create(c, s.P("q/missing/"), nil, seq)
			s.Create(c, s.P("q")+"/", nil, int32(zkproto.ModeEphemeralSequential))
			s.Children(c, s.P("q"), false)
		}},
		&Scenario{Area: "paths", Name: "valid unicode and punctuation names", Run: func(s *S) {
			c := s.Client("c1")
			for _, n := range goodNames {
				s.Create(c, s.P(n), []byte(n), 0)
				s.Get(c, s.P(n), false)
			}
			s.Children(c, s.P(""), false)
			for _, n := range goodNames {
				s.Delete(c, s.P(n), -1)
			}
		}},
		&Scenario{Area: "paths", Name: "children under zookeeper", Run: func(s *S) {
			c := s.Client("c1")
			p := "/zookeeper/" + strings.TrimPrefix(s.P(""), "/")
			s.Own(p)
			s.Own("/zookeeper/quota/" + strings.TrimPrefix(s.P(""), "/"))
			s.Create(c, p, []byte("x"), 0)
			s.Create(c, p+"/kid", nil, 0)
			s.Create(c, "/zookeeper/quota/"+strings.TrimPrefix(s.P(""), "/"), nil, 0)
			s.Do(c, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: p})
			s.Delete(c, p+"/kid", -1)
			s.Delete(c, p, -1)
			s.Delete(c, "/zookeeper/quota/"+strings.TrimPrefix(s.P(""), "/"), -1)
		}},
		&Scenario{Area: "paths", Name: "special nodes cannot be deleted", Needs: NeedFresh, Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
				s.Delete(c, p, -1)
				s.Delete(c, p, 0)
				s.Multi(c, OpDelete(p, -1))
			}
			s.Delete(c, "/zookeeper/", -1)
			s.Delete(c, "//zookeeper", -1)
			s.Exists(c, "/zookeeper/quota", false)
		}},
		&Scenario{Area: "paths", Name: "creating special nodes", Run: func(s *S) {
			c := s.Client("c1")
			for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
				s.Create(c, p, nil, 0)
			}
			s.Set(c, "/", nil, 5)
			s.Set(c, "/zookeeper", nil, 5)
		}},
		&Scenario{Area: "paths", Name: "very long names and deep paths", Run: func(s *S) {
			c := s.Client("c1")
			long := strings.Repeat("n", 5000)
			s.Create(c, s.P(long), []byte("long"), 0)
			s.Get(c, s.P(long), false)
			s.Create(c, s.P(long+"/"+long), nil, 0)
			s.Children(c, s.P(long), false)
			deep := s.P("")
			for i := 0; i < 100; i++ {
				deep += "/d"
				if r := s.Create(c, deep, nil, 0); r == nil || r.Header.Err != zkproto.ErrOK {
					break
				}
			}
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("d")})
			s.Exists(c, deep, false)
		}},
		&Scenario{Area: "paths", Name: "sibling prefixes are distinct nodes", Run: func(s *S) {
			c := s.Client("c1")
			for _, n := range []string{"a", "a-b", "a/b", "ab", "a.b", "a/b/c", "a0"} {
				s.Create(c, s.P(n), nil, 0)
			}
			s.Children(c, s.P(""), false)
			s.Children(c, s.P("a"), false)
			s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("a")})
			s.Delete(c, s.P("a"), -1)
			s.Delete(c, s.P("ab"), -1)
			s.Exists(c, s.P("a"), false)
		}},
	)
}
