package zkproto

import "strconv"

// Stat is a znode's metadata as clients see it (68 bytes on the wire).
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last setData
	Ctime          int64 // create time, ms since the epoch
	Mtime          int64 // last setData time, ms since the epoch
	Version        int32 // data version
	Cversion       int32 // visible child version: 2*creates - numChildren
	Aversion       int32 // ACL version
	EphemeralOwner int64 // owning session of an ephemeral, else 0
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last child create or delete
}

// StatSize is the encoded size of a Stat.
const StatSize = 68

// Encode writes the stat in jute field order.
func (s *Stat) Encode(e *Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// Decode reads the stat in jute field order.
func (s *Stat) Decode(d *Decoder) error {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
	return d.Err()
}

// Id is an authentication identity: a scheme and an id within it.
type Id struct {
	Scheme string
	ID     string
}

// Encode writes the id.
func (i *Id) Encode(e *Encoder) {
	e.String(i.Scheme)
	e.String(i.ID)
}

// Decode reads the id.
func (i *Id) Decode(d *Decoder) error {
	i.Scheme = d.commonString()
	i.ID = d.commonString()
	return d.Err()
}

// ACL grants Perms to an identity.
type ACL struct {
	Perms int32
	ID    Id
}

// Encode writes the ACL entry.
func (a *ACL) Encode(e *Encoder) {
	e.Int(a.Perms)
	a.ID.Encode(e)
}

// Decode reads the ACL entry.
func (a *ACL) Decode(d *Decoder) error {
	a.Perms = d.Int()
	return a.ID.Decode(d)
}

// encodeACLs writes a vector<ACL>; nil is null.
func encodeACLs(e *Encoder, acl []ACL) {
	if acl == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acl)))
	for i := range acl {
		acl[i].Encode(e)
	}
}

// decodeACLs reads a vector<ACL>; null is nil.
func decodeACLs(d *Decoder) []ACL {
	n := d.VectorLen(12) // perms + two empty strings
	if d.Err() != nil || n < 0 {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].Decode(d)
	}
	if d.Err() != nil {
		return nil
	}
	return out
}

// Permission bits (ZooDefs.Perms).
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// PermString spells permission bits as ZooKeeper's tools do
// (ZKUtil.getPermString): "cdrwa" order, absent bits left out.
func PermString(p int32) string {
	var b []byte
	for _, x := range []struct {
		bit int32
		c   byte
	}{{PermCreate, 'c'}, {PermDelete, 'd'}, {PermRead, 'r'}, {PermWrite, 'w'}, {PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b = append(b, x.c)
		}
	}
	return string(b)
}

// OpenACLUnsafe returns [31 world:anyone] (ZooDefs.Ids.OPEN_ACL_UNSAFE).
func OpenACLUnsafe() []ACL {
	return []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}
}

// CreatorAllACL returns [31 auth:] (ZooDefs.Ids.CREATOR_ALL_ACL).
func CreatorAllACL() []ACL {
	return []ACL{{Perms: PermAll, ID: Id{Scheme: "auth", ID: ""}}}
}

// ReadACLUnsafe returns [1 world:anyone] (ZooDefs.Ids.READ_ACL_UNSAFE).
func ReadACLUnsafe() []ACL {
	return []ACL{{Perms: PermRead, ID: Id{Scheme: "world", ID: "anyone"}}}
}

// EventType is the type of a watch event (Watcher.Event.EventType).
type EventType int32

// Event types. Only 1–4 are sent by servers; the rest are client-local.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// String returns the Java enum name.
func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// KeeperState is a session state (Watcher.Event.KeeperState).
type KeeperState int32

// Keeper states. Servers only ever put StateSyncConnected into node events.
const (
	StateUnknown           KeeperState = -1
	StateDisconnected      KeeperState = 0
	StateNoSyncConnected   KeeperState = 1
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSaslAuthenticated KeeperState = 6
	StateClosed            KeeperState = 7
	StateExpired           KeeperState = -112
)

// WatcherType selects watches in checkWatches and removeWatches.
type WatcherType int32

// Watcher types; Persistent and PersistentRecursive exist from 3.9 on.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatchMode is the mode of an addWatch request.
type AddWatchMode int32

// AddWatch modes (ZooDefs.AddWatchModes); any other value is MarshallingError.
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// Valid reports whether m is a mode ZooKeeper accepts.
func (m AddWatchMode) Valid() bool {
	return m == AddWatchPersistent || m == AddWatchPersistentRecursive
}
