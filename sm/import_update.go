package sm

import (
	"github.com/zkbridge/zkbridge/zkproto"
)

// ImportUpdate brings imported nodes up to date with their source: a live
// migration's catch-up pass, and the root's stat, which ImportNodes cannot
// set because / always exists. Deletes go first, each childless by then
// (list children before their parent); then each of Nodes is created as
// ImportNodes creates it or, when it exists, overwritten: data, ACL, every
// stat field, its kind and owner. A parent whose children changed is
// expected among Nodes, so its pzxid and cversion become the source's. Any
// failure leaves the whole command unapplied; the result's Path names the
// node. Watches fire as for the equivalent client writes.
type ImportUpdate struct {
	Deletes []string
	Nodes   []ImportedNode
}

func (a *applier) importUpdate(o *ImportUpdate, res *Result) error {
	fail := func(code zkproto.ErrCode, p string) error {
		a.t.reset()
		a.events, a.changes, a.sizes = a.events[:0], a.changes[:0], TreeStats{}
		res.Err, res.Path = code, p
		return nil
	}
	for _, p := range o.Deletes {
		parentPath, ok := parentOf(p)
		if !ok || !validPath(p) || zkproto.IsSpecialPath(p) {
			return fail(zkproto.ErrBadArguments, p)
		}
		n, err := a.t.node(p)
		if err != nil {
			return err
		}
		if n == nil {
			continue // gone already: a rerun of the same pass
		}
		if n.numChildren > 0 {
			return fail(zkproto.ErrNotEmpty, p)
		}
		parent, err := a.t.node(parentPath)
		if err != nil {
			return err
		}
		if err := a.removeNode(p, n, parentPath, parent); err != nil {
			return err
		}
	}
	for i := range o.Nodes {
		in := &o.Nodes[i]
		if !validPath(in.Path) || in.Creates < 0 || (in.Path != zkproto.RootPath && zkproto.IsSpecialPath(in.Path)) {
			return fail(zkproto.ErrBadArguments, in.Path)
		}
		n, err := a.t.node(in.Path)
		if err != nil {
			return err
		}
		if n != nil {
			if code, err := a.importOverwrite(in, n); code != zkproto.ErrOK || err != nil {
				if err != nil {
					return err
				}
				return fail(code, in.Path)
			}
			continue
		}
		parentPath, _ := parentOf(in.Path)
		parent, err := a.t.node(parentPath)
		if err != nil {
			return err
		}
		if parent == nil {
			return fail(zkproto.ErrNoNode, in.Path)
		}
		if parent.kind == kindEphemeral {
			return fail(zkproto.ErrNoChildrenForEphemerals, in.Path)
		}
		if code, err := a.importCreate(in, parentPath, parent, nil, true); code != zkproto.ErrOK || err != nil {
			if err != nil {
				return err
			}
			return fail(code, in.Path)
		}
		if err := a.nodeEvent(zkproto.EventNodeCreated, in.Path, parent); err != nil {
			return err
		}
		if err := a.nodeEvent(zkproto.EventNodeChildrenChanged, parentPath, parent); err != nil {
			return err
		}
	}
	return nil
}

// importOverwrite makes existing node n the imported one (its children
// count stays what the tree holds).
func (a *applier) importOverwrite(in *ImportedNode, n *nodeRec) (zkproto.ErrCode, error) {
	if in.Path == zkproto.RootPath && in.EphemeralOwner != 0 {
		return zkproto.ErrBadArguments, nil
	}
	if n.kind == kindEphemeral && n.numChildren > 0 && in.EphemeralOwner != n.owner {
		return zkproto.ErrBadArguments, nil
	}
	switch n.kind { // out of its old kind's index
	case kindEphemeral:
		a.t.del(ephemeralKey(n.owner, in.Path))
	case kindContainer:
		a.t.del(indexKey(spaceContainer, in.Path))
	case kindTTLNode:
		a.t.del(indexKey(spaceTTL, in.Path))
	}
	oldKind, oldLen, dataChanged := n.kind, len(n.data), n.mzxid != in.Mzxid || string(n.data) != string(in.Data)
	if code, err := a.importKind(in, n); code != zkproto.ErrOK || err != nil {
		return code, err
	}
	id, err := a.t.aclRef(importACL(in.ACL)) // before the unref: an unchanged ACL keeps its id
	if err != nil {
		return 0, err
	}
	if err := a.t.aclUnref(n.aclID); err != nil {
		return 0, err
	}
	n.aclID = id
	n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime = in.Czxid, in.Mzxid, in.Pzxid, in.Ctime, in.Mtime
	n.version, n.aversion, n.creates, n.data = in.Version, in.Aversion, in.Creates, in.Data
	a.t.putNode(in.Path, n)
	a.sizes.add(oldKind, in.Path, oldLen, -1)
	a.sizes.add(n.kind, in.Path, len(in.Data), 1)
	if err := a.quotaAdjust(in.Path, int64(len(in.Data)-oldLen), 0); err != nil {
		return 0, err
	}
	if dataChanged {
		if err := a.nodeEvent(zkproto.EventNodeDataChanged, in.Path, n); err != nil {
			return 0, err
		}
	}
	a.change(Change{Type: ChangeData, Path: in.Path, Stat: n.stat(), Data: in.Data})
	return zkproto.ErrOK, nil
}
