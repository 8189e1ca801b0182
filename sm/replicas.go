package sm

import (
	"encoding/binary"
	"fmt"
)

// ReplicaInfo is one replica's entry in the replicated directory: the
// addresses other nodes need to render /zookeeper/config and to ask the
// replica for its progress. Raft membership itself stays dragonboat's; the
// directory only describes the replicas.
type ReplicaInfo struct {
	ID         uint64
	RaftAddr   string // host:port of the Raft transport (ZooKeeper's peer port)
	ClientAddr string // host:port clients connect to
	AdminAddr  string // host:port of the admin HTTP API, "" when disabled
	Observer   bool   // started as a non-voting replica
	// Spec is the replica's member spec as the reconfig that added it gave
	// it, normalised as ZooKeeper writes it in /zookeeper/config (the
	// right-hand side of server.N=: host:peerPort:electionPort:role;client),
	// "" for a replica no reconfig described. Raft has one peer port;
	// ZooKeeper keeps the election port and the client address it was
	// given, and so does the directory.
	Spec string
}

// RegisterReplica records (or replaces) a replica's directory entry. Each
// node proposes its own when it starts and its addresses changed; a
// reconfig proposes the entry of a member it adds, with its Spec. An entry
// without a Spec keeps the Spec stored: a replica registering its own
// addresses does not undo what the reconfig said. Like a reconnect it is
// no ZooKeeper transaction and consumes no zxid.
type RegisterReplica struct {
	Replica ReplicaInfo
}

// ConfigChanged follows a membership change made by reconfig or the raft
// commands: like ZooKeeper's reconfig transaction it consumes a zxid, which
// becomes the configuration's version (/zookeeper/config's version=).
type ConfigChanged struct {
	// Order lists the members in the order /zookeeper/config names them
	// after a reconfig: ZooKeeper writes its leader's HashMap order, not
	// id order (servers 1, 2, 3 joined by 10 are 1, 2, 10, 3). Empty keeps
	// the order stored (a raft command's change).
	Order []uint64
}

var (
	keyConfigZxid  = []byte("mconfigzxid")
	keyConfigOrder = []byte("mconfigorder")
)

// ConfigZxid returns the zxid of the last ConfigChanged, 0 if none.
func (v *View) ConfigZxid() (int64, error) {
	b, err := readRaw(v.snap, keyConfigZxid)
	return decodeInt(b), err
}

// ConfigOrder returns the Order of the last ConfigChanged that had one
// (nil if none).
func (v *View) ConfigOrder() ([]uint64, error) {
	b, err := readRaw(v.snap, keyConfigOrder)
	if err != nil || b == nil {
		return nil, err
	}
	d := &dec{b: b}
	order := decodeOrder(d)
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("config order: %w", err)
	}
	return order, nil
}

// encodeOrder writes a ConfigChanged's Order, nothing when it is empty: a
// ConfigChanged without one encodes as before Order existed. It is the
// last thing of its command, so decodeOrder finds it by what is left.
func encodeOrder(e *enc, order []uint64) {
	if len(order) == 0 {
		return
	}
	e.uvar(uint64(len(order)))
	for _, id := range order {
		e.uvar(id)
	}
}

func decodeOrder(d *dec) []uint64 {
	if d.err != nil || len(d.b) == 0 {
		return nil
	}
	n := d.count()
	order := make([]uint64, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		order = append(order, d.uvar())
	}
	return order
}

func (a *applier) configChanged(o *ConfigChanged, res *Result) {
	a.t.set(keyConfigZxid, encodeInt(a.zxid))
	res.DirectoryChanged = true // nodes re-read the membership at once
	if len(o.Order) > 0 {
		e := &enc{}
		encodeOrder(e, o.Order)
		a.t.set(keyConfigOrder, e.b)
	}
}

func replicaKey(id uint64) []byte {
	k := make([]byte, 9)
	k[0] = spaceReplica
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

// encodeReplica writes an entry; a Spec is appended only when set, so an
// entry without one encodes as before it existed (the same Raft entries,
// directory values and content hash). The entry is always the last thing
// of its buffer (a RegisterReplica command, a directory value), so
// decodeReplica finds the Spec by what is left.
func encodeReplica(e *enc, r *ReplicaInfo) {
	e.uvar(r.ID)
	e.str(r.RaftAddr)
	e.str(r.ClientAddr)
	e.str(r.AdminAddr)
	e.boolean(r.Observer)
	if r.Spec != "" {
		e.str(r.Spec)
	}
}

func decodeReplica(d *dec) ReplicaInfo {
	r := ReplicaInfo{ID: d.uvar(), RaftAddr: d.str(), ClientAddr: d.str(), AdminAddr: d.str(), Observer: d.boolean()}
	if d.err == nil && len(d.b) > 0 {
		r.Spec = d.str()
	}
	return r
}

func (a *applier) registerReplica(o *RegisterReplica, res *Result) error {
	r := o.Replica
	if r.Spec == "" {
		old, err := a.t.get(replicaKey(r.ID))
		if err != nil {
			return err
		}
		if old != nil {
			d := &dec{b: old}
			prev := decodeReplica(d)
			if err := d.done(); err != nil {
				return fmt.Errorf("replica %d entry: %w", r.ID, err)
			}
			r.Spec = prev.Spec
		}
	}
	a.zxidBase-- // no zxid, see setSessionOwner
	a.zxid--
	res.Zxid = a.zxid
	a.t.set(keyZxidBase, encodeInt(a.zxidBase))
	e := &enc{}
	encodeReplica(e, &r)
	a.t.set(replicaKey(r.ID), e.b)
	res.DirectoryChanged = true
	return nil
}

// Replicas returns the directory in replica ID order.
func (v *View) Replicas() ([]ReplicaInfo, error) {
	var out []ReplicaInfo
	err := scanKV(v.snap, []byte{spaceReplica}, []byte{spaceReplica + 1}, func(k, val []byte) error {
		d := &dec{b: val}
		r := decodeReplica(d)
		if err := d.done(); err != nil {
			return fmt.Errorf("replica %d entry: %w", binary.BigEndian.Uint64(k[1:]), err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
