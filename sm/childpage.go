package sm

import (
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// ChildrenPage returns up to limit child names of p that sort after the
// name after ("" for the first page), in byte order, and whether more
// follow. It seeks into the child index and reads only the page: a node
// with a million children costs one bounded scan, never the whole list
// (the web console pages wide nodes with it).
func (v *View) ChildrenPage(p, after string, limit int) (names []string, more bool, err error) {
	n, err := v.node(p)
	if err != nil {
		return nil, false, err
	}
	if n == nil {
		return nil, false, zkproto.ErrNoNode
	}
	if limit <= 0 {
		return nil, n.numChildren > 0, nil
	}
	lo, hi := childRange(spaceChild, p)
	start := lo
	if after != "" {
		// The first key strictly after lo+after: append a 0x00 byte, the
		// smallest suffix (names never contain 0x00).
		start = append(append(append([]byte(nil), lo...), after...), 0)
	}
	err = scanKeys(v.snap, start, hi, func(k []byte) error {
		if len(names) == limit {
			more = true
			return errStop
		}
		names = append(names, string(k[len(lo):]))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("sm: children page %s: %w", p, err)
	}
	return names, more, nil
}

// PrefixPage returns up to limit paths of existing children of parent
// whose name starts with prefix, after the name after, in byte order, and
// whether more follow: a path-prefix search that reads one bounded range.
func (v *View) PrefixPage(parent, prefix, after string, limit int) (names []string, more bool, err error) {
	n, err := v.node(parent)
	if err != nil {
		return nil, false, err
	}
	if n == nil {
		return nil, false, zkproto.ErrNoNode
	}
	lo, _ := childRange(spaceChild, parent)
	base := len(lo)
	from := append(append([]byte(nil), lo...), prefix...)
	to := prefixEnd(from)
	start := from
	if after != "" && after > prefix {
		start = append(append(append([]byte(nil), lo...), after...), 0)
	}
	err = scanKeys(v.snap, start, to, func(k []byte) error {
		if len(names) == limit {
			more = true
			return errStop
		}
		names = append(names, string(k[base:]))
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("sm: prefix page %s %q: %w", parent, prefix, err)
	}
	return names, more, nil
}
