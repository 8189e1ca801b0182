package sm

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Paging through a node's children visits every child once, in byte order,
// and a page never reads past its limit; a prefix search finds exactly the
// names that start with the prefix.
func TestChildrenPageAndPrefixPage(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate(0, "/wide")
	var want []string
	for i := 0; i < 250; i++ {
		name := fmt.Sprintf("n%04d", i)
		h.mustCreate(0, "/wide/"+name)
		want = append(want, name)
	}
	h.mustCreate(0, "/wide/n0001/grandchild") // not a child of /wide
	h.mustCreate(0, "/wider")                 // a sibling whose name extends /wide
	v := h.view()
	defer v.Close()

	var got []string
	after := ""
	pages := 0
	for {
		names, more, err := v.ChildrenPage("/wide", after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) > 100 {
			t.Fatalf("page of %d names, limit 100", len(names))
		}
		pages++
		got = append(got, names...)
		if !more {
			break
		}
		after = names[len(names)-1]
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d pages, %d names (first %v); want 3 pages, %d names", pages, len(got), got[:min(3, len(got))], len(want))
	}
	if names, more, err := v.ChildrenPage("/wide", "n0249", 10); err != nil || len(names) != 0 || more {
		t.Fatalf("page after the last child: %v %v %v", names, more, err)
	}
	if _, _, err := v.ChildrenPage("/absent", "", 10); !errors.Is(err, zkproto.ErrNoNode) {
		t.Fatalf("page of a missing node: %v, want ErrNoNode", err)
	}

	names, more, err := v.PrefixPage("/wide", "n01", "", 5)
	if err != nil || !more || !slices.Equal(names, []string{"n0100", "n0101", "n0102", "n0103", "n0104"}) {
		t.Fatalf("prefix n01, first page: %v more=%v %v", names, more, err)
	}
	names, more, err = v.PrefixPage("/wide", "n01", "n0195", 50)
	if err != nil || more || !slices.Equal(names, []string{"n0196", "n0197", "n0198", "n0199"}) {
		t.Fatalf("prefix n01 after n0195: %v more=%v %v", names, more, err)
	}
	if names, _, _ := v.PrefixPage("/", "wide", "", 10); !slices.Equal(names, []string{"wide", "wider"}) {
		t.Fatalf("prefix wide under /: %v", names)
	}
}
