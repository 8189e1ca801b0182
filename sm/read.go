package sm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zkbridge/zkbridge/zkproto"
)

// View is a consistent, point-in-time read view of the tree (a Pebble
// snapshot). All reads through one View see the same applied index, however
// many Updates commit meanwhile. Close it promptly: an open View delays
// RecoverFromSnapshot and Close.
//
// Reads do not check ACLs; the server checks READ/ADMIN with CheckACL on the
// ACL returned by Get. Paths that are not valid ZooKeeper paths do not exist
// (ErrNoNode), like ZooKeeper's reads.
type View struct {
	s *StateMachine
	// snap is what the view reads: a Pebble snapshot it owns (own), or,
	// for a LockedView, the DB itself.
	snap   pebble.Reader
	own    *pebble.Snapshot
	locked bool
}

// View opens a read view. It fails with ErrClosed after Close.
func (s *StateMachine) View() (*View, error) {
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	snap := s.db.NewSnapshot()
	return &View{s: s, snap: snap, own: snap}, nil
}

// LockedView opens a read view for a caller that keeps every Update out
// for as long as it reads (it holds the node's apply lock): the state
// cannot change under it, so the view reads the DB itself instead of a
// Pebble snapshot, whose creation and release (which looks for
// compactions to schedule) cost a getData about as much as the read.
func (s *StateMachine) LockedView() (*View, error) {
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	return &View{s: s, snap: s.db, locked: true}, nil
}

// Close releases the view.
func (v *View) Close() {
	if v.snap == nil {
		return
	}
	if v.own != nil {
		v.own.Close()
		v.own = nil
	}
	v.snap = nil
	v.s.mu.RUnlock()
}

// LastZxid returns the zxid of the last entry applied in this view.
func (v *View) LastZxid() (int64, error) {
	if v.locked {
		// Stored with the state by the Update that committed it, and no
		// Update runs while a locked view is open.
		return v.s.lastZxid.Load(), nil
	}
	_, _, last, err := readMeta(v.snap)
	return last, err
}

// AppliedIndex returns the applied Raft index of this view.
func (v *View) AppliedIndex() (uint64, error) {
	idx, _, _, err := readMeta(v.snap)
	return idx, err
}

func (v *View) node(p string) (*nodeRec, error) {
	if !validPath(p) {
		return nil, nil
	}
	// The apply path's node cache mirrors the committed state, and only
	// an Update (or a database replaced under s.mu) changes it, neither of
	// which runs while a locked view is open: a hit spares the Pebble
	// lookup, a quarter of a getData's CPU.
	if v.locked {
		if rec, ok := v.s.nodes.lookup(p); ok {
			return rec, nil
		}
	}
	b, err := readRaw(v.snap, nodeKey(p))
	if err != nil || b == nil {
		return nil, err
	}
	n, err := decodeNode(b)
	if err != nil {
		return nil, fmt.Errorf("sm: node %s: %w", p, err)
	}
	return n, nil
}

func (v *View) acl(id uint64) ([]zkproto.ACL, error) {
	if v.locked {
		if acl, ok := v.s.readACLs.get(id); ok {
			return acl, nil
		}
	}
	b, err := readRaw(v.snap, aclKey(id))
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("sm: acl %d missing", id)
	}
	_, acl, err := decodeACLRec(b)
	if err == nil && v.locked {
		v.s.readACLs.put(id, acl)
	}
	return acl, err
}

// readACLCache keeps the ACL lists locked views decoded, by id. An id
// names one list for as long as it exists and is never given to another
// (aclRef takes new ids from a counter), so a kept list stays right until
// the database is replaced (dropCaches, under the database's lock, which
// every view holds shared). The lists are shared: callers only read them.
type readACLCache struct {
	mu   sync.RWMutex
	acls map[uint64][]zkproto.ACL
}

func (c *readACLCache) get(id uint64) ([]zkproto.ACL, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	acl, ok := c.acls[id]
	return acl, ok
}

func (c *readACLCache) put(id uint64, acl []zkproto.ACL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acls == nil || len(c.acls) >= maxDecodedACLs {
		c.acls = map[uint64][]zkproto.ACL{}
	}
	c.acls[id] = acl
}

