package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The fence of a live migration (--fence): before the final pass every
// node of the migrated subtree gets a read-only ACL on ZooKeeper (each
// entry keeps only its READ permission), so no client can write there any
// more; the final pass carries the original ACLs and aversions over to
// zkbridge. An aborted migration restores the original ACLs; a finished
// one leaves ZooKeeper read-only there.

// fencedACL is a node's ACL before the fence.
type fencedACL struct {
	acl      []ACL
	aversion int32
	fenced   int32 // its aversion after the fence
}

type fence struct {
	conn  *zk.Conn
	nodes map[string]fencedACL
}

// readOnly keeps each entry's READ permission only.
func readOnly(acl []ACL) []zk.ACL {
	out := make([]zk.ACL, 0, len(acl))
	for _, a := range acl {
		out = append(out, zk.ACL{Perms: a.Perms & zk.PermRead, Scheme: a.Scheme, ID: a.ID})
	}
	return out
}

func zkACL(acl []ACL) []zk.ACL {
	out := make([]zk.ACL, 0, len(acl))
	for _, a := range acl {
		out = append(out, zk.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID})
	}
	return out
}

// raise fences every node under root.
func (f *fence) raise(ctx context.Context, root string) error {
	var nodes []*Node
	if err := (&TreeReader{Conn: f.conn}).Walk(ctx, root, func(n *Node) error {
		nodes = append(nodes, n)
		return nil
	}); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	for _, n := range nodes {
		if n.Path == "/" {
			continue
		}
		st, err := f.conn.SetACL(n.Path, readOnly(n.ACL), n.Aversion)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("fence %s: its ACL changed meanwhile; run again", n.Path)
		}
		if err != nil {
			return fmt.Errorf("fence %s: %w (pass --auth with an identity that may change every ACL, e.g. digest:super:…)", n.Path, err)
		}
		f.nodes[n.Path] = fencedACL{acl: n.ACL, aversion: n.Aversion, fenced: st.Aversion}
	}
	return nil
}

// unfenced gives a node read from ZooKeeper its ACL from before the fence.
func (f *fence) unfenced(n *Node) {
	if x, ok := f.nodes[n.Path]; ok && n.Aversion == x.fenced {
		n.ACL, n.Aversion = x.acl, x.aversion
	}
}

// lower restores the original ACLs (an aborted migration).
func (f *fence) lower() error {
	var first error
	for p, x := range f.nodes {
		if _, err := f.conn.SetACL(p, zkACL(x.acl), x.fenced); err != nil && !errors.Is(err, zk.ErrNoNode) && first == nil {
			first = fmt.Errorf("restore the ACL of %s: %w", p, err)
		}
	}
	return first
}
