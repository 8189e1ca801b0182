package zkdata

import (
	"io"
	"sort"
	"strconv"
	"strings"
)

// OpenACLUnsafe is what ACL id -1 stands for in a snapshot.
var OpenACLUnsafe = []ACL{{Perms: 31, Scheme: "world", ID: "anyone"}}

// TreeNode is one znode of a replayed Tree. Nodes with equal ACLs share
// one ACL slice (read-only). Only the number of children is kept: a map of
// names per node had been most of a replay's memory.
type TreeNode struct {
	Data        []byte
	ACL         []ACL
	Stat        StatPersisted
	NumChildren int32
}

// Tree is a whole ZooKeeper data tree in memory, built from a snapshot and
// the transactions after it exactly as ZooKeeper's DataTree replays them
// (errors such as NoNode on a fuzzy snapshot are ignored as ZooKeeper
// ignores them). It is meant for verification and small data sets; convert
// streams instead.
type Tree struct {
	Nodes    map[string]*TreeNode
	Sessions map[int64]int32 // session id → timeout (ms)
	Zxid     int64           // last zxid applied
	DBID     int64           // the snapshot's (ZooKeeper writes -1 in snapshots, 0 in logs, and never compares them)
	// LastDigest is the tree digest the last replayed txn carried (nil
	// when it carried none); Digest() must equal it after the replay.
	LastDigest *TxnDigest
	// acls interns the nodes' ACLs by their text (every create txn carries
	// its own copy).
	acls   map[string][]ACL
	aclKey []byte
}

// intern returns the shared slice equal to acl.
func (t *Tree) intern(acl []ACL) []ACL {
	if len(acl) == 0 {
		return acl
	}
	k := t.aclKey[:0]
	for _, a := range acl {
		k = strconv.AppendInt(k, int64(a.Perms), 10)
		k = append(append(append(append(append(k, 0), a.Scheme...), 0), a.ID...), 0)
	}
	t.aclKey = k
	if shared, ok := t.acls[string(k)]; ok {
		return shared
	}
	if t.acls == nil {
		t.acls = map[string][]ACL{}
	}
	t.acls[string(k)] = acl
	return acl
}

// LoadTree reads the newest snapshot of d and replays all later
// transactions. It returns the tree and the log reader's torn tails.
func LoadTree(d *DataDir) (*Tree, []Tail, error) {
	if s, ok := d.LatestSnapshot(); ok {
		return LoadTreeFrom(d, &s)
	}
	return LoadTreeFrom(d, nil)
}

// LoadTreeFrom reads snap (nil: start from an empty tree and all logs) and
// replays all later transactions of d.
func LoadTreeFrom(d *DataDir, snap *SnapFile) (*Tree, []Tail, error) {
	t := &Tree{Nodes: map[string]*TreeNode{}, Sessions: map[int64]int32{}}
	from := int64(1)
	if s := snap; s != nil {
		if err := t.loadSnapshot(s.Path); err != nil {
			return nil, nil, err
		}
		from = s.Zxid + 1
	} else {
		t.initEmpty()
	}
	r := d.NewLogReader(from)
	defer r.Close()
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		t.Apply(e.Txn)
	}
	return t, r.Tails(), nil
}

