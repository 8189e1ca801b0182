package sm

import (
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zkbridge/zkbridge/zkproto"
)

// childIndexKeys lists the raw child index of the live DB.
func childIndexKeys(t *testing.T, s *StateMachine) []string {
	t.Helper()
	var out []string
	err := scanKeys(s.db, []byte{spaceChild}, []byte{spaceChild + 1}, func(k []byte) error {
		out = append(out, string(k))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func children(t *testing.T, h *harness, p string) []string {
	t.Helper()
	v := h.view()
	defer v.Close()
	names, _, err := v.Children(p)
	if err != nil {
		t.Fatalf("children %s: %v", p, err)
	}
	return names
}

// The child index changes on create and delete only: setData on children
// leaves it byte for byte alone, and a create and delete in one multi leaves
// no entry behind.
func TestChildIndexFollowsCreateAndDeleteOnly(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	h.mustCreate(s, "/d")
	h.mustCreate(s, "/d/a")
	h.mustCreate(s, "/d/b")
	before := childIndexKeys(t, h.s)
	for i := 0; i < 50; i++ {
		if r := h.do(s, &SetData{Path: "/d/a", Data: []byte{byte(i)}, Version: -1}); r.Err != zkproto.ErrOK {
			t.Fatalf("set: %v", r.Err)
		}
	}
	if after := childIndexKeys(t, h.s); !slices.Equal(before, after) {
		t.Fatalf("setData changed the child index: %q → %q", before, after)
	}
	r := h.do(s, &Multi{Ops: []Op{
		&Create{OpCode: zkproto.OpCreate, Path: "/d/c", Data: nil, ACL: open},
		&Delete{Path: "/d/c", Version: -1},
		&Delete{Path: "/d/b", Version: -1},
		&Create{OpCode: zkproto.OpCreate, Path: "/d/b", Data: nil, ACL: open},
		&Create{OpCode: zkproto.OpCreate, Path: "/d/e", Data: nil, ACL: open},
	}})
	if r.Err != zkproto.ErrOK {
		t.Fatalf("multi: %v", r.Err)
	}
	if got, want := children(t, h, "/d"), []string{"a", "b", "e"}; !slices.Equal(got, want) {
		t.Fatalf("children /d = %q, want %q", got, want)
	}
	if r := h.do(s, &Delete{Path: "/d/a", Version: -1}); r.Err != zkproto.ErrOK {
		t.Fatalf("delete: %v", r.Err)
	}
	if got, want := children(t, h, "/d"), []string{"b", "e"}; !slices.Equal(got, want) {
		t.Fatalf("children /d = %q, want %q", got, want)
	}
	// one index entry per node record, no more
	var nodes int
	if err := scanKeys(h.s.db, []byte{spaceNode}, []byte{spaceNode + 1}, func([]byte) error { nodes++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := len(childIndexKeys(t, h.s)); got != nodes {
		t.Fatalf("%d child index entries for %d nodes", got, nodes)
	}
}

// A data directory written by layout 1 (no child index) is upgraded when it
// is opened: listings and counts are the same as before, and the content
// hash equals that of a tree built by this release.
func TestLayoutOneUpgradesToChildIndex(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	s := h.newSession()
	for _, p := range []string{"/a", "/a/x", "/a/y", "/a/y/z", "/b"} {
		h.mustCreate(s, p)
	}
	want := hashOf(t, h.s)
	// Turn it back into layout 1: drop the index, mark the layout.
	b := h.s.db.NewBatch()
	if err := b.DeleteRange([]byte{spaceChild}, []byte{spaceChild + 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(keySpecialVer, []byte{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil { // Close flushes
		t.Fatal(err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	re := openSM(t, dir)
	defer re.Close()
	if got := hashOf(t, re); got != want {
		t.Fatal("the upgraded tree's content hash differs from the tree built with the index")
	}
	v, err := re.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	names, _, err := v.Children("/a")
	if err != nil || !slices.Equal(names, []string{"x", "y"}) {
		t.Fatalf("children /a = %q, %v", names, err)
	}
	if n, err := v.AllChildrenNumber("/"); err != nil || n != 8 { // 5 + /zookeeper, quota, config
		t.Fatalf("all children of / = %d, %v", n, err)
	}
}

func TestUnknownLayoutIsAClearError(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	if err := h.s.db.Set(keySpecialVer, []byte{99}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Dir: dir})
	if _, err := s.Open(nil); err == nil {
		s.Close()
		t.Fatal("opened a tree of layout 99")
	}
}
