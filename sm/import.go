package sm

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Migration imports: znodes and sessions as a ZooKeeper ensemble had them,
// every stat field kept, so clients that move over see the same tree, the
// same versions (compare-and-set keeps working) and the same next
// sequential suffix, and sessions that resume with their old id and
// password.

// ZooKeeper's ephemeralOwner markers of the node kinds clients see as
// persistent: containers, and TTL nodes with the TTL in the low bits.
const (
	ownerContainer = int64(-1 << 63) // 0x8000000000000000
	ownerTTLMask   = int64(-1 << 56) // 0xFF00000000000000
)

// ImportedNode is one znode as the source had it.
type ImportedNode struct {
	Path string
	Data []byte // nil = null data
	ACL  []zkproto.ACL
	// The stat, as the source's clients or its snapshot show it; the
	// children count follows from the children imported.
	Czxid, Mzxid, Pzxid, Ctime, Mtime int64
	Version, Aversion                 int32
	// EphemeralOwner: 0 persistent, a session id (imported before, with
	// ImportSessions), or ZooKeeper's container (0x8000000000000000) or TTL
	// (0xFF00000000000000 | ttl) marker.
	EphemeralOwner int64
	// Creates is the count of children ever created: the next sequential
	// suffix. Clients see cversion = 2·Creates − numChildren, so from a
	// live read it is (cversion + numChildren) / 2.
	Creates int32
}

// ImportNodes loads znodes, parents before children (a parent may be in
// the same command or already in the tree). Unless Merge, a node that
// exists already fails the whole command with NodeExists and nothing of it
// is applied; with Merge an existing node is left as it is. Special paths
// (/zookeeper, its config and quota roots) are refused. No watch fires; the
// change log records one ChangeImported naming the created nodes' closest
// common ancestor, not each create. The result's Path names the failing
// node.
type ImportNodes struct {
	Nodes []ImportedNode
	Merge bool
}

// ImportedSession is a session as the source had it: its id, negotiated
// timeout and password (ZooKeeper derives it from the id), so its client
// resumes it on zkbridge.
type ImportedSession struct {
	ID       int64
	Timeout  int32
	Password []byte
}

// ImportSessions creates the sessions (an existing id is left as it is).
// ZooKeeper's session ids are at least 2^56 for any server id above 0 and
// carry a millisecond clock for server id 0, far above the entry indexes
// zkbridge's own session ids come from, so the two never collide.
type ImportSessions struct {
	Sessions []ImportedSession
}

func (a *applier) importNodes(o *ImportNodes, res *Result) error {
	// made tells, with Merge, a node this command created (a duplicate in
	// the batch: NodeExists) from one that was there before (skipped).
	var made map[string]bool
	if o.Merge {
		made = make(map[string]bool, len(o.Nodes))
	}
	var acls aclBatch
	var created commonAncestor
	fail := func(code zkproto.ErrCode, p string) error {
		a.t.reset()
		a.events, a.changes, a.sizes = a.events[:0], a.changes[:0], TreeStats{}
		res.Err, res.Path = code, p
		return nil
	}
	// run is the parent the last nodes went under. When it had no
	// children as the run began, its children are all this command's, so
	// while their names increase none of them can exist yet: no lookup at
	// all (an export is mostly such runs, a parent and then its children
	// in order).
	var run struct {
		path   string
		parent *nodeRec // the overlay's record, which importCreate updates
		fresh  bool
		last   string // the name created last under it
	}
	for i := range o.Nodes {
		in := &o.Nodes[i]
		parentPath, ok := parentOf(in.Path)
		if !ok || !validPath(in.Path) || zkproto.IsSpecialPath(in.Path) || in.Creates < 0 {
			return fail(zkproto.ErrBadArguments, in.Path)
		}
		name := in.Path[len(parentPath):]
		if parentPath != "/" {
			name = name[1:]
		}
		if run.parent == nil || parentPath != run.path {
			parent, err := a.t.node(parentPath)
			if err != nil {
				return err
			}
			run.path, run.parent, run.last = parentPath, parent, ""
			run.fresh = parent != nil && parent.numChildren == 0
		}
		var existing *nodeRec
		if !(run.fresh && name > run.last) && !a.t.surelyAbsent(in.Path) {
			var err error
			if existing, err = a.t.node(in.Path); err != nil {
				return err
			}
		}
		if existing != nil {
			if o.Merge && !made[in.Path] {
				continue
			}
			return fail(zkproto.ErrNodeExists, in.Path)
		}
		parent := run.parent
		if parent == nil {
			return fail(zkproto.ErrNoNode, in.Path)
		}
		if parent.kind == kindEphemeral {
			return fail(zkproto.ErrNoChildrenForEphemerals, in.Path)
		}
		if code, err := a.importCreate(in, parentPath, parent, &acls, false); code != zkproto.ErrOK || err != nil {
			if err != nil {
				return err
			}
			return fail(code, in.Path)
		}
		if made != nil {
			made[in.Path] = true
		}
		if name > run.last {
			run.last = name
		} else {
			run.fresh = false
		}
		created.add(in.Path)
	}
	if created.any {
		a.change(Change{Type: ChangeImported, Path: created.path})
	}
	return acls.finish(a.t)
}

// commonAncestor is the closest common ancestor (or self) of the paths
// added so far.
type commonAncestor struct {
	path string
	any  bool
}

func (c *commonAncestor) add(p string) {
	if !c.any {
		c.path, c.any = p, true
		return
	}
	for c.path != "/" && p != c.path && !(len(p) > len(c.path) && p[len(c.path)] == '/' && p[:len(c.path)] == c.path) {
		c.path, _ = parentOf(c.path)
	}
}

