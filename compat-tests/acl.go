package compattests

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// acl builds a one-entry ACL list.
func acl(perms int32, scheme, id string) []zkproto.ACL {
	return []zkproto.ACL{{Perms: perms, ID: zkproto.Id{Scheme: scheme, ID: id}}}
}

// digestID is the stored form of a digest identity: user:base64(sha1(user:pw)).
func digestID(userPassword string) string {
	sum := sha1.Sum([]byte(userPassword))
	user, _, _ := strings.Cut(userPassword, ":")
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// CreateACL is create (op 1) with an explicit ACL.
func (s *S) CreateACL(c *Client, path string, data []byte, a []zkproto.ACL) *Reply {
	return s.Do(c, zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: data, ACL: a})
}

// SetACL is setACL (op 7).
// On a cluster it then waits until every node has applied it (Settle), so
// the next request is checked against the new ACL on both systems.
func (s *S) SetACL(c *Client, path string, a []zkproto.ACL, version int32) *Reply {
	r := s.Do(c, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: path, ACL: a, Version: version})
	s.Settle(c)
	return r
}

// GetACL is getACL (op 6).
func (s *S) GetACL(c *Client, path string) *Reply {
	return s.Do(c, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: path})
}

// WhoAmI is whoAmI (op 107).
func (s *S) WhoAmI(c *Client) *Reply { return s.Do(c, zkproto.OpWhoAmI, nil) }

// AuthScheme sends an auth packet of any scheme.
func (s *S) AuthScheme(c *Client, scheme string, auth []byte) *Reply {
	return s.Do(c, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: scheme, Auth: auth})
}

// readsOf runs every read op on path (data, children both forms, ACL,
// exists, descendant count).
func (s *S) readsOf(c *Client, path string) {
	s.Get(c, path, false)
	s.Do(c, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: path})
	s.Children(c, path, false)
	s.GetACL(c, path)
	s.Do(c, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: path})
}

