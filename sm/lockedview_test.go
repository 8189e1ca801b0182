package sm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// A LockedView (no Pebble snapshot; LastZxid from the state machine's own
// record) answers exactly what a snapshot view answers, after Updates and
// after a snapshot replaced the database.
func TestLockedViewAnswersAsView(t *testing.T) {
	same := func(t *testing.T, s *StateMachine, paths ...string) {
		t.Helper()
		v, err := s.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		lv, err := s.LockedView()
		if err != nil {
			t.Fatal(err)
		}
		defer lv.Close()
		z, err := v.LastZxid()
		if err != nil {
			t.Fatal(err)
		}
		if lz, _ := lv.LastZxid(); lz != z || z == 0 {
			t.Fatalf("locked view's last zxid %d, snapshot view's %d", lz, z)
		}
		for _, p := range paths {
			a, errA := v.Get(p)
			b, errB := lv.Get(p)
			if !reflect.DeepEqual(a, b) || errA != errB {
				t.Fatalf("%s: locked view %+v %v, snapshot view %+v %v", p, b, errB, a, errA)
			}
		}
	}
	acl := func(scheme, id string) []zkproto.ACL {
		return []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: scheme, ID: id}}}
	}
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/a")
	h.do(s, &SetData{Path: "/a", Data: []byte("x"), Version: -1})
	// The same ACL id names different lists in the two replicas below.
	h.do(s, &Create{OpCode: zkproto.OpCreate, Path: "/d", ACL: acl("ip", "10.0.0.1")})
	same(t, h.s, "/a", "/d", "/missing")

	snap := saveSnapshot(t, h.s)
	other := newHarness(t, Config{})
	os := other.newSession()
	other.mustCreate(os, "/b")
	other.do(os, &Create{OpCode: zkproto.OpCreate, Path: "/d", ACL: acl("ip", "10.9.9.9")})
	same(t, other.s, "/b", "/d") // its node and ACL are in its caches now
	if err := other.s.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	same(t, other.s, "/a", "/b", "/d")
	lv, err := other.s.LockedView()
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	if n, err := lv.Get("/d"); err != nil || !reflect.DeepEqual(n.ACL, acl("ip", "10.0.0.1")) {
		t.Fatalf("/d after recovery: %+v %v, want the recovered replica's ACL", n, err)
	}
}