func (t *Tree) loadSnapshot(path string) error {
	acls := map[int64][]ACL{}
	info, err := ReadSnapshot(path, SnapshotVisitor{
		Session: func(id int64, to int32) error { t.Sessions[id] = to; return nil },
		ACL:     func(id int64, a []ACL) error { acls[id] = a; return nil },
		Node: func(n Node) error {
			a := acls[n.ACL]
			if n.ACL == -1 {
				a = OpenACLUnsafe
			}
			t.Nodes[n.Path] = &TreeNode{Data: n.Data, ACL: a, Stat: n.Stat}
			if n.Path != "/" {
				p, _ := split(n.Path)
				t.Nodes[p].NumChildren++
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	t.Zxid, t.DBID = info.Zxid, info.Header.DBID
	return nil
}

func split(path string) (parent, child string) {
	i := strings.LastIndexByte(path, '/')
	parent = path[:i]
	if parent == "" {
		parent = "/"
	}
	return parent, path[i+1:]
}

// Stat is the stat a client sees (zookeeper.jute's Stat).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// ClientStat converts a stored stat to what a client sees, as
// DataNode.copyStat does: the stored cversion counts creates, the client's
// counts creates and deletes (cversion*2 - numChildren), and containers
// and TTL nodes show ephemeralOwner 0.
func ClientStat(sp StatPersisted, dataLength, numChildren int) Stat {
	owner := sp.EphemeralOwner
	if k, _ := EphemeralKind(owner); k == "container" || k == "ttl" {
		owner = 0
	}
	return Stat{
		Czxid: sp.Czxid, Mzxid: sp.Mzxid, Ctime: sp.Ctime, Mtime: sp.Mtime,
		Version: sp.Version, Cversion: sp.Cversion*2 - int32(numChildren), Aversion: sp.Aversion,
		EphemeralOwner: owner, DataLength: int32(dataLength), NumChildren: int32(numChildren), Pzxid: sp.Pzxid,
	}
}

// Stat returns the client-visible stat of path.
func (t *Tree) Stat(path string) (Stat, bool) {
	n := t.Nodes[path]
	if n == nil {
		return Stat{}, false
	}
	return ClientStat(n.Stat, len(n.Data), int(n.NumChildren)), true
}

// Paths returns every path, sorted.
func (t *Tree) Paths() []string {
	out := make([]string, 0, len(t.Nodes))
	for p := range t.Nodes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Apply replays one transaction as DataTree.processTxn does.
func (t *Tree) Apply(x Txn) {
	t.apply(x.Header, x.Header.Type, x.Record)
	if x.Header.Zxid > t.Zxid {
		t.Zxid = x.Header.Zxid
	}
	t.LastDigest = x.Digest
}

func (t *Tree) apply(h TxnHeader, typ int32, rec Record) {
	switch r := rec.(type) {
	case *CreateTxn:
		owner := int64(0)
		if r.Ephemeral {
			owner = h.ClientID
		}
		if !t.create(r.Path, r.Data, r.ACL, owner, r.ParentCVersion, h) && typ == OpCreate {
			// DataTree: NODEEXISTS on a plain create (fuzzy snapshot)
			// still moves the parent's cversion and pzxid on.
			p, _ := split(r.Path)
			if n := t.Nodes[p]; n != nil {
				cv := r.ParentCVersion
				if cv == -1 {
					cv = n.Stat.Cversion + 1
				}
				if cv > n.Stat.Cversion {
					n.Stat.Cversion, n.Stat.Pzxid = cv, h.Zxid
				}
			}
		}
	case *CreateTTLTxn:
		t.create(r.Path, r.Data, r.ACL, TTLEphemeralOwner(r.TTL), r.ParentCVersion, h)
	case *CreateContainerTxn:
		t.create(r.Path, r.Data, r.ACL, ContainerEphemeralOwner, r.ParentCVersion, h)
	case *DeleteTxn:
		t.delete(r.Path, h.Zxid)
	case *SetDataTxn:
		if n := t.Nodes[r.Path]; n != nil {
			n.Data = r.Data
			n.Stat.Version, n.Stat.Mzxid, n.Stat.Mtime = r.Version, h.Zxid, h.Time
		}
	case *SetACLTxn:
		if n := t.Nodes[r.Path]; n != nil {
			n.ACL = t.intern(r.ACL)
			n.Stat.Aversion = r.Version
		}
	case *CreateSessionTxn:
		t.Sessions[h.ClientID] = r.TimeOut
	case *CloseSessionTxn:
		delete(t.Sessions, h.ClientID)
		for _, p := range r.Paths2Delete {
			t.delete(p, h.Zxid)
		}
		var rest []string
		for p, n := range t.Nodes {
			if n.Stat.EphemeralOwner == h.ClientID {
				rest = append(rest, p)
			}
		}
		sort.Strings(rest)
		for _, p := range rest {
			t.delete(p, h.Zxid)
		}
	case *MultiTxn:
		if r.Failed() {
			return
		}
		for _, s := range r.Txns {
			t.apply(h, s.Type, s.Record)
		}
	}
}

func (t *Tree) create(path string, data []byte, acl []ACL, owner int64, parentCVersion int32, h TxnHeader) bool {
	if path == "/" || !strings.HasPrefix(path, "/") {
		return false
	}
	p, _ := split(path)
	parent := t.Nodes[p]
	if parent == nil {
		return false
	}
	acl = t.intern(acl)
	if n := t.Nodes[path]; n != nil {
		n.ACL = acl
		return false
	}
	if parentCVersion == -1 {
		parentCVersion = parent.Stat.Cversion + 1
	}
	if parentCVersion > parent.Stat.Cversion {
		parent.Stat.Cversion, parent.Stat.Pzxid = parentCVersion, h.Zxid
	}
	parent.NumChildren++
	t.Nodes[path] = &TreeNode{Data: data, ACL: acl, Stat: StatPersisted{
		Czxid: h.Zxid, Mzxid: h.Zxid, Pzxid: h.Zxid, Ctime: h.Time, Mtime: h.Time, EphemeralOwner: owner,
	}}
	return true
}

func (t *Tree) delete(path string, zxid int64) {
	n := t.Nodes[path]
	if n == nil || path == "/" {
		return
	}
	p, _ := split(path)
	delete(t.Nodes, path)
	if parent := t.Nodes[p]; parent != nil {
		parent.NumChildren--
		if zxid > parent.Stat.Pzxid {
			parent.Stat.Pzxid = zxid
		}
	}
}

// initEmpty builds the tree a new ZooKeeper DataTree starts with: the root,
// /zookeeper, /zookeeper/quota and /zookeeper/config (READ_ACL_UNSAFE,
// aversion -1), none of them logged.
func (t *Tree) initEmpty() {
	node := func(acl []ACL, kids ...string) *TreeNode {
		return &TreeNode{ACL: acl, NumChildren: int32(len(kids))}
	}
	t.Nodes["/"] = node(OpenACLUnsafe, "zookeeper")
	t.Nodes["/zookeeper"] = node(OpenACLUnsafe, "quota", "config")
	t.Nodes["/zookeeper/quota"] = node(OpenACLUnsafe)
	cfg := node([]ACL{{Perms: 1, Scheme: "world", ID: "anyone"}})
	cfg.Stat.Aversion = -1
	t.Nodes["/zookeeper/config"] = cfg
}
