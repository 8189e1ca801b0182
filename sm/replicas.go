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
}

// RegisterReplica records (or replaces) a replica's directory entry. Each
// node proposes its own when it starts and its addresses changed. Like a
// reconnect it is no ZooKeeper transaction and consumes no zxid.
type RegisterReplica struct {
	Replica ReplicaInfo
}

// ConfigChanged follows a membership change made by reconfig or the raft
// commands: like ZooKeeper's reconfig transaction it consumes a zxid, which
// becomes the configuration's version (/zookeeper/config's version=).
type ConfigChanged struct{}

var keyConfigZxid = []byte("mconfigzxid")

// ConfigZxid returns the zxid of the last ConfigChanged, 0 if none.
func (v *View) ConfigZxid() (int64, error) {
	b, err := readRaw(v.snap, keyConfigZxid)
	return decodeInt(b), err
}

func replicaKey(id uint64) []byte {
	k := make([]byte, 9)
	k[0] = spaceReplica
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

func encodeReplica(e *enc, r *ReplicaInfo) {
	e.uvar(r.ID)
	e.str(r.RaftAddr)
	e.str(r.ClientAddr)
	e.str(r.AdminAddr)
	e.boolean(r.Observer)
}

func decodeReplica(d *dec) ReplicaInfo {
	return ReplicaInfo{ID: d.uvar(), RaftAddr: d.str(), ClientAddr: d.str(), AdminAddr: d.str(), Observer: d.boolean()}
}

func (a *applier) registerReplica(o *RegisterReplica, res *Result) {
	a.zxidBase-- // no zxid, see setSessionOwner
	a.zxid--
	res.Zxid = a.zxid
	a.t.set(keyZxidBase, encodeInt(a.zxidBase))
	e := &enc{}
	encodeReplica(e, &o.Replica)
	a.t.set(replicaKey(o.Replica.ID), e.b)
	res.DirectoryChanged = true
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
