package sm

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

// An independent in-memory model of ZooKeeper's DataTree + PrepRequestProcessor
// rules, written straight from the protocol reference, used to check sm.

type mNode struct {
	data                       []byte
	acl                        []zkproto.ACL
	czxid, mzxid, pzxid        int64
	ctime, mtime               int64
	version, creates, aversion int32
	owner                      int64 // ephemeral session
	container, ttlNode         bool
	ttl                        int64
	children                   map[string]bool
}

type mSession struct {
	conn, seq uint64
	password  []byte
}

type model struct {
	nodes    map[string]*mNode
	sessions map[int64]*mSession
	super    string
}

func newModel(super string) *model {
	m := &model{nodes: map[string]*mNode{}, sessions: map[int64]*mSession{}, super: super}
	all := []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
	m.nodes["/"] = &mNode{data: []byte{}, acl: all, children: map[string]bool{"zookeeper": true}}
	m.nodes["/zookeeper"] = &mNode{data: []byte{}, acl: all, children: map[string]bool{"quota": true, "config": true}}
	m.nodes["/zookeeper/quota"] = &mNode{data: []byte{}, acl: all, children: map[string]bool{}}
	m.nodes["/zookeeper/config"] = &mNode{data: []byte{}, aversion: -1, acl: []zkproto.ACL{{Perms: 1, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}, children: map[string]bool{}}
	return m
}

func (m *model) clone() *model {
	c := &model{nodes: make(map[string]*mNode, len(m.nodes)), sessions: make(map[int64]*mSession, len(m.sessions)), super: m.super}
	for p, n := range m.nodes {
		nn := *n
		nn.children = make(map[string]bool, len(n.children))
		for k := range n.children {
			nn.children[k] = true
		}
		c.nodes[p] = &nn
	}
	for id, s := range m.sessions {
		ss := *s
		c.sessions[id] = &ss
	}
	return c
}

func (n *mNode) stat() zkproto.Stat {
	st := zkproto.Stat{Czxid: n.czxid, Mzxid: n.mzxid, Pzxid: n.pzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Aversion: n.aversion, DataLength: int32(len(n.data)),
		NumChildren: int32(len(n.children))}
	st.Cversion = 2*n.creates - st.NumChildren
	if n.owner != 0 {
		st.EphemeralOwner = n.owner
	}
	return st
}

func modelParent(p string) (string, bool) {
	i := strings.LastIndex(p, "/")
	if i < 0 || strings.Contains(p, "\x00") {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return p[:i], true
}

func modelIPMatch(id, expr string) bool {
	if strings.HasSuffix(expr, "/8") {
		return strings.SplitN(id, ".", 2)[0] == strings.SplitN(expr, ".", 2)[0]
	}
	return id == expr
}

func (m *model) allowed(acl []zkproto.ACL, perm int32, ids []zkproto.Id) bool {
	for _, id := range ids {
		if id.Scheme == "super" || (id.Scheme == "digest" && id.ID == m.super) {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID == (zkproto.Id{Scheme: "world", ID: "anyone"}) {
			return true
		}
		for _, id := range ids {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			if (id.Scheme == "digest" && id.ID == a.ID.ID) || (id.Scheme == "ip" && modelIPMatch(id.ID, a.ID.ID)) {
				return true
			}
		}
	}
	return false
}

func (m *model) fixup(acl []zkproto.ACL, ids []zkproto.Id) ([]zkproto.ACL, zkproto.ErrCode) {
	var uniq []zkproto.ACL
	seen := map[zkproto.ACL]bool{}
	for _, a := range acl {
		if !seen[a] {
			seen[a] = true
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, zkproto.ErrInvalidACL
	}
	var out []zkproto.ACL
	for _, a := range uniq {
		switch a.ID.Scheme {
		case "world":
			if a.ID.ID != "anyone" {
				return nil, zkproto.ErrInvalidACL
			}
			out = append(out, a)
		case "auth":
			n := 0
			for _, id := range ids {
				if id.Scheme == "digest" {
					out = append(out, zkproto.ACL{Perms: a.Perms, ID: id})
					n++
				}
			}
			if n == 0 {
				return nil, zkproto.ErrInvalidACL
			}
		case "digest":
			if strings.Count(a.ID.ID, ":") != 1 || strings.HasSuffix(a.ID.ID, ":") {
				return nil, zkproto.ErrInvalidACL
			}
			out = append(out, a)
		case "ip":
			out = append(out, a) // the generator only produces valid ip ids
		default:
			return nil, zkproto.ErrInvalidACL
		}
	}
	return out, zkproto.ErrOK
}

type mCtx struct {
	zxid   int64
	hdr    Header
	events []Event
}

func (m *model) create(c *mCtx, o *Create) (string, zkproto.ErrCode) {
	if o.Flags < 0 || o.Flags > 6 {
		return "", zkproto.ErrBadArguments
	}
	mode := zkproto.CreateMode(o.Flags)
	ttlMode := mode == 5 || mode == 6
	seq := mode == 2 || mode == 3 || mode == 6
	isTTLOp := o.OpCode == zkproto.OpCreateTTL
	if isTTLOp {
		if !ttlMode || o.TTL <= 0 || o.TTL > zkproto.MaxTTL {
			return "", zkproto.ErrBadArguments
		}
	} else if ttlMode {
		return "", zkproto.ErrBadArguments
	}
	ephemeral := (o.OpCode == zkproto.OpCreate || o.OpCode == zkproto.OpCreate2) && (mode == 1 || mode == 3)
	parentPath, ok := modelParent(o.Path)
	if !ok {
		return "", zkproto.ErrBadArguments
	}
	acl, code := m.fixup(o.ACL, c.hdr.Auth)
	if code != 0 {
		return "", code
	}
	parent := m.nodes[parentPath]
	if parent == nil {
		return "", zkproto.ErrNoNode
	}
	if !m.allowed(parent.acl, zkproto.PermCreate, c.hdr.Auth) {
		return "", zkproto.ErrNoAuth
	}
	p := o.Path
	if seq {
		p = fmt.Sprintf("%s%010d", p, parent.creates)
	}
	if zkproto.ValidatePath(p) != nil {
		return "", zkproto.ErrBadArguments
	}
	if m.nodes[p] != nil {
		return "", zkproto.ErrNodeExists
	}
	if parent.owner != 0 {
		return "", zkproto.ErrNoChildrenForEphemerals
	}
	n := &mNode{data: o.Data, acl: acl, czxid: c.zxid, mzxid: c.zxid, pzxid: c.zxid,
		ctime: c.hdr.Time, mtime: c.hdr.Time, children: map[string]bool{},
		container: o.OpCode == zkproto.OpCreateContainer, ttlNode: isTTLOp}
	if ephemeral {
		n.owner = c.hdr.Session
	}
	if isTTLOp {
		n.ttl = o.TTL
	}
	m.nodes[p] = n
	parent.children[p[strings.LastIndex(p, "/")+1:]] = true
	parent.creates++
	parent.pzxid = c.zxid
	c.events = append(c.events, Event{Type: zkproto.EventNodeCreated, Path: p, Zxid: c.zxid}, Event{Type: zkproto.EventNodeChildrenChanged, Path: parentPath, Zxid: c.zxid})
	return p, 0
}

func (m *model) remove(c *mCtx, p string) {
	parentPath, _ := modelParent(p)
	parent := m.nodes[parentPath]
	delete(parent.children, p[strings.LastIndex(p, "/")+1:])
	if c.zxid > parent.pzxid {
		parent.pzxid = c.zxid
	}
	delete(m.nodes, p)
	c.events = append(c.events, Event{Type: zkproto.EventNodeDeleted, Path: p, Zxid: c.zxid}, Event{Type: zkproto.EventNodeChildrenChanged, Path: parentPath, Zxid: c.zxid})
}

func (m *model) delete(c *mCtx, o *Delete) zkproto.ErrCode {
	parentPath, ok := modelParent(o.Path)
	if !ok || zkproto.IsSpecialPath(o.Path) {
		return zkproto.ErrBadArguments
	}
	parent := m.nodes[parentPath]
	if parent == nil {
		return zkproto.ErrNoNode
	}
	if !m.allowed(parent.acl, zkproto.PermDelete, c.hdr.Auth) {
		return zkproto.ErrNoAuth
	}
	n := m.nodes[o.Path]
	if n == nil {
		return zkproto.ErrNoNode
	}
	if o.Version != -1 && o.Version != n.version {
		return zkproto.ErrBadVersion
	}
	if len(n.children) > 0 {
		return zkproto.ErrNotEmpty
	}
	m.remove(c, o.Path)
	return 0
}

func (m *model) setData(c *mCtx, o *SetData) (*zkproto.Stat, zkproto.ErrCode) {
	if zkproto.ValidatePath(o.Path) != nil {
		return nil, zkproto.ErrBadArguments
	}
	n := m.nodes[o.Path]
	if n == nil {
		return nil, zkproto.ErrNoNode
	}
	if !m.allowed(n.acl, zkproto.PermWrite, c.hdr.Auth) {
		return nil, zkproto.ErrNoAuth
	}
	if o.Version != -1 && o.Version != n.version {
		return nil, zkproto.ErrBadVersion
	}
	n.version++
	n.data = o.Data
	n.mzxid, n.mtime = c.zxid, c.hdr.Time
	c.events = append(c.events, Event{Type: zkproto.EventNodeDataChanged, Path: o.Path, Zxid: c.zxid})
	st := n.stat()
	return &st, 0
}

func (m *model) setACL(c *mCtx, o *SetACL) (*zkproto.Stat, zkproto.ErrCode) {
	if zkproto.ValidatePath(o.Path) != nil {
		return nil, zkproto.ErrBadArguments
	}
	acl, code := m.fixup(o.ACL, c.hdr.Auth)
	if code != 0 {
		return nil, code
	}
	n := m.nodes[o.Path]
	if n == nil {
		return nil, zkproto.ErrNoNode
	}
	if !m.allowed(n.acl, zkproto.PermAdmin, c.hdr.Auth) {
		return nil, zkproto.ErrNoAuth
	}
	if o.Version != -1 && o.Version != n.aversion {
		return nil, zkproto.ErrBadVersion
	}
	n.aversion++
	n.acl = acl
	st := n.stat()
	return &st, 0
}

func (m *model) check(c *mCtx, o *Check) zkproto.ErrCode {
	if zkproto.ValidatePath(o.Path) != nil {
		return zkproto.ErrBadArguments
	}
	n := m.nodes[o.Path]
	if n == nil {
		return zkproto.ErrNoNode
	}
	if !m.allowed(n.acl, zkproto.PermRead, c.hdr.Auth) {
		return zkproto.ErrNoAuth
	}
	if o.Version != -1 && o.Version != n.version {
		return zkproto.ErrBadVersion
	}
	return 0
}

func (m *model) closeSession(c *mCtx, id int64) {
	var eph []string
	for p, n := range m.nodes {
		if n.owner == id {
			eph = append(eph, p)
		}
	}
	// ZooKeeper's deletion order (hash-set order, pinned against Java by
	// TestCloseOrderMatchesJava).
	czxid := make([]int64, len(eph))
	for i, p := range eph {
		czxid[i] = m.nodes[p].czxid
	}
	HashSetOrder(eph, czxid)
	for _, p := range eph {
		m.remove(c, p)
	}
	delete(m.sessions, id)
}

// apply returns the expected Result of cmd at zxid.
func (m *model) apply(zxid int64, cmd *Command) (*model, *Result) {
	c := &mCtx{zxid: zxid, hdr: cmd.Header}
	r := &Result{Index: uint64(zxid), Zxid: zxid}
	sessCheck := func() (*mSession, bool) {
		if cmd.Session == 0 {
			return nil, true
		}
		s := m.sessions[cmd.Session]
		switch {
		case s == nil:
			r.Err = zkproto.ErrSessionExpired
		case s.conn != cmd.Conn:
			r.Err = zkproto.ErrSessionMoved
		case cmd.Seq != s.seq+1:
			r.Err, r.OutOfOrder = zkproto.ErrSessionMoved, true
		default:
			return s, true
		}
		return nil, false
	}
	switch o := cmd.Op.(type) {
	case *CreateSession:
		m.sessions[zxid] = &mSession{conn: cmd.Conn, password: o.Password}
		r.Session = zxid
	case *CloseSession:
		if o.Expired {
			if m.sessions[cmd.Session] == nil {
				r.Err = zkproto.ErrSessionExpired
				break
			}
		} else if _, ok := sessCheck(); !ok {
			break
		}
		m.closeSession(c, cmd.Session)
	case *ReapTTL:
		n := m.nodes[o.Path]
		_, okp := modelParent(o.Path)
		switch {
		case !okp || zkproto.IsSpecialPath(o.Path):
			r.Err = zkproto.ErrBadArguments
		case n == nil:
			r.Err = zkproto.ErrNoNode
		case !n.ttlNode:
			r.Err = zkproto.ErrBadVersion
		case len(n.children) > 0:
			r.Err = zkproto.ErrNotEmpty
		case cmd.Time-n.mtime <= n.ttl:
			r.Err = zkproto.ErrBadVersion
		default:
			m.remove(c, o.Path)
		}
	case *ReapContainer:
		n := m.nodes[o.Path]
		_, okp := modelParent(o.Path)
		switch {
		case !okp || zkproto.IsSpecialPath(o.Path):
			r.Err = zkproto.ErrBadArguments
		case n == nil:
			r.Err = zkproto.ErrNoNode
		case !n.container:
			r.Err = zkproto.ErrBadVersion
		case len(n.children) > 0:
			r.Err = zkproto.ErrNotEmpty
		case n.creates == 0:
			r.Err = zkproto.ErrBadVersion
		default:
			m.remove(c, o.Path)
		}
	default:
		s, ok := sessCheck()
		if !ok {
			break
		}
		switch o := cmd.Op.(type) {
		case *Create:
			var p string
			p, r.Err = m.create(c, o)
			if r.Err == 0 {
				r.Path = p
				st := m.nodes[p].stat()
				r.Stat = &st
			}
		case *Delete:
			r.Err = m.delete(c, o)
		case *SetData:
			r.Stat, r.Err = m.setData(c, o)
		case *SetACL:
			r.Stat, r.Err = m.setACL(c, o)
		case *Check:
			r.Err = zkproto.ErrUnimplemented
		case *Multi:
			saved := m.clone()
			r.Ops = []OpResult{}
			fail := -1
			var failCode zkproto.ErrCode
			for i, op := range o.Ops {
				var res OpResult
				var code zkproto.ErrCode
				switch x := op.(type) {
				case *Create:
					res.Type = zkproto.OpCreate2
					if x.OpCode == zkproto.OpCreate {
						res.Type = zkproto.OpCreate
					}
					res.Path, code = m.create(c, x)
					if code == 0 {
						st := m.nodes[res.Path].stat()
						res.Stat = &st
					}
				case *Delete:
					res.Type, code = zkproto.OpDelete, m.delete(c, x)
				case *SetData:
					res.Type = zkproto.OpSetData
					res.Stat, code = m.setData(c, x)
				case *Check:
					res.Type, code = zkproto.OpCheck, m.check(c, x)
				}
				r.Ops = append(r.Ops, res)
				if code != 0 {
					fail, failCode = i, code
					break
				}
			}
			if fail >= 0 {
				m = saved
				s = m.sessions[cmd.Session]
				c.events = nil
				r.Ops = r.Ops[:0]
				for i := range o.Ops {
					e := zkproto.ErrRuntimeInconsistency
					if i < fail {
						e = 0
					} else if i == fail {
						e = failCode
					}
					r.Ops = append(r.Ops, OpResult{Type: zkproto.OpError, Err: e})
				}
			}
		}
		if s != nil {
			s.seq = cmd.Seq
		}
	}
	r.Events = c.events
	return m, r
}

// ---- random generator ----

type gen struct {
	rnd      *rand.Rand
	m        *model
	sessions []int64 // including closed ones
	conn     map[int64]uint64
	seq      map[int64]uint64
	auth     map[int64][]zkproto.Id
	now      int64
	super    zkproto.Id
}

var genACLs = func() [][]zkproto.ACL {
	alice := digestID("alice", "a")
	return [][]zkproto.ACL{
		zkproto.OpenACLUnsafe(),
		zkproto.OpenACLUnsafe(),
		zkproto.OpenACLUnsafe(),
		{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}},
		{{Perms: zkproto.PermAll, ID: alice}},
		{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth"}}},
		{{Perms: zkproto.PermRead | zkproto.PermCreate, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "ip", ID: "127.0.0.0/8"}}},
		{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "ip", ID: "10.0.0.1"}}},
		{{Perms: zkproto.PermCreate | zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}, {Perms: zkproto.PermCreate | zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}},
		{},
		{{Perms: 31, ID: zkproto.Id{Scheme: "world", ID: "everyone"}}},
		{{Perms: 31, ID: zkproto.Id{Scheme: "digest", ID: "bob"}}},
	}
}()

var genNames = []string{"a", "b", "c", "d"}

func (g *gen) path() string {
	// Mostly existing nodes, sometimes new or odd paths.
	switch x := g.rnd.Intn(20); {
	case x < 12 && len(g.m.nodes) > 0:
		paths := make([]string, 0, len(g.m.nodes))
		for p := range g.m.nodes {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		return paths[g.rnd.Intn(len(paths))]
	case x == 12:
		return []string{"/", "/zookeeper", "/zookeeper/config", "/a/", "a", "/a//b", "/a/.", "/zookeeper/quota"}[g.rnd.Intn(8)]
	default:
		depth := 1 + g.rnd.Intn(3)
		p := ""
		for i := 0; i < depth; i++ {
			p += "/" + genNames[g.rnd.Intn(len(genNames))]
		}
		return p
	}
}

func (g *gen) version() int32 {
	if g.rnd.Intn(3) == 0 {
		return -1
	}
	return int32(g.rnd.Intn(3))
}

func (g *gen) data() []byte {
	switch g.rnd.Intn(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return []byte(fmt.Sprintf("d%d", g.rnd.Intn(1000)))
}

func (g *gen) createOp() *Create {
	o := &Create{Path: g.path(), Data: g.data(), ACL: genACLs[g.rnd.Intn(len(genACLs))]}
	o.OpCode = []zkproto.OpCode{zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreate, zkproto.OpCreateContainer, zkproto.OpCreateTTL}[g.rnd.Intn(5)]
	o.Flags = int32(g.rnd.Intn(8))
	if o.OpCode == zkproto.OpCreateTTL {
		o.Flags = int32(5 + g.rnd.Intn(2))
		if g.rnd.Intn(8) == 0 {
			o.Flags = int32(g.rnd.Intn(5))
		}
		o.TTL = int64(g.rnd.Intn(50))
	}
	if g.rnd.Intn(4) == 0 && o.Flags != 7 {
		o.Path = strings.TrimRight(o.Path, "/") + "/s-"
	}
	return o
}

func (g *gen) multiOp() Op {
	switch g.rnd.Intn(4) {
	case 0:
		return g.createOp()
	case 1:
		return &Delete{Path: g.path(), Version: g.version()}
	case 2:
		return &SetData{Path: g.path(), Data: g.data(), Version: g.version()}
	}
	return &Check{Path: g.path(), Version: g.version()}
}

func (g *gen) next(index uint64) *Command {
	g.now += int64(g.rnd.Intn(10))
	live := make([]int64, 0, len(g.sessions))
	for _, s := range g.sessions {
		if g.m.sessions[s] != nil {
			live = append(live, s)
		}
	}
	x := g.rnd.Intn(100)
	if len(live) == 0 || x < 3 {
		conn := index + 10_000
		auth := [][]zkproto.Id{nil, {digestID("alice", "a")}, {digestID("bob", "b")}, {g.super}, {{Scheme: "super"}}}[g.rnd.Intn(5)]
		return &Command{Header: Header{Conn: conn, Time: g.now, Auth: auth}, Op: &CreateSession{Timeout: 1000, Password: []byte{byte(index)}}}
	}
	var s int64
	if g.rnd.Intn(30) == 0 {
		s = g.sessions[g.rnd.Intn(len(g.sessions))] // maybe closed
	} else {
		s = live[g.rnd.Intn(len(live))]
	}
	hdr := Header{Session: s, Conn: g.conn[s], Time: g.now, Auth: g.auth[s]}
	switch g.rnd.Intn(40) {
	case 0:
		hdr.Seq = g.seq[s] + 2 // a lost predecessor
	case 1:
		hdr.Conn++ // moved
	default:
		hdr.Seq = g.seq[s] + 1
	}
	var op Op
	switch {
	case x < 5:
		op = &CloseSession{}
	case x < 7:
		hdr.Conn, hdr.Seq = 0, 0
		op = &CloseSession{Expired: true}
	case x < 35:
		op = g.createOp()
	case x < 50:
		op = &Delete{Path: g.path(), Version: g.version()}
	case x < 62:
		op = &SetData{Path: g.path(), Data: g.data(), Version: g.version()}
	case x < 68:
		op = &SetACL{Path: g.path(), ACL: genACLs[g.rnd.Intn(len(genACLs))], Version: g.version()}
	case x < 70:
		op = &Check{Path: g.path(), Version: -1}
	case x < 90:
		n := g.rnd.Intn(5)
		mo := &Multi{}
		for i := 0; i < n; i++ {
			mo.Ops = append(mo.Ops, g.multiOp())
		}
		op = mo
	case x < 95:
		hdr = Header{Time: g.now + int64(g.rnd.Intn(60))}
		op = &ReapTTL{Path: g.path()}
	default:
		hdr = Header{Time: g.now}
		op = &ReapContainer{Path: g.path()}
	}
	return &Command{Header: hdr, Op: op}
}

// observe updates the generator's view of sessions after a result.
func (g *gen) observe(cmd *Command, r *Result) {
	if _, ok := cmd.Op.(*CreateSession); ok {
		g.sessions = append(g.sessions, r.Session)
		g.conn[r.Session] = cmd.Conn
		g.auth[r.Session] = append([]zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}}, cmd.Auth...)
		return
	}
	if cmd.Session != 0 && r.Err != zkproto.ErrSessionMoved && r.Err != zkproto.ErrSessionExpired && cmd.Seq != 0 {
		g.seq[cmd.Session] = cmd.Seq
	}
}

func runModel(t *testing.T, seed int64, ops int, batches func(*rand.Rand) int, dir string) (*StateMachine, [][]sm.Entry) {
	superID := digestID("super", "s")
	rnd := rand.New(rand.NewSource(seed))
	g := &gen{rnd: rnd, m: newModel(superID.ID), conn: map[int64]uint64{}, seq: map[int64]uint64{}, auth: map[int64][]zkproto.Id{}, now: 1_000_000, super: superID}
	s := New(Config{Dir: dir, SuperDigest: superID.ID})
	if _, err := s.Open(nil); err != nil {
		t.Fatal(err)
	}
	var index uint64
	var all [][]sm.Entry
	stats := map[string]int{}
	for done := 0; done < ops; {
		n := batches(rnd)
		ents := make([]sm.Entry, 0, n)
		var cmds []*Command
		var want []*Result
		for i := 0; i < n && done < ops; i++ {
			index++
			cmd := g.next(index)
			// The command goes through its encoding, as in the Raft log.
			dc, err := DecodeCommand(cmd.Encode())
			if err != nil {
				t.Fatal(err)
			}
			var r *Result
			g.m, r = g.m.apply(int64(index), dc)
			g.observe(dc, r)
			cmds = append(cmds, dc)
			want = append(want, r)
			ents = append(ents, sm.Entry{Index: index, Cmd: cmd.Encode()})
			done++
		}
		var notified []*Result
		s.cfg.Notify = func(r []*Result) { notified = r }
		out, err := s.Update(ents)
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		all = append(all, ents)
		for i := range out {
			got, err := DecodeResult(out[i].Result.Data)
			if err != nil {
				t.Fatal(err)
			}
			got.Events = eventsWithoutACL(notified[i].Events)
			w := want[i]
			if len(w.Events) == 0 {
				w.Events = nil
			}
			if len(got.Events) == 0 {
				got.Events = nil
			}
			if w.Ops != nil && len(w.Ops) == 0 {
				w.Ops = nil
			}
			key := fmt.Sprintf("%T/%v", cmds[i].Op, w.Err)
			if w.OutOfOrder {
				key += "/outOfOrder"
			}
			for _, o := range w.Ops {
				if o.Err != 0 && o.Err != zkproto.ErrRuntimeInconsistency {
					key += "/" + o.Err.Name()
				}
			}
			if len(w.Ops) > 0 && w.Ops[0].Type != zkproto.OpError {
				key += "/ok"
			}
			stats[key]++
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("seed %d entry %d %T %+v:\n got %+v\nwant %+v", seed, ents[i].Index, cmds[i].Op, cmds[i].Op, fmtRes(got), fmtRes(w))
			}
		}
	}
	compareTree(t, s, g.m)
	if testing.Verbose() {
		keys := make([]string, 0, len(stats))
		for k := range stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("%6d %s", stats[k], k)
		}
		t.Logf("final: %d nodes, %d live sessions", len(g.m.nodes), len(g.m.sessions))
	}
	return s, all
}

