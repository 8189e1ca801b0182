package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Validation: both trees read through their ZooKeeper client ports and
// compared node by node: data, every stat field and the ACL, and the
// children lists (a node only one side has).

// Diff is one difference.
type Diff struct {
	Path   string `json:"path"`
	Field  string `json:"field"`
	Source string `json:"source"`
	Target string `json:"target"`
}

func (d Diff) String() string {
	return fmt.Sprintf("%s: %s differs: source %s, target %s", d.Path, d.Field, d.Source, d.Target)
}

// ValidateResult is a validation's outcome.
type ValidateResult struct {
	Nodes int64  `json:"nodes"` // nodes compared
	Count int64  `json:"differences"`
	First []Diff `json:"first"` // the first Max differences
}

// Validate compares the subtree at root of source and target; it keeps
// the first max differences and counts all. The subtrees in exclude are
// left out (their parents' stats still count them).
func Validate(ctx context.Context, source, target *zk.Conn, root string, max int, workers int, exclude ...string) (*ValidateResult, error) {
	if workers <= 0 {
		workers = 32
	}
	excluded := func(p string) bool {
		for _, e := range exclude {
			if p == e || strings.HasPrefix(p, e+"/") {
				return true
			}
		}
		return false
	}
	res := &ValidateResult{}
	add := func(d Diff) {
		res.Count++
		if len(res.First) < max {
			res.First = append(res.First, d)
		}
	}
	src, dst := &TreeReader{Conn: source}, &TreeReader{Conn: target}
	err := walkPairs(ctx, src, dst, root, workers, (*TreeReader).ReadNode, func(p string, x *pairRead) ([]string, error) {
		if excluded(p) {
			return nil, nil
		}
		switch {
		case x.s == nil && x.t == nil:
			return nil, nil
		case x.s == nil:
			add(Diff{Path: p, Field: "existence", Source: "absent", Target: "present"})
			return nil, nil
		case x.t == nil:
			add(Diff{Path: p, Field: "existence", Source: "present", Target: "absent"})
			return nil, nil
		}
		res.Nodes++
		if migratable(p) {
			for _, d := range CompareNodes(x.s, x.t) {
				add(d)
			}
		}
		var next []string
		for _, k := range x.sKids {
			if !slices.Contains(x.tKids, k) && !excluded(joinPath(p, k)) {
				add(Diff{Path: joinPath(p, k), Field: "existence", Source: "present", Target: "absent"})
			}
		}
		for _, k := range x.tKids {
			if excluded(joinPath(p, k)) {
				continue
			}
			if !slices.Contains(x.sKids, k) {
				add(Diff{Path: joinPath(p, k), Field: "existence", Source: "absent", Target: "present"})
			} else if descend(p) {
				next = append(next, joinPath(p, k))
			}
		}
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pairRead is one path read on both sides (nil: absent there).
type pairRead struct {
	s, t         *Node
	sKids, tKids []string
}

// walkPairs reads each path on both sides, workers at a time, a level at a
// time; visit (called from one goroutine, in level order) returns the
// paths of the next level to read.
func walkPairs(ctx context.Context, src, dst *TreeReader, root string, workers int, read func(*TreeReader, string) (*Node, []string, error),
	visit func(p string, x *pairRead) ([]string, error)) error {
	level := []string{root}
	for len(level) > 0 {
		var next []string
		for start := 0; start < len(level); start += 4096 {
			if err := ctx.Err(); err != nil {
				return err
			}
			part := level[start:min(start+4096, len(level))]
			pairs := make([]pairRead, len(part))
			errs := make([]error, len(part))
			var wg sync.WaitGroup
			sem := make(chan struct{}, workers)
			for i, p := range part {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					x := &pairs[i]
					var se, te error
					x.s, x.sKids, se = read(src, p)
					x.t, x.tKids, te = read(dst, p)
					for _, err := range []error{se, te} {
						if err != nil && !errors.Is(err, errSkip) {
							errs[i] = err
						}
					}
				}()
			}
			wg.Wait()
			for i, p := range part {
				if errs[i] != nil {
					return errs[i]
				}
				more, err := visit(p, &pairs[i])
				if err != nil {
					return err
				}
				next = append(next, more...)
			}
		}
		level = next
	}
	return nil
}

// CompareNodes lists the fields in which two reads of a node differ.
func CompareNodes(s, t *Node) []Diff {
	var out []Diff
	f := func(field string, a, b any) {
		if a != b {
			out = append(out, Diff{Path: s.Path, Field: field, Source: fmt.Sprint(a), Target: fmt.Sprint(b)})
		}
	}
	hex := func(v int64) string { return fmt.Sprintf("%#x", v) }
	if string(s.Data) != string(t.Data) {
		out = append(out, Diff{Path: s.Path, Field: "data", Source: summarize(s.Data), Target: summarize(t.Data)})
	}
	f("czxid", hex(s.Czxid), hex(t.Czxid))
	f("mzxid", hex(s.Mzxid), hex(t.Mzxid))
	f("pzxid", hex(s.Pzxid), hex(t.Pzxid))
	f("ctime", s.Ctime, t.Ctime)
	f("mtime", s.Mtime, t.Mtime)
	f("version", s.Version, t.Version)
	f("cversion", s.Cversion, t.Cversion)
	f("aversion", s.Aversion, t.Aversion)
	f("ephemeralOwner", hex(s.EphemeralOwner), hex(t.EphemeralOwner))
	f("numChildren", s.NumChildren, t.NumChildren)
	f("dataLength", len(s.Data), len(t.Data))
	f("acl", fmt.Sprint(s.ACL), fmt.Sprint(t.ACL))
	return out
}

func summarize(b []byte) string {
	if len(b) <= 32 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q… (%d bytes)", b[:32], len(b))
}