// importCreate creates the imported node in under its checked parent; its
// ACL reference goes through acls when not nil. With record, the change
// log gets the create (ImportUpdate's; ImportNodes records its batch as
// one ChangeImported).
func (a *applier) importCreate(in *ImportedNode, parentPath string, parent *nodeRec, acls *aclBatch, record bool) (zkproto.ErrCode, error) {
	n := &nodeRec{kind: kindPersistent, czxid: in.Czxid, mzxid: in.Mzxid, pzxid: in.Pzxid, ctime: in.Ctime,
		mtime: in.Mtime, version: in.Version, aversion: in.Aversion, creates: in.Creates, data: in.Data}
	if code, err := a.importKind(in, n); code != zkproto.ErrOK || err != nil {
		return code, err
	}
	var err error
	if acls != nil {
		n.aclID, err = acls.ref(a.t, importACL(in.ACL))
	} else {
		n.aclID, err = a.t.aclRef(importACL(in.ACL))
	}
	if err != nil {
		return 0, err
	}
	a.t.putNode(in.Path, n)
	parent.numChildren++
	a.t.putNode(parentPath, parent)
	a.sizes.add(n.kind, in.Path, len(in.Data), 1)
	if err := a.quotaCreated(in.Path, len(in.Data)); err != nil {
		return 0, err
	}
	if record {
		a.change(Change{Type: ChangeCreated, Path: in.Path, Stat: n.stat(), Data: in.Data})
	}
	return zkproto.ErrOK, nil
}

// importACL is the ACL an imported node gets: its own, or world:anyone
// all when the source gave none.
func importACL(acl []zkproto.ACL) []zkproto.ACL {
	if len(acl) == 0 {
		return zkproto.OpenACLUnsafe()
	}
	return acl
}

// importKind sets n's kind from the source's ephemeralOwner and adds n to
// the index of its kind (ephemerals of their session, containers, TTL
// nodes). An ephemeral's session must have been imported before.
func (a *applier) importKind(in *ImportedNode, n *nodeRec) (zkproto.ErrCode, error) {
	n.kind, n.owner, n.ttl = kindPersistent, 0, 0
	switch owner := in.EphemeralOwner; {
	case owner == 0:
	case owner == ownerContainer:
		n.kind = kindContainer
		a.t.set(indexKey(spaceContainer, in.Path), nil)
	case owner&ownerTTLMask == ownerTTLMask:
		n.kind, n.ttl = kindTTLNode, owner&^ownerTTLMask
		a.t.set(indexKey(spaceTTL, in.Path), nil)
	default:
		s, err := a.t.session(owner)
		if err != nil {
			return 0, err
		}
		if s == nil {
			return zkproto.ErrSessionExpired, nil // import its session first
		}
		n.kind, n.owner = kindEphemeral, owner
		a.t.set(ephemeralKey(owner, in.Path), nil)
	}
	return zkproto.ErrOK, nil
}

func (a *applier) importSessions(o *ImportSessions, res *Result) error {
	for _, in := range o.Sessions {
		if in.ID == 0 || in.Timeout <= 0 || len(in.Password) != zkproto.PasswordLength {
			a.t.reset()
			res.Err = zkproto.ErrBadArguments
			res.Imported = nil
			return nil
		}
		s, err := a.t.session(in.ID)
		if err != nil {
			return err
		}
		if s != nil {
			continue
		}
		a.t.putSession(&SessionInfo{ID: in.ID, Timeout: in.Timeout, Password: in.Password})
		a.change(Change{Type: ChangeSessionCreated, Session: in.ID})
		res.Imported = append(res.Imported, in)
	}
	return nil
}

// aclBatch interns the ACLs of one ImportNodes command: the first node with
// an ACL takes its reference through aclRef, the next ones only count, and
// finish adds the counted references at once. A batch of nodes sharing an
// ACL so reads and rewrites its record once instead of once per node (that
// refcounting had been a tenth of an import's apply). Only for commands
// that never drop a reference meanwhile: a deferred count must not let an
// unref delete the record.
type aclBatch struct {
	byList map[string]int // encoded list → index in counts
	counts []aclCount     // in order of first use, so finish is deterministic
	last   []zkproto.ACL  // the ACL of the previous ref, and its index
	lastAt int
}

type aclCount struct{ id, extra uint64 }

func (b *aclBatch) ref(t *txn, acl []zkproto.ACL) (uint64, error) {
	if len(b.counts) > 0 && slices.Equal(acl, b.last) {
		c := &b.counts[b.lastAt]
		c.extra++
		return c.id, nil
	}
	key := string(encodeACLList(acl))
	if i, ok := b.byList[key]; ok {
		b.last, b.lastAt = acl, i
		b.counts[i].extra++
		return b.counts[i].id, nil
	}
	id, err := t.aclRef(acl)
	if err != nil {
		return 0, err
	}
	if b.byList == nil {
		b.byList = map[string]int{}
	}
	b.byList[key] = len(b.counts)
	b.last, b.lastAt = acl, len(b.counts)
	b.counts = append(b.counts, aclCount{id: id})
	return id, nil
}

// finish adds the references counted since the first of each ACL.
func (b *aclBatch) finish(t *txn) error {
	for _, c := range b.counts {
		if c.extra == 0 {
			continue
		}
		rec, err := t.get(aclKey(c.id))
		if err != nil {
			return err
		}
		refs, n := binary.Uvarint(rec)
		if n <= 0 {
			return fmt.Errorf("acl %d: bad record", c.id)
		}
		t.set(aclKey(c.id), append(binary.AppendUvarint(nil, refs+c.extra), rec[n:]...))
	}
	return nil
}
