package sm

import (
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// applyCommand applies one decoded command. The caller has set index, zxid,
// hdr and an empty overlay; it commits the overlay afterwards.
func (a *applier) applyCommand(cmd *Command) (*Result, error) {
	res := &Result{Index: a.index, Zxid: a.zxid}
	var err error
	switch o := cmd.Op.(type) {
	case *CreateSession:
		err = a.createSession(o, res)
	case *CloseSession:
		err = a.closeSession(o, res)
	case *SetSessionOwner:
		err = a.setSessionOwner(o, res)
	case *SetZxidBase:
		if o.Base < a.zxidBase {
			res.Err = zkproto.ErrBadArguments
			break
		}
		a.zxidBase = o.Base
		a.zxid = o.Base + int64(a.index)
		res.Zxid = a.zxid
		a.t.set(keyZxidBase, encodeInt(o.Base))
	case *ReapContainer:
		res.Err, err = a.reapContainer(o)
	case *ReapTTL:
		res.Err, err = a.reapTTL(o)
	case *TouchSessions:
		err = a.touchSessions(o, res)
	case *RegisterReplica:
		err = a.registerReplica(o, res)
	case *ConfigChanged:
		a.configChanged(o, res)
	case *PutTenant:
		err = a.putTenant(o, res)
	case *DeleteTenant:
		err = a.deleteTenant(o, res)
	case *SetCutover:
		res.Err, err = a.setCutover(o)
	case *ImportNodes:
		a.importing = true
		err = a.importNodes(o, res)
		a.importing = false
	case *ImportSessions:
		err = a.importSessions(o, res)
	case *ImportUpdate:
		a.importing = true
		err = a.importUpdate(o, res)
		a.importing = false
	default:
		err = a.clientWrite(cmd.Op, res)
	}
	if err != nil {
		return nil, fmt.Errorf("apply entry %d (%T): %w", a.index, cmd.Op, err)
	}
	res.Events = a.events
	return res, nil
}

// clientWrite runs a session write: session checks first (as ZooKeeper's
// checkSession), then the op. An accepted write bumps the session's LastSeq
// even when the op fails, because the failed op still consumed its zxid.
func (a *applier) clientWrite(op Op, res *Result) error {
	sess, code, outOfOrder, err := a.checkSession()
	if err != nil {
		return err
	}
	if code != zkproto.ErrOK {
		res.Err, res.OutOfOrder = code, outOfOrder
		return nil
	}
	if o, ok := op.(*WithinLimits); ok {
		err = a.limitedWrite(o, res)
	} else {
		err = a.clientOp(op, res)
	}
	if err != nil {
		return err
	}
	if sess != nil {
		sess.LastSeq = a.hdr.Seq
		a.t.putSession(sess)
	}
	return nil
}

// clientOp runs the op of a session write that passed the session checks.
func (a *applier) clientOp(op Op, res *Result) error {
	var err error
	switch o := op.(type) {
	case *Create:
		res.Path, res.Stat, res.Err, err = a.create(o)
	case *Delete:
		res.Err, err = a.delete(o)
	case *SetData:
		res.Stat, res.Err, err = a.setData(o)
	case *SetACL:
		res.Stat, res.Err, err = a.setACL(o)
	case *Check:
		res.Err = zkproto.ErrUnimplemented // check is only valid inside multi
	case *Multi:
		res.Ops, err = a.multi(o)
	case *Rejected:
		res.Err = o.Code
	case *Increment:
		res.Counter, res.Stat, res.Err, err = a.increment(o)
	default:
		return fmt.Errorf("unknown op %T", op)
	}
	return err
}

// createSession: the session ID is the zxid of the entry, so it is unique,
// never 0 and identical on every replica.
func (a *applier) createSession(o *CreateSession, res *Result) error {
	id := a.zxid
	old, err := a.t.session(id)
	if err != nil {
		return err
	}
	if old != nil {
		return fmt.Errorf("session %#x already exists", id)
	}
	s := &SessionInfo{ID: id, Timeout: o.Timeout, Password: o.Password, Owner: o.Owner,
		Conn: a.hdr.Conn, Auth: a.hdr.Auth}
	a.t.putSession(s)
	res.Session, res.Timeout = id, o.Timeout
	a.change(Change{Type: ChangeSessionCreated, Session: id})
	return nil
}

func (a *applier) setSessionOwner(o *SetSessionOwner, res *Result) error {
	// A reconnect is no transaction in ZooKeeper: it must not consume a
	// zxid. Lowering zxidBase by one gives the next entry the zxid this one
	// would have had; this entry reports the previous zxid as its own.
	a.zxidBase--
	a.zxid--
	res.Zxid = a.zxid
	a.t.set(keyZxidBase, encodeInt(a.zxidBase))
	s, err := a.t.session(a.hdr.Session)
	if err != nil {
		return err
	}
	if s == nil || !passwordEqual(s.Password, o.Password) {
		res.Err = zkproto.ErrSessionExpired
		return nil
	}
	s.Owner, s.Conn, s.LastSeq, s.Auth = o.Owner, a.hdr.Conn, 0, a.hdr.Auth
	a.t.putSession(s)
	res.Session, res.Timeout = s.ID, s.Timeout
	return nil
}

// touchSessions consumes no zxid (see setSessionOwner) and reports the
// sessions that still exist, for the trackers.
func (a *applier) touchSessions(o *TouchSessions, res *Result) error {
	a.zxidBase--
	a.zxid--
	res.Zxid = a.zxid
	a.t.set(keyZxidBase, encodeInt(a.zxidBase))
	for _, id := range o.IDs {
		s, err := a.t.session(id)
		if err != nil {
			return err
		}
		if s != nil {
			res.Touched = append(res.Touched, id)
		}
	}
	return nil
}

// closeSession deletes the session and all of its ephemerals in this one
// transaction (in ZooKeeper's order, see HashSetOrder), emitting the usual
// delete events.
func (a *applier) closeSession(o *CloseSession, res *Result) error {
	var s *SessionInfo
	if o.Expired {
		var err error
		if s, err = a.t.session(a.hdr.Session); err != nil {
			return err
		}
		if s == nil {
			res.Err = zkproto.ErrSessionExpired
			return nil
		}
	} else {
		var code zkproto.ErrCode
		var outOfOrder bool
		var err error
		if s, code, outOfOrder, err = a.checkSession(); err != nil {
			return err
		}
		if code != zkproto.ErrOK {
			res.Err, res.OutOfOrder = code, outOfOrder
			return nil
		}
		if s == nil { // session 0
			res.Err = zkproto.ErrSessionExpired
			return nil
		}
	}
	if err := a.t.flush(); err != nil { // the scan reads the batch
		return err
	}
	paths, err := sessionEphemerals(a.t.r, s.ID)
	if err != nil {
		return err
	}
	nodes := make(map[string]*nodeRec, len(paths))
	czxids := make([]int64, len(paths))
	for i, p := range paths {
		n, err := a.t.node(p)
		if err != nil {
			return err
		}
		if n == nil || n.kind != kindEphemeral || n.owner != s.ID {
			return fmt.Errorf("close session %#x: ephemeral index names %s, which is not its node", s.ID, p)
		}
		nodes[p], czxids[i] = n, n.czxid
	}
	HashSetOrder(paths, czxids)
	for _, p := range paths {
		n := nodes[p]
		parentPath, _ := parentOf(p)
		parent, err := a.t.node(parentPath)
		if err != nil {
			return err
		}
		if parent == nil {
			return fmt.Errorf("close session %#x: parent of %s missing", s.ID, p)
		}
		if err := a.removeNode(p, n, parentPath, parent); err != nil {
			return err
		}
	}
	a.t.del(sessionKey(s.ID))
	a.change(Change{Type: ChangeSessionClosed, Session: s.ID})
	res.ClosedSession = s.ID
	return nil
}

// reapContainer is deleteContainer (20) guarded by the reaper's rule,
// re-checked here: a container without children that has had a child
// (stored cversion > 0), or that was never used and whose mtime is more than
// NeverUsedMs old. Not eligible → BadVersion, children → NotEmpty.
func (a *applier) reapContainer(o *ReapContainer) (zkproto.ErrCode, error) {
	n, parentPath, parent, code, err := a.reapTarget(o.Path)
	if code != zkproto.ErrOK || err != nil {
		return code, err
	}
	if n.kind != kindContainer {
		return zkproto.ErrBadVersion, nil
	}
	if n.numChildren > 0 {
		return zkproto.ErrNotEmpty, nil
	}
	if !containerEligible(n, a.hdr.Time, o.NeverUsedMs) {
		return zkproto.ErrBadVersion, nil
	}
	return zkproto.ErrOK, a.removeNode(o.Path, n, parentPath, parent)
}

func containerEligible(n *nodeRec, now, neverUsedMs int64) bool {
	return n.numChildren == 0 && (n.creates > 0 || (neverUsedMs > 0 && now-n.mtime > neverUsedMs))
}

func ttlEligible(n *nodeRec, now int64) bool {
	return n.numChildren == 0 && now-n.mtime > n.ttl
}

// reapTTL deletes a TTL node without children that the leader saw go
// unmodified for its TTL (still at o.Mzxid), or, for an entry without
// Mzxid, whose mtime is more than its TTL before the command's time.
func (a *applier) reapTTL(o *ReapTTL) (zkproto.ErrCode, error) {
	n, parentPath, parent, code, err := a.reapTarget(o.Path)
	if code != zkproto.ErrOK || err != nil {
		return code, err
	}
	if n.kind != kindTTLNode {
		return zkproto.ErrBadVersion, nil
	}
	if n.numChildren > 0 {
		return zkproto.ErrNotEmpty, nil
	}
	if o.Mzxid != 0 && n.mzxid != o.Mzxid || o.Mzxid == 0 && !ttlEligible(n, a.hdr.Time) {
		return zkproto.ErrBadVersion, nil
	}
	return zkproto.ErrOK, a.removeNode(o.Path, n, parentPath, parent)
}

func (a *applier) reapTarget(p string) (*nodeRec, string, *nodeRec, zkproto.ErrCode, error) {
	// As deleteContainer's getParentPathAndValidate.
	parentPath, ok := parentOf(p)
	if !ok || zkproto.IsSpecialPath(p) {
		return nil, "", nil, zkproto.ErrBadArguments, nil
	}
	n, err := a.t.node(p)
	if err != nil || n == nil {
		return nil, "", nil, zkproto.ErrNoNode, err
	}
	parent, err := a.t.node(parentPath)
	if err != nil {
		return nil, "", nil, 0, err
	}
	if parent == nil {
		return nil, "", nil, 0, fmt.Errorf("reap %s: parent missing", p)
	}
	return n, parentPath, parent, zkproto.ErrOK, nil
}