func fmtRes(r *Result) string {
	s := fmt.Sprintf("{err %v oo %v zxid %d sess %d path %q events %v", r.Err, r.OutOfOrder, r.Zxid, r.Session, r.Path, eventsWithoutACL(r.Events))
	if r.Stat != nil {
		s += fmt.Sprintf(" stat %+v", *r.Stat)
	}
	for _, o := range r.Ops {
		s += fmt.Sprintf(" op{%d %v %q %v}", o.Type, o.Err, o.Path, o.Stat)
	}
	return s + "}"
}

func compareTree(t *testing.T, s *StateMachine, m *model) {
	t.Helper()
	v, err := s.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	n, err := v.AllChildrenNumber("/")
	if err != nil || n != int64(len(m.nodes)-1) {
		t.Fatalf("node count %d (%v), model %d", n, err, len(m.nodes)-1)
	}
	for p, mn := range m.nodes {
		got, err := v.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		if got.Stat != mn.stat() || !bytes.Equal(got.Data, mn.data) || (got.Data == nil) != (mn.data == nil) || !reflect.DeepEqual(got.ACL, mn.acl) {
			t.Fatalf("node %s:\n got %+v %q %v\nwant %+v %q %v", p, got.Stat, got.Data, got.ACL, mn.stat(), mn.data, mn.acl)
		}
		kids, _, err := v.Children(p)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for k := range mn.children {
			want = append(want, k)
		}
		sort.Strings(want)
		if len(kids) != len(want) || (len(want) > 0 && !reflect.DeepEqual(kids, want)) {
			t.Fatalf("children of %s: %v want %v", p, kids, want)
		}
	}
	count := 0
	err = v.Sessions(func(si *SessionInfo) error {
		count++
		ms := m.sessions[si.ID]
		if ms == nil || ms.conn != si.Conn || ms.seq != si.LastSeq {
			return fmt.Errorf("session %d: %+v vs model %+v", si.ID, si, ms)
		}
		eph, err := v.Ephemerals(si.ID)
		if err != nil {
			return err
		}
		var want []string
		for p, n := range m.nodes {
			if n.owner == si.ID {
				want = append(want, p)
			}
		}
		sort.Strings(want)
		if len(eph) != len(want) || (len(want) > 0 && !reflect.DeepEqual(eph, want)) {
			return fmt.Errorf("ephemerals of %d: %v want %v", si.ID, eph, want)
		}
		return nil
	})
	if err != nil || count != len(m.sessions) {
		t.Fatalf("sessions: %v (%d vs %d)", err, count, len(m.sessions))
	}
}

func TestModelRandomized(t *testing.T) {
	ops := 20_000
	if testing.Short() {
		ops = 3000
	}
	for _, seed := range []int64{1, 2} {
		s, _ := runModel(t, seed, ops/2, func(r *rand.Rand) int { return 1 + r.Intn(24) }, t.TempDir())
		s.Close()
	}
}

// eventsWithoutACL drops the ACLs events carry: the model tracks tree
// semantics; event ACLs are checked by the apply unit tests.
func eventsWithoutACL(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event{Type: e.Type, Path: e.Path, Zxid: e.Zxid}
	}
	return out
}
