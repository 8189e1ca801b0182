package sm

import (
	"fmt"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// applier applies one entry's command into the overlay txn. ZooKeeper errors
// are returned as zkproto.ErrCode values (they are results, replicated like
// any other); a non-nil error means storage trouble and fails the Update.
type applier struct {
	// importing: a migration import (ImportNodes, ImportUpdate) runs; the
	// quota stats nodes are imported as the source has them, so the
	// imported nodes neither recount nor adjust them.
	importing bool

	cfg     *Config
	t       *txn
	index   uint64
	zxid    int64
	hdr     *Header
	events  []Event
	changes []Change
	// sizes is this entry's change to the tree's sizes; rolled back with
	// the overlay when a multi fails.
	sizes TreeStats
	// before are the tree's sizes before this entry (tenant limits).
	before TreeStats
	// zxidBase is the base in force after this entry (SetZxidBase changes it).
	zxidBase int64
	// policies caches the cutover policies for the batch (cutover.go);
	// policiesRead says whether it was read.
	policies     []CutoverPolicy
	policiesRead bool
	// fenced is set when a cutover policy refused a write of this entry.
	fenced bool
	// inMulti holds, while a multi runs, what its earlier ops added to each
	// quota's stats: quota checks read the stats as before the multi, as
	// ZooKeeper's (quota_enforce.go).
	inMulti map[string]*quotaPending
}

func validPath(p string) bool { return zkproto.ValidatePath(p) == nil }

// event records a change event with the ACL of the node it names (watch
// delivery is filtered by READ on it).
func (a *applier) event(t zkproto.EventType, p string, acl []zkproto.ACL) {
	a.events = append(a.events, Event{Type: t, Path: p, Zxid: a.zxid, ACL: acl})
}

// nodeEvent records an event naming node n at p.
func (a *applier) nodeEvent(t zkproto.EventType, p string, n *nodeRec) error {
	acl, err := a.t.aclGet(n.aclID)
	if err != nil {
		return err
	}
	a.event(t, p, acl)
	return nil
}

func (a *applier) change(c Change) { a.changes = append(a.changes, c) }

// checkSession enforces session existence, ownership and primary order for a
// client write. It returns the session record to bump on success.
func (a *applier) checkSession() (*SessionInfo, zkproto.ErrCode, bool, error) {
	if a.hdr.Session == 0 {
		return nil, zkproto.ErrOK, false, nil
	}
	s, err := a.t.session(a.hdr.Session)
	if err != nil {
		return nil, 0, false, err
	}
	if s == nil {
		return nil, zkproto.ErrSessionExpired, false, nil
	}
	if s.Conn != a.hdr.Conn {
		return nil, zkproto.ErrSessionMoved, false, nil
	}
	if a.hdr.Seq != s.LastSeq+1 {
		// A write that does not directly follow the last applied one of its
		// connection: an earlier write was lost, so this one must not
		// overtake it. Not applied; the connection is closed by the server.
		return nil, zkproto.ErrSessionMoved, true, nil
	}
	return s, zkproto.ErrOK, false, nil
}

func versionOK(expected, current int32) bool { return expected == -1 || expected == current }

// parentOf returns the parent path using ZooKeeper's lastIndexOf('/') rule,
// or ok=false if the path has no '/' or contains a NUL.
func parentOf(p string) (string, bool) {
	i := lastSlash(p)
	if i < 0 || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return p[:i], true
}

func (a *applier) allowed(n *nodeRec, perm int32) (bool, error) {
	acl, err := a.t.aclGet(n.aclID)
	if err != nil {
		return false, err
	}
	return CheckACL(acl, perm, a.hdr.Auth, a.cfg.SuperDigest), nil
}

// create implements create/create2/createContainer/createTTL with
// PrepRequestProcessor's check order (first failure wins).
func (a *applier) create(o *Create) (string, *zkproto.Stat, zkproto.ErrCode, error) {
	mode, err := zkproto.ParseCreateMode(o.Flags)
	if err != nil {
		return "", nil, zkproto.ErrBadArguments, nil
	}
	kind := kindPersistent
	switch o.OpCode {
	case zkproto.OpCreate, zkproto.OpCreate2:
		// Flag 4 (container) via op 1/15 is a plain persistent node.
		if mode.IsEphemeral() {
			kind = kindEphemeral
		}
	case zkproto.OpCreateContainer:
		kind = kindContainer
	case zkproto.OpCreateTTL:
		kind = kindTTLNode
	default:
		return "", nil, zkproto.ErrUnimplemented, nil
	}
	if mode.IsTTL() && a.cfg.DisableTTL {
		return "", nil, zkproto.ErrUnimplemented, nil
	}
	if kind == kindTTLNode {
		if zkproto.ValidateTTL(mode, o.TTL) != nil {
			return "", nil, zkproto.ErrBadArguments, nil
		}
	} else if mode.IsTTL() {
		return "", nil, zkproto.ErrBadArguments, nil // ttl -1 with a TTL mode
	}
	if kind == kindEphemeral && a.hdr.Session == 0 {
		return "", nil, zkproto.ErrEphemeralOnLocalSession, nil
	}
	if code, err := a.fence(o.Path); code != zkproto.ErrOK || err != nil {
		return "", nil, code, err
	}
	parentPath, ok := parentOf(o.Path)
	if !ok {
		return "", nil, zkproto.ErrBadArguments, nil
	}
	acl, code := fixupACL(o.ACL, a.hdr.Auth)
	if code != zkproto.ErrOK {
		return "", nil, code, nil
	}
	parent, err := a.t.node(parentPath)
	if err != nil {
		return "", nil, 0, err
	}
	if parent == nil {
		return "", nil, zkproto.ErrNoNode, nil
	}
	if ok, err := a.allowed(parent, zkproto.PermCreate); err != nil || !ok {
		return "", nil, zkproto.ErrNoAuth, err
	}
	p := o.Path
	if mode.IsSequential() {
		p += zkproto.SequentialSuffix(parent.creates)
	}
	if !validPath(p) {
		return "", nil, zkproto.ErrBadArguments, nil
	}
	existing, err := a.t.node(p)
	if err != nil {
		return "", nil, 0, err
	}
	if existing != nil {
		return "", nil, zkproto.ErrNodeExists, nil
	}
	if parent.kind == kindEphemeral {
		return "", nil, zkproto.ErrNoChildrenForEphemerals, nil
	}
	if exceeded, err := a.quotaExceeded(p, int64(len(o.Data)), 1); err != nil || exceeded {
		return "", nil, zkproto.ErrQuotaExceeded, err
	}

	// All checks passed: write.
	aclID, err := a.t.aclRef(acl)
	if err != nil {
		return "", nil, 0, err
	}
	n := &nodeRec{
		kind: kind, czxid: a.zxid, mzxid: a.zxid, pzxid: a.zxid,
		ctime: a.hdr.Time, mtime: a.hdr.Time, aclID: aclID, data: o.Data,
	}
	switch kind {
	case kindEphemeral:
		n.owner = a.hdr.Session
		a.t.set(ephemeralKey(n.owner, p), nil)
	case kindContainer:
		a.t.set(indexKey(spaceContainer, p), nil)
	case kindTTLNode:
		n.ttl = o.TTL
		a.t.set(indexKey(spaceTTL, p), nil)
	}
	a.t.putNode(p, n)
	parent.creates++
	parent.numChildren++
	parent.pzxid = a.zxid
	a.t.putNode(parentPath, parent)
	a.sizes.add(kind, p, len(o.Data), 1)
	st := n.stat() // before the quota update, as ZooKeeper copies it
	if err := a.quotaCreated(p, len(o.Data)); err != nil {
		return "", nil, 0, err
	}
	a.event(zkproto.EventNodeCreated, p, acl)
	if err := a.nodeEvent(zkproto.EventNodeChildrenChanged, parentPath, parent); err != nil {
		return "", nil, 0, err
	}
	a.change(Change{Type: ChangeCreated, Path: p, Stat: st, Data: o.Data})
	return p, &st, zkproto.ErrOK, nil
}

// delete implements delete (2): special paths → BadArguments; parent must
// exist; DELETE on the parent before the node's existence; version; children.
func (a *applier) delete(o *Delete) (zkproto.ErrCode, error) {
	parentPath, ok := parentOf(o.Path)
	if !ok || zkproto.IsSpecialPath(o.Path) {
		return zkproto.ErrBadArguments, nil
	}
	if code, err := a.fence(o.Path); code != zkproto.ErrOK || err != nil {
		return code, err
	}
	parent, err := a.t.node(parentPath)
	if err != nil {
		return 0, err
	}
	if parent == nil {
		return zkproto.ErrNoNode, nil
	}
	if ok, err := a.allowed(parent, zkproto.PermDelete); err != nil || !ok {
		return zkproto.ErrNoAuth, err
	}
	n, err := a.t.node(o.Path)
	if err != nil {
		return 0, err
	}
	if n == nil {
		return zkproto.ErrNoNode, nil
	}
	if !versionOK(o.Version, n.version) {
		return zkproto.ErrBadVersion, nil
	}
	if n.numChildren > 0 {
		return zkproto.ErrNotEmpty, nil
	}
	return zkproto.ErrOK, a.removeNode(o.Path, n, parentPath, parent)
}

// removeNode deletes a checked, childless node: the parent's numChildren
// drops, its pzxid rises to zxid if larger, its stored cversion is unchanged.
func (a *applier) removeNode(p string, n *nodeRec, parentPath string, parent *nodeRec) error {
	acl, err := a.t.aclGet(n.aclID) // before the unref may drop it
	if err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	if err := a.t.aclUnref(n.aclID); err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	switch n.kind {
	case kindEphemeral:
		a.t.del(ephemeralKey(n.owner, p))
	case kindContainer:
		a.t.del(indexKey(spaceContainer, p))
	case kindTTLNode:
		a.t.del(indexKey(spaceTTL, p))
	}
	a.t.delNode(p)
	parent.numChildren--
	if a.zxid > parent.pzxid {
		parent.pzxid = a.zxid
	}
	a.t.putNode(parentPath, parent)
	a.sizes.add(n.kind, p, len(n.data), -1)
	if err := a.quotaDeleted(p, len(n.data)); err != nil {
		return err
	}
	a.event(zkproto.EventNodeDeleted, p, acl)
	if err := a.nodeEvent(zkproto.EventNodeChildrenChanged, parentPath, parent); err != nil {
		return err
	}
	a.change(Change{Type: ChangeDeleted, Path: p})
	return nil
}

func (a *applier) setData(o *SetData) (*zkproto.Stat, zkproto.ErrCode, error) {
	if !validPath(o.Path) {
		return nil, zkproto.ErrBadArguments, nil
	}
	if code, err := a.fence(o.Path); code != zkproto.ErrOK || err != nil {
		return nil, code, err
	}
	n, err := a.t.nodeMeta(o.Path) // the old data is not needed, only its length
	if err != nil {
		return nil, 0, err
	}
	if n == nil {
		return nil, zkproto.ErrNoNode, nil
	}
	if ok, err := a.allowed(n, zkproto.PermWrite); err != nil || !ok {
		return nil, zkproto.ErrNoAuth, err
	}
	grows := int64(len(o.Data) - n.dataLen())
	// ZooKeeper checks the quota before the version.
	if exceeded, err := a.quotaExceeded(o.Path, grows, 0); err != nil || exceeded {
		return nil, zkproto.ErrQuotaExceeded, err
	}
	if !versionOK(o.Version, n.version) {
		return nil, zkproto.ErrBadVersion, nil
	}
	n.version++ // int32: wraps like Java's int
	n.mzxid = a.zxid
	n.mtime = a.hdr.Time
	a.sizes.DataBytes += grows
	if err := a.quotaAdjust(o.Path, grows, 0); err != nil {
		return nil, 0, err
	}
	n.data, n.omittedLen = o.Data, 0
	a.t.putNode(o.Path, n)
	st := n.stat()
	if err := a.nodeEvent(zkproto.EventNodeDataChanged, o.Path, n); err != nil {
		return nil, 0, err
	}
	a.change(Change{Type: ChangeData, Path: o.Path, Stat: st, Data: o.Data})
	return &st, zkproto.ErrOK, nil
}

// setACL: validatePath; fixupACL; node; ADMIN; aversion. Only aversion
// changes; no watch fires.
func (a *applier) setACL(o *SetACL) (*zkproto.Stat, zkproto.ErrCode, error) {
	if !validPath(o.Path) {
		return nil, zkproto.ErrBadArguments, nil
	}
	if code, err := a.fence(o.Path); code != zkproto.ErrOK || err != nil {
		return nil, code, err
	}
	acl, code := fixupACL(o.ACL, a.hdr.Auth)
	if code != zkproto.ErrOK {
		return nil, code, nil
	}
	n, err := a.t.node(o.Path)
	if err != nil {
		return nil, 0, err
	}
	if n == nil {
		return nil, zkproto.ErrNoNode, nil
	}
	if ok, err := a.allowed(n, zkproto.PermAdmin); err != nil || !ok {
		return nil, zkproto.ErrNoAuth, err
	}
	if !versionOK(o.Version, n.aversion) {
		return nil, zkproto.ErrBadVersion, nil
	}
	// Ref the new list before dropping the old one so an unchanged ACL keeps
	// its ID.
	id, err := a.t.aclRef(acl)
	if err != nil {
		return nil, 0, err
	}
	if err := a.t.aclUnref(n.aclID); err != nil {
		return nil, 0, err
	}
	n.aclID = id
	n.aversion++
	a.t.putNode(o.Path, n)
	st := n.stat()
	a.change(Change{Type: ChangeACL, Path: o.Path, Stat: st})
	return &st, zkproto.ErrOK, nil
}

func (a *applier) check(o *Check) (zkproto.ErrCode, error) {
	if !validPath(o.Path) {
		return zkproto.ErrBadArguments, nil
	}
	n, err := a.t.node(o.Path)
	if err != nil {
		return 0, err
	}
	if n == nil {
		return zkproto.ErrNoNode, nil
	}
	if ok, err := a.allowed(n, zkproto.PermRead); err != nil || !ok {
		return zkproto.ErrNoAuth, err
	}
	if !versionOK(o.Version, n.version) {
		return zkproto.ErrBadVersion, nil
	}
	return zkproto.ErrOK, nil
}

// multi applies ops in order, each seeing the previous ones. On the first
// failure everything is rolled back and every result is an error result:
// 0 before the failing op, its code, RuntimeInconsistency after it.
func (a *applier) multi(o *Multi) ([]OpResult, error) {
	res := make([]OpResult, len(o.Ops))
	if a.events == nil { // one event per op, mostly: one allocation, not five growths
		a.events = make([]Event, 0, len(o.Ops))
	}
	failed := -1
	var failCode zkproto.ErrCode
	a.inMulti = map[string]*quotaPending{}
	defer func() { a.inMulti = nil }()
	for i, op := range o.Ops {
		var code zkproto.ErrCode
		var err error
		switch x := op.(type) {
		case *Create:
			var p string
			var st *zkproto.Stat
			p, st, code, err = a.create(x)
			res[i] = OpResult{Type: zkproto.OpCreate2, Path: p, Stat: st}
			if x.OpCode == zkproto.OpCreate {
				res[i].Type = zkproto.OpCreate
			}
		case *Delete:
			code, err = a.delete(x)
			res[i] = OpResult{Type: zkproto.OpDelete}
		case *SetData:
			var st *zkproto.Stat
			st, code, err = a.setData(x)
			res[i] = OpResult{Type: zkproto.OpSetData, Stat: st}
		case *Check:
			code, err = a.check(x)
			res[i] = OpResult{Type: zkproto.OpCheck}
		default:
			return nil, fmt.Errorf("multi: op %T not allowed", op)
		}
		if err != nil {
			return nil, err
		}
		if code != zkproto.ErrOK {
			failed, failCode = i, code
			break
		}
	}
	if failed < 0 {
		return res, nil
	}
	a.t.reset()
	a.events = a.events[:0]
	a.changes = a.changes[:0]
	a.sizes = TreeStats{}
	for i := range res {
		r := OpResult{Type: zkproto.OpError}
		switch {
		case i < failed:
			r.Err = zkproto.ErrOK
		case i == failed:
			r.Err = failCode
		default:
			r.Err = zkproto.ErrRuntimeInconsistency
		}
		res[i] = r
	}
	return res, nil
}
