package sm

import (
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

const nodeRecVersion byte = 1

// nodeKind is how the node was created. It replaces ZooKeeper's overloaded
// ephemeralOwner markers: the stored owner is only meaningful for ephemerals,
// and clients see ephemeralOwner 0 for every other kind.
type nodeKind byte

const (
	kindPersistent nodeKind = 0
	kindEphemeral  nodeKind = 1
	kindContainer  nodeKind = 2
	kindTTLNode    nodeKind = 3
)

// nodeRec is a znode as stored. creates is ZooKeeper's stored cversion: the
// number of child creations ever made under the node (it drives the
// sequential suffix); the visible cversion is 2*creates - numChildren.
type nodeRec struct {
	kind        nodeKind
	owner       int64 // session, for kindEphemeral
	ttl         int64 // ms, for kindTTLNode
	czxid       int64
	mzxid       int64
	pzxid       int64
	ctime       int64
	mtime       int64
	version     int32
	creates     int32
	aversion    int32
	numChildren int32
	aclID       uint64
	data        []byte // nil = null data
	// omittedLen > 0 marks a copy without its data (nodeCache.lookupMeta,
	// for setData, which replaces the data): data is nil and was this
	// long. Such a copy is never written (setData gives it new data).
	omittedLen int
}

// dataLen is the length of the node's data, also of a copy without it.
func (n *nodeRec) dataLen() int {
	if n.omittedLen > 0 {
		return n.omittedLen
	}
	return len(n.data)
}

func (n *nodeRec) stat() zkproto.Stat {
	s := zkproto.Stat{
		Czxid:       n.czxid,
		Mzxid:       n.mzxid,
		Ctime:       n.ctime,
		Mtime:       n.mtime,
		Version:     n.version,
		Cversion:    2*n.creates - n.numChildren,
		Aversion:    n.aversion,
		DataLength:  int32(len(n.data)),
		NumChildren: n.numChildren,
		Pzxid:       n.pzxid,
	}
	if n.kind == kindEphemeral {
		s.EphemeralOwner = n.owner
	}
	return s
}

// encode appends the record; data goes last without a length so a node costs
// only a few varint bytes beyond its key and data.
func (n *nodeRec) encode() []byte { return n.appendTo(make([]byte, 0, 40+len(n.data))) }

// appendTo appends the encoded record to b.
func (n *nodeRec) appendTo(b []byte) []byte {
	e := &enc{b: b}
	e.u8(nodeRecVersion)
	e.u8(byte(n.kind))
	switch n.kind {
	case kindEphemeral:
		e.svar(n.owner)
	case kindTTLNode:
		e.svar(n.ttl)
	}
	e.svar(n.czxid)
	e.svar(n.mzxid - n.czxid) // small deltas keep the record short
	e.svar(n.pzxid - n.czxid)
	e.svar(n.ctime)
	e.svar(n.mtime - n.ctime)
	e.svar(int64(n.version))
	e.svar(int64(n.creates))
	e.svar(int64(n.aversion))
	e.svar(int64(n.numChildren))
	e.uvar(n.aclID)
	e.u8(boolByte(n.data != nil))
	e.raw(n.data)
	return e.b
}

func decodeNode(b []byte) (*nodeRec, error) {
	if len(b) == 0 || b[0] != nodeRecVersion {
		return nil, fmt.Errorf("node record: unknown version")
	}
	d := &dec{b: b[1:]}
	n := &nodeRec{kind: nodeKind(d.u8())}
	switch n.kind {
	case kindPersistent, kindContainer:
	case kindEphemeral:
		n.owner = d.svar()
	case kindTTLNode:
		n.ttl = d.svar()
	default:
		return nil, fmt.Errorf("node record: unknown kind %d", n.kind)
	}
	n.czxid = d.svar()
	n.mzxid = n.czxid + d.svar()
	n.pzxid = n.czxid + d.svar()
	n.ctime = d.svar()
	n.mtime = n.ctime + d.svar()
	n.version = d.i32()
	n.creates = d.i32()
	n.aversion = d.i32()
	n.numChildren = d.i32()
	n.aclID = d.uvar()
	hasData := d.boolean()
	if d.err != nil {
		return nil, fmt.Errorf("node record: %w", d.err)
	}
	if hasData {
		// The record's data is the tail of b, not a copy: every caller
		// passes a buffer of its own (readRaw's copy out of Pebble) or
		// drops the record before b goes (a scan), and a 1 MiB value was
		// copied twice on its way to a getData reply.
		n.data = d.b[:len(d.b):len(d.b)]
	}
	return n, nil
}

// Node is a znode as returned by the read API.
type Node struct {
	Stat zkproto.Stat
	Data []byte // nil = null data
	ACL  []zkproto.ACL
}