func (c *readACLCache) reset() {
	c.mu.Lock()
	c.acls = nil
	c.mu.Unlock()
}

// Get returns the node's stat, data and ACL, or zkproto.ErrNoNode.
func (v *View) Get(p string) (*Node, error) {
	n, err := v.node(p)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, zkproto.ErrNoNode
	}
	acl, err := v.acl(n.aclID)
	if err != nil {
		return nil, fmt.Errorf("sm: get %s: %w", p, err)
	}
	return &Node{Stat: n.stat(), Data: n.data, ACL: acl}, nil
}

// Exists returns the node's stat, or zkproto.ErrNoNode.
func (v *View) Exists(p string) (zkproto.Stat, error) {
	n, err := v.node(p)
	if err != nil {
		return zkproto.Stat{}, err
	}
	if n == nil {
		return zkproto.Stat{}, zkproto.ErrNoNode
	}
	return n.stat(), nil
}

// Children returns the child names (byte order) and the node's stat, or
// zkproto.ErrNoNode. The names may be shared with other readers: callers
// must not modify them.
func (v *View) Children(p string) ([]string, zkproto.Stat, error) {
	n, err := v.node(p)
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	if n == nil {
		return nil, zkproto.Stat{}, zkproto.ErrNoNode
	}
	st := n.stat()
	if names, ok := v.s.children.get(p, &st); ok {
		return names, st, nil
	}
	lo, hi := childRange(spaceChild, p)
	names := make([]string, 0, n.numChildren)
	err = scanKeys(v.snap, lo, hi, func(k []byte) error {
		names = append(names, string(k[len(lo):]))
		return nil
	})
	if err != nil {
		return nil, zkproto.Stat{}, fmt.Errorf("sm: children %s: %w", p, err)
	}
	v.s.children.put(p, &st, names)
	return names, st, nil
}

// AllChildrenNumber counts all descendants of p (getAllChildrenNumber).
func (v *View) AllChildrenNumber(p string) (int64, error) {
	n, err := v.node(p)
	if err != nil {
		return 0, err
	}
	if n == nil {
		return 0, zkproto.ErrNoNode
	}
	var count int64
	inc := func([]byte) error { count++; return nil }
	if p != "/" {
		lo, hi := childRange(spaceChild, p)
		if err := scanKeys(v.snap, lo, hi, inc); err != nil {
			return 0, err
		}
	}
	lo, hi := deepRange(spaceChild, p)
	if err := scanKeys(v.snap, lo, hi, inc); err != nil {
		return 0, err
	}
	return count, nil
}

// Ephemerals returns the paths of the session's ephemeral nodes, sorted.
func (v *View) Ephemerals(session int64) ([]string, error) {
	return sessionEphemerals(v.snap, session)
}

// Session returns the session record, or zkproto.ErrSessionExpired if the
// session does not exist (never created, closed or expired).
func (v *View) Session(id int64) (*SessionInfo, error) {
	b, err := readRaw(v.snap, sessionKey(id))
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, zkproto.ErrSessionExpired
	}
	return decodeSession(id, b)
}