func init() {
	register(
		&Scenario{Area: "acl", Name: "auth scheme expands to every digest id", Run: func(s *S) {
			c := s.Client("c1")
			s.Auth(c, "alice:secret")
			s.CreateACL(c, s.P("one"), nil, zkproto.CreatorAllACL())
			s.GetACL(c, s.P("one"))
			s.Auth(c, "bob:hunter2")
			s.CreateACL(c, s.P("two"), nil, zkproto.CreatorAllACL())
			s.GetACL(c, s.P("two"))
			// the id of an auth entry is ignored; its perms are kept
			s.CreateACL(c, s.P("three"), nil, acl(zkproto.PermRead|zkproto.PermAdmin, "auth", "ignored"))
			s.GetACL(c, s.P("three"))
			// setACL expands auth too
			s.SetACL(c, s.P("one"), zkproto.CreatorAllACL(), -1)
			s.GetACL(c, s.P("one"))
		}},
		&Scenario{Area: "acl", Name: "auth scheme without an authenticated id is InvalidACL", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("a"), nil, zkproto.CreatorAllACL())
			s.Create(c, s.P("b"), nil, 0)
			s.SetACL(c, s.P("b"), zkproto.CreatorAllACL(), -1)
			// an ip identity does not count as authenticated for auth:
			s.AuthScheme(c, "ip", []byte("127.0.0.1"))
			s.CreateACL(c, s.P("a"), nil, zkproto.CreatorAllACL())
			s.Exists(c, s.P("a"), false)
			s.WhoAmI(c)
		}},
		&Scenario{Area: "acl", Name: "world ids other than anyone are invalid", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("a"), nil, acl(31, "world", "foo"))
			s.CreateACL(c, s.P("a"), nil, acl(31, "world", ""))
			s.CreateACL(c, s.P("a"), nil, acl(31, "World", "anyone"))
			s.Create(c, s.P("b"), nil, 0)
			s.SetACL(c, s.P("b"), acl(31, "world", "everyone"), -1)
			s.CreateACL(c, s.P("c"), nil, acl(31, "nosuchscheme", "x"))
			s.Exists(c, s.P("a"), false)
		}},
		&Scenario{Area: "acl", Name: "empty and null ACL lists are invalid", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("a"), nil, []zkproto.ACL{})
			s.CreateACL(c, s.P("a"), nil, nil)
			s.Create(c, s.P("b"), nil, 0)
			s.SetACL(c, s.P("b"), []zkproto.ACL{}, -1)
			s.SetACL(c, s.P("b"), nil, -1)
			s.GetACL(c, s.P("b"))
		}},
		&Scenario{Area: "acl", Name: "digest id format", Run: func(s *S) {
			c := s.Client("c1")
			// ZooKeeper splits the id on ':' and wants exactly two parts
			// (trailing empty parts dropped, as Java's split does).
			for i, id := range []string{"alice", "alice:hash", "a:b:c", "a:b:", "a:", ":b", "a::", "::", ""} {
				s.CreateACL(c, s.P(string(rune('a'+i))), nil, acl(31, "digest", id))
			}
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "acl", Name: "ip ACL matches the client address", Needs: NeedLoopback, Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("exact"), []byte("e"), acl(31, "ip", "127.0.0.1"))
			s.CreateACL(c, s.P("cidr"), []byte("c"), acl(31, "ip", "127.0.0.0/8"))
			s.CreateACL(c, s.P("other"), []byte("o"), acl(31, "ip", "10.1.2.3"))
			s.CreateACL(c, s.P("othernet"), []byte("n"), acl(31, "ip", "10.0.0.0/8"))
			s.CreateACL(c, s.P("all"), []byte("a"), acl(31, "ip", "0.0.0.0/0"))
			for _, n := range []string{"exact", "cidr", "other", "othernet", "all"} {
				s.Get(c, s.P(n), false)
			}
			s.Create(c, s.P("exact/kid"), nil, 0)
			s.Create(c, s.P("other/kid"), nil, 0)
			s.Set(c, s.P("cidr"), []byte("c2"), -1)
			s.Set(c, s.P("othernet"), []byte("n2"), -1)
			s.GetACL(c, s.P("other"))
		}},
		&Scenario{Area: "acl", Name: "ip ACL validity", Run: func(s *S) {
			c := s.Client("c1")
			for i, id := range []string{"127.0.0.1/32", "127.0.0.1/33", "127.0.0.1/-1", "127.0.0.1/x", "256.0.0.1",
				"1.2.3", "localhost", "", "::1", "127.0.0.1/"} {
				s.CreateACL(c, s.P(string(rune('a'+i))), nil, acl(31, "ip", id))
			}
			s.Children(c, s.P(""), false)
		}},
		&Scenario{Area: "acl", Name: "read-only ACL blocks writes and child changes", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("ro"), []byte("x"), zkproto.ReadACLUnsafe())
			s.Get(c, s.P("ro"), false)
			s.Set(c, s.P("ro"), []byte("y"), -1)
			s.Create(c, s.P("ro/kid"), nil, 0)
			s.SetACL(c, s.P("ro"), zkproto.OpenACLUnsafe(), -1)
			s.Children(c, s.P("ro"), false)
			// the node itself can go: DELETE is checked on its parent
			s.Delete(c, s.P("ro"), -1)
			s.Exists(c, s.P("ro"), false)
		}},
		&Scenario{Area: "acl", Name: "create and delete are checked on the parent", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("nodel"), nil, acl(zkproto.PermAll&^zkproto.PermDelete, "world", "anyone"))
			s.Create(c, s.P("nodel/kid"), nil, 0)
			s.Delete(c, s.P("nodel/kid"), -1)
			s.Delete(c, s.P("nodel/missing"), -1)
			s.SetACL(c, s.P("nodel"), zkproto.OpenACLUnsafe(), -1)
			s.Delete(c, s.P("nodel/kid"), -1)
			s.CreateACL(c, s.P("nocreate"), nil, acl(zkproto.PermAll&^zkproto.PermCreate, "world", "anyone"))
			s.Create(c, s.P("nocreate/kid"), nil, 0)
			s.Create(c, s.P("nocreate/kid-"), nil, int32(zkproto.ModePersistentSequential))
			s.Exists(c, s.P("nocreate"), false)
			// a node whose own ACL lacks DELETE can be deleted
			s.CreateACL(c, s.P("selfnodel"), nil, acl(zkproto.PermRead, "world", "anyone"))
			s.Delete(c, s.P("selfnodel"), -1)
			s.Delete(c, s.P("nodel"), -1)
			s.Delete(c, s.P("nocreate"), -1)
		}},
		&Scenario{Area: "acl", Name: "NoAuth on reads of a digest node", Run: func(s *S) {
			a := s.Client("alice")
			s.Auth(a, "alice:secret")
			s.CreateACL(a, s.P("d"), []byte("x"), zkproto.CreatorAllACL())
			s.CreateACL(a, s.P("d/kid"), nil, zkproto.OpenACLUnsafe())
			anon := s.Client("anon")
			s.readsOf(anon, s.P("d"))
			s.readsOf(anon, s.P("d/kid"))
			bob := s.Client("bob")
			s.Auth(bob, "bob:secret")
			s.readsOf(bob, s.P("d"))
			s.readsOf(a, s.P("d"))
		}},
		&Scenario{Area: "acl", Name: "getACL with ADMIN only and digest masking", Run: func(s *S) {
			a := s.Client("alice")
			s.Auth(a, "alice:secret")
			alice := zkproto.Id{Scheme: "digest", ID: digestID("alice:secret")}
			s.CreateACL(a, s.P("adminonly"), nil, []zkproto.ACL{{Perms: zkproto.PermAdmin, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: 31, ID: alice}})
			s.CreateACL(a, s.P("readonly"), nil, []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: 31, ID: alice}})
			s.CreateACL(a, s.P("writeonly"), nil, []zkproto.ACL{{Perms: zkproto.PermWrite, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: 31, ID: alice}})
			anon := s.Client("anon")
			s.GetACL(anon, s.P("adminonly"))
			s.Get(anon, s.P("adminonly"), false)
			s.GetACL(anon, s.P("readonly"))
			s.GetACL(anon, s.P("writeonly"))
			s.GetACL(a, s.P("readonly"))
		}},
		&Scenario{Area: "acl", Name: "exists on a node without READ", Differs: "zkbridge checks READ for exists on an existing node, as ZooKeeper 3.8.4+/3.9.2+ do (CVE-2024-23944 class leak: 3.8.0 returns the stat of any node to anyone); a missing node still answers NoNode and leaves the watch",
			Run: func(s *S) {
				a := s.Client("alice")
				s.Auth(a, "alice:secret")
				s.CreateACL(a, s.P("secret"), []byte("x"), zkproto.CreatorAllACL())
				anon := s.Client("anon")
				s.Exists(anon, s.P("secret"), false)
				s.Exists(anon, s.P("secret"), true)
				s.Exists(anon, s.P("missing"), true)
				s.Exists(a, s.P("secret"), false)
				s.Create(a, s.P("missing"), nil, 0)
				s.Flush(anon)
			},
			Check: contains(
				"anon > exists /acl-exists_on_a_node_without_READ/secret watch=false", "anon < NOAUTH",
				"anon > exists /acl-exists_on_a_node_without_READ/secret watch=true", "anon < NOAUTH",
				"anon < NONODE",
				"alice < OK",
				"anon ! NodeCreated /acl-exists_on_a_node_without_READ/missing",
			)},
		&Scenario{Area: "acl", Name: "super digest bypasses every ACL", Needs: NeedSuper, Run: func(s *S) {
			a := s.Client("alice")
			s.Auth(a, "alice:secret")
			s.CreateACL(a, s.P("d"), []byte("x"), zkproto.CreatorAllACL())
			s.CreateACL(a, s.P("none"), []byte("n"), acl(0, "world", "anyone"))
			sup := s.Client("super")
			s.Auth(sup, s.Super())
			s.readsOf(sup, s.P("d"))
			s.Set(sup, s.P("d"), []byte("y"), -1)
			s.Create(sup, s.P("d/kid"), nil, 0)
			s.Delete(sup, s.P("d/kid"), -1)
			s.SetACL(sup, s.P("d"), zkproto.ReadACLUnsafe(), -1)
			s.readsOf(sup, s.P("none"))
			s.Set(sup, s.P("none"), []byte("m"), -1)
			s.Create(sup, s.P("none/kid"), nil, 0)
			s.Delete(sup, s.P("none/kid"), -1)
			// auth: expands to the digest id of super:superpw only (the
			// super id has no provider)
			s.CreateACL(sup, s.P("bysuper"), nil, zkproto.CreatorAllACL())
			s.GetACL(sup, s.P("bysuper"))
			wrong := s.Client("wrong")
			s.Auth(wrong, s.SuperUser()+":wrongpw")
			s.Get(wrong, s.P("none"), false)
		}},
		&Scenario{Area: "acl", Name: "whoAmI shapes", Needs: NeedSuper, Run: func(s *S) {
			plain := s.Client("plain")
			s.WhoAmI(plain)
			d := s.Client("digest")
			s.Auth(d, "alice:secret")
			s.WhoAmI(d)
			two := s.Client("two")
			s.Auth(two, "alice:secret")
			s.Auth(two, "bob:pw")
			s.Auth(two, "alice:secret")
			s.WhoAmI(two)
			sup := s.Client("super")
			s.Auth(sup, s.Super())
			s.WhoAmI(sup)
			utf := s.Client("utf8")
			s.Auth(utf, "jürgen:pässwörd")
			s.WhoAmI(utf)
			s.CreateACL(utf, s.P("j"), nil, zkproto.CreatorAllACL())
			s.GetACL(utf, s.P("j"))
			odd := s.Client("odd")
			s.Auth(odd, "nocolon")
			s.Auth(odd, ":emptyuser")
			s.Auth(odd, "a:b:c")
			s.WhoAmI(odd)
		}},
		&Scenario{Area: "acl", Name: "digest auth never fails", Run: func(s *S) {
			c := s.Client("c1")
			s.Auth(c, "nocolon")
			s.AuthScheme(c, "digest", []byte{0xff, 0xfe, 0x00})
			s.AuthScheme(c, "digest", []byte{'t', 0xe2, 0x82, ':', 0xf0, 0x9f, 0x98, 'x', 0xed, 0xa0, 0x80})
			s.CreateACL(c, s.P("a"), nil, zkproto.CreatorAllACL())
			s.GetACL(c, s.P("a"))
			s.Get(c, s.P("a"), false)
			e := s.Client("empty")
			s.AuthScheme(e, "digest", []byte{})
			s.WhoAmI(e)
			n := s.Client("null")
			s.AuthScheme(n, "digest", nil)
			s.WhoAmI(n)
		}},
		&Scenario{Area: "acl", Name: "unknown auth scheme fails and closes", Run: func(s *S) {
			c := s.Client("c1")
			s.AuthScheme(c, "nosuchscheme", []byte("x"))
			s.Exists(c, s.P(""), false)
			w := s.Client("world")
			s.AuthScheme(w, "world", []byte("anyone"))
			s.Exists(w, s.P(""), false)
			sup := s.Client("superscheme")
			s.AuthScheme(sup, "super", []byte("superpw"))
			s.Exists(sup, s.P(""), false)
			empty := s.Client("empty")
			s.AuthScheme(empty, "", []byte("x"))
			s.Exists(empty, s.P(""), false)
		}},
		&Scenario{Area: "acl", Name: "ip auth scheme", Run: func(s *S) {
			c := s.Client("c1")
			s.AuthScheme(c, "ip", []byte("10.0.0.1"))
			s.WhoAmI(c)
			s.Exists(c, s.P(""), false)
		}},
		&Scenario{Area: "acl", Name: "auth replies echo the xid with zxid 0", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			for _, xid := range []int32{zkproto.XidAuth, 77, 0, -100} {
				s.T.Logf("c1 > auth xid=%d", xid)
				if err := c.SendXid(xid, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("alice:secret")}); err != nil {
					s.Failf("send: %v", err)
					return
				}
				r, err := c.Receive(xid, zkproto.OpAuth)
				if err != nil {
					s.T.Logf("c1 < %s", normErr(err))
					return
				}
				s.T.Logf("c1 < xid=%d zxid=%d err=%s", r.Header.Xid, r.Header.Zxid, r.Header.Err.Name())
			}
			s.WhoAmI(c)
		}},
		&Scenario{Area: "acl", Name: "setACL requires ADMIN", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("noadmin"), nil, acl(zkproto.PermAll&^zkproto.PermAdmin, "world", "anyone"))
			s.SetACL(c, s.P("noadmin"), zkproto.OpenACLUnsafe(), -1)
			s.GetACL(c, s.P("noadmin"))
			s.CreateACL(c, s.P("adminonly"), nil, acl(zkproto.PermAdmin, "world", "anyone"))
			s.SetACL(c, s.P("adminonly"), zkproto.ReadACLUnsafe(), 0)
			s.GetACL(c, s.P("adminonly"))
			// the ACL is validated before the node's permissions
			s.SetACL(c, s.P("noadmin"), acl(31, "world", "foo"), -1)
			s.SetACL(c, s.P("missing"), acl(31, "world", "foo"), -1)
		}},
		&Scenario{Area: "acl", Name: "setACL aversion", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			s.SetACL(c, s.P("a"), zkproto.OpenACLUnsafe(), 1)
			s.SetACL(c, s.P("a"), zkproto.OpenACLUnsafe(), 0)
			s.SetACL(c, s.P("a"), zkproto.OpenACLUnsafe(), 0)
			s.SetACL(c, s.P("a"), zkproto.ReadACLUnsafe(), 1)
			// Seen in the ensemble run before SetACL settled: ZooKeeper let
			// the next setACL pass (OK, not NoAuth) when it reached the
			// leader while this one was still a pending change record
			// there, which keeps the old ACL (see Settle).
			s.SetACL(c, s.P("a"), zkproto.OpenACLUnsafe(), -1)
			s.GetACL(c, s.P("a"))
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "acl", Name: "multiple entries and duplicates", Run: func(s *S) {
			c := s.Client("c1")
			s.Auth(c, "alice:secret")
			anyone := zkproto.Id{Scheme: "world", ID: "anyone"}
			s.CreateACL(c, s.P("multi"), nil, []zkproto.ACL{
				{Perms: zkproto.PermRead, ID: anyone},
				{Perms: 31, ID: zkproto.Id{Scheme: "digest", ID: digestID("bob:pw")}},
				{Perms: zkproto.PermRead, ID: anyone},
				{Perms: zkproto.PermWrite, ID: anyone},
				{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "127.0.0.1"}},
				{Perms: 31, ID: zkproto.Id{Scheme: "auth", ID: ""}},
				{Perms: 31, ID: zkproto.Id{Scheme: "digest", ID: digestID("alice:secret")}},
			})
			s.GetACL(c, s.P("multi"))
			anon := s.Client("anon")
			s.Set(anon, s.P("multi"), []byte("w"), -1)
			s.GetACL(anon, s.P("multi"))
		}},
		&Scenario{Area: "acl", Name: "permission values are not validated", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("zero"), []byte("z"), acl(0, "world", "anyone"))
			s.CreateACL(c, s.P("wide"), []byte("w"), acl(-1, "world", "anyone"))
			s.CreateACL(c, s.P("high"), []byte("h"), acl(32|zkproto.PermRead, "world", "anyone"))
			s.Get(c, s.P("zero"), false)
			s.GetACL(c, s.P("zero"))
			s.Get(c, s.P("wide"), false)
			s.GetACL(c, s.P("wide"))
			s.Set(c, s.P("high"), []byte("x"), -1)
			s.GetACL(c, s.P("high"))
		}},
		&Scenario{Area: "acl", Name: "digest ACL with a precomputed hash", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("d"), []byte("x"), acl(31, "digest", digestID("carol:pw")))
			s.Get(c, s.P("d"), false)
			s.Auth(c, "carol:wrong")
			s.Get(c, s.P("d"), false)
			s.Auth(c, "carol:pw")
			s.Get(c, s.P("d"), false)
			s.GetACL(c, s.P("d"))
		}},
		&Scenario{Area: "acl", Name: "zookeeper config node is read-only", Needs: NeedFresh, Run: func(s *S) {
			c := s.Client("c1")
			s.Set(c, "/zookeeper/config", []byte("x"), -1)
			s.Create(c, "/zookeeper/config/kid", nil, 0)
			s.SetACL(c, "/zookeeper/config", zkproto.OpenACLUnsafe(), -1)
			s.Delete(c, "/zookeeper/config", -1)
			s.GetConfig(c, true)
			s.GetACL(c, "/zookeeper")
			s.GetACL(c, "/zookeeper/quota")
		}},
		&Scenario{Area: "acl", Name: "ACL checks inside multi", Run: func(s *S) {
			c := s.Client("c1")
			s.CreateACL(c, s.P("ro"), []byte("x"), zkproto.ReadACLUnsafe())
			s.Multi(c, OpCheck(s.P("ro"), 0), OpSet(s.P("ro"), []byte("y"), -1))
			s.Multi(c, OpCreate(s.P("ro/kid"), nil, 0))
			s.CreateACL(c, s.P("none"), []byte("x"), acl(0, "world", "anyone"))
			// check needs READ
			s.Multi(c, OpCheck(s.P("none"), 0))
		}},
	)
}