// Sessions calls fn for every session in ID order (leader's expiry tracker
// after an election, 4lw dumps).
func (v *View) Sessions(fn func(*SessionInfo) error) error {
	return scanKV(v.snap, []byte{spaceSession}, []byte{spaceSession + 1}, func(k, val []byte) error {
		s, err := decodeSession(int64(binary.BigEndian.Uint64(k[1:])), val)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// ReapCandidates lists, in path order and up to limit each, the containers
// and TTL nodes that ReapContainer/ReapTTL would delete at time now (same
// rule as apply, which re-checks).
func (v *View) ReapCandidates(now, neverUsedMs int64, limit int) (containers, ttls []string, err error) {
	check := func(space byte, out *[]string, ok func(*nodeRec) bool) error {
		return scanKeys(v.snap, []byte{space}, []byte{space + 1}, func(k []byte) error {
			if len(*out) >= limit {
				return errStop
			}
			p := string(k[1:])
			n, err := v.node(p)
			if err != nil {
				return err
			}
			if n != nil && ok(n) {
				*out = append(*out, p)
			}
			return nil
		})
	}
	if err := check(spaceContainer, &containers, func(n *nodeRec) bool {
		return n.kind == kindContainer && containerEligible(n, now, neverUsedMs)
	}); err != nil {
		return nil, nil, err
	}
	if err := check(spaceTTL, &ttls, func(n *nodeRec) bool {
		return n.kind == kindTTLNode && ttlEligible(n, now)
	}); err != nil {
		return nil, nil, err
	}
	return containers, ttls, nil
}

// ChangeLog returns up to max change-log records with zxid >= from, in zxid
// order. trimmed is the highest zxid dropped by retention: if from <=
// trimmed, history between from and the first returned record was lost.
func (v *View) ChangeLog(from int64, max int) (recs []*ChangeRecord, trimmed int64, err error) {
	mb, err := readRaw(v.snap, keyLogMeta)
	if err != nil {
		return nil, 0, err
	}
	meta, err := decodeLogMeta(mb)
	if err != nil {
		return nil, 0, err
	}
	if from < 0 {
		from = 0
	}
	err = scanKV(v.snap, logKey(from), []byte{spaceLog + 1}, func(_, val []byte) error {
		if len(recs) >= max {
			return errStop
		}
		r, err := decodeChangeRecord(val)
		if err != nil {
			return err
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	for _, r := range recs {
		if err := v.valuesFromNodes(r); err != nil {
			return nil, 0, err
		}
	}
	return recs, meta.Trimmed, nil
}

// valuesFromNodes fills in the values a record left in their nodes
// (changeValueInline). A node still at the change's version (the same
// creation, modification and version) holds the value; otherwise a later
// change replaced it (a later change of the path in this record, a
// multi's, or in a later record) and the change is DataSuperseded.
func (v *View) valuesFromNodes(r *ChangeRecord) error {
	for i := range r.Changes {
		c := &r.Changes[i]
		if !c.dataInNode {
			continue
		}
		c.dataInNode = false
		if changedLater(r.Changes[i+1:], c.Path) {
			c.DataSuperseded = true
			continue
		}
		n, err := v.node(c.Path)
		if err != nil {
			return fmt.Errorf("sm: change log at zxid %d: the value of %s: %w", r.Zxid, c.Path, err)
		}
		if n == nil || n.czxid != c.Stat.Czxid || n.mzxid != c.Stat.Mzxid || n.version != c.Stat.Version {
			c.DataSuperseded = true
			continue
		}
		c.Data = bytes.Clone(n.data) // the node may be the apply path's cached one
	}
	return nil
}

// changedLater reports whether a change in later creates, sets or deletes path.
func changedLater(later []Change, path string) bool {
	for i := range later {
		if later[i].Path == path && (carriesData(later[i].Type) || later[i].Type == ChangeDeleted) {
			return true
		}
	}
	return false
}

var errStop = fmt.Errorf("stop")

func scanKeys(r pebble.Reader, lo, hi []byte, fn func(k []byte) error) error {
	return scanKV(r, lo, hi, func(k, _ []byte) error { return fn(k) })
}

// scanKV iterates [lo, hi); fn returning errStop ends the scan without error.
func scanKV(r pebble.Reader, lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		val, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), val); err != nil {
			it.Close()
			if err == errStop {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

func sessionEphemerals(r pebble.Reader, session int64) ([]string, error) {
	lo, hi := ephemeralPrefix(session)
	var out []string
	err := scanKeys(r, lo, hi, func(k []byte) error {
		out = append(out, string(k[9:]))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sm: ephemerals of %#x: %w", session, err)
	}
	return out, nil
}

// Query is a read run by Lookup (dragonboat's StaleRead / SyncRead): it gets
// a View that is closed when it returns.
type Query func(v *View) (any, error)

// Lookup runs a Query. It is safe concurrently with Update.
func (s *StateMachine) Lookup(q interface{}) (interface{}, error) {
	f, ok := q.(Query)
	if !ok {
		if g, ok2 := q.(func(*View) (any, error)); ok2 {
			f, ok = Query(g), true
		}
	}
	if !ok {
		return nil, fmt.Errorf("sm: lookup: unsupported query type %T", q)
	}
	v, err := s.View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return f(v)
}
