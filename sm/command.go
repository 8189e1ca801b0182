package sm

import (
	"bytes"
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// CommandVersion is the first byte of every encoded command. Apply refuses
// any other value with a clear error (see ErrUnknownCommandVersion), so a
// replica running old code never silently skips a newer command.
const CommandVersion byte = 1

// Header is carried by every command: who proposed it and when.
type Header struct {
	// Session is the ZooKeeper session the request belongs to. 0 means an
	// internal proposal (leader reaper, migration import): no session,
	// ordering or ownership checks, and no ephemerals.
	Session int64
	// Conn and Seq give the per-connection write order. Apply accepts a
	// session write only if Conn is the session's current connection and Seq
	// is exactly one more than the last applied Seq (primary order).
	Conn uint64
	Seq  uint64
	// Time is the proposer's wall clock in ms since the epoch. It becomes
	// ctime/mtime and drives TTL checks; apply never reads a clock.
	Time int64
	// Auth holds the connection's identities (ip:..., digest:user:hash,
	// super:, x509:...). ACL checks and `auth` expansion use exactly these.
	Auth []zkproto.Id
}

// Op is one of the command bodies below. The set is closed: only the types in
// this package implement it.
type Op interface{ kind() opKind }

// Command is what the server proposes: a header plus one operation.
type Command struct {
	Header
	Op Op
}

type opKind byte

// Wire values of the command kinds. Never renumber: they are in the Raft log.
const (
	kindCreateSession   opKind = 1
	kindCloseSession    opKind = 2
	kindSetSessionOwner opKind = 3
	kindCreate          opKind = 4
	kindDelete          opKind = 5
	kindSetData         opKind = 6
	kindSetACL          opKind = 7
	kindCheck           opKind = 8
	kindMulti           opKind = 9
	kindReapContainer   opKind = 10
	kindReapTTL         opKind = 11
	kindSetZxidBase     opKind = 12
	kindRejected        opKind = 13
	kindTouchSessions   opKind = 14
	kindRegisterReplica opKind = 15
	kindConfigChanged   opKind = 16
	kindSetCutover      opKind = 17
	kindIncrement       opKind = 18
	kindImportNodes     opKind = 19
	kindImportSessions  opKind = 20
	kindImportUpdate    opKind = 21
	kindReapTTLVersion  opKind = 22
	// The tenant registry's kinds leave room for the kinds before them.
	kindPutTenant    opKind = 40
	kindDeleteTenant opKind = 41
	kindWithinLimits opKind = 42
)

// CreateSession opens a session. Its ID is the zxid of the entry (unique,
// never 0). Timeout is the negotiated timeout in ms.
type CreateSession struct {
	Timeout  int32
	Password []byte
	Owner    uint64 // replica ID of the node holding the connection
}

// CloseSession closes Header.Session and deletes its ephemerals in the same
// transaction. Expired marks a leader-decided expiry: the connection and
// sequence checks are skipped for it.
type CloseSession struct {
	Expired bool
}

// SetSessionOwner moves a session to a new connection (Header.Conn) on node
// Owner after a reconnect. Password must match the stored one. The sequence
// restarts: the next write must carry Seq 1.
type SetSessionOwner struct {
	Owner    uint64
	Password []byte
}

// Create is create (1), create2 (15), createContainer (19) or createTTL (21).
// OpCode decides container/TTL semantics exactly as ZooKeeper does at apply
// time (op 19 always makes a container; op 1/15 with flag 4 makes a plain
// persistent node). Data nil means null data. TTL is only read for op 21.
type Create struct {
	OpCode zkproto.OpCode
	Path   string
	Data   []byte
	ACL    []zkproto.ACL
	Flags  int32
	TTL    int64
}

// Delete is delete (2). Version -1 matches any version.
type Delete struct {
	Path    string
	Version int32
}

// SetData is setData (5). Version -1 matches any version.
type SetData struct {
	Path    string
	Data    []byte
	Version int32
}

// SetACL is setACL (7). Version is compared with the node's aversion.
type SetACL struct {
	Path    string
	ACL     []zkproto.ACL
	Version int32
}

// Check is check (13). Outside a Multi it fails with Unimplemented.
type Check struct {
	Path    string
	Version int32
}

// Multi is multi (14): *Create, *Delete, *SetData and *Check ops applied all
// or nothing under one zxid.
type Multi struct {
	Ops []Op
}

// ReapContainer is the leader's guarded delete of an empty container
// (deleteContainer, 20). Apply re-checks that the node is a container with no
// children that has had a child (stored cversion > 0), or, when
// NeverUsedMs > 0, whose mtime is more than NeverUsedMs before Header.Time.
type ReapContainer struct {
	Path        string
	NeverUsedMs int64
}

// ReapTTL is the leader's guarded delete of an expired TTL node: apply
// re-checks that it is a TTL node without children and, when Mzxid is 0
// (entries written before Mzxid existed), that Header.Time - mtime is more
// than its TTL. With Mzxid set, the leader measured the TTL itself on its
// monotonic clock (wall clocks of the stamping node and the leader may
// disagree or jump) and apply checks that the node is still at Mzxid: not
// modified since the leader saw it.
type ReapTTL struct {
	Path  string
	Mzxid int64
}

// Rejected is a session write the server refused before apply (ZooKeeper's
// ErrorTxn: a mixed read/write multi, reconfig without reconfigEnabled, a
// client's deleteContainer). It changes nothing, answers Code and, like
// every write, consumes its zxid and its sequence number.
type Rejected struct {
	Code zkproto.ErrCode
}

// TouchSessions reports client activity on the proposing node's
// connections (pings and requests) so that every replica's session tracker,
// and so the leader's, can extend those sessions' deadlines. It changes no
// state and, like a reconnect, consumes no zxid.
type TouchSessions struct {
	IDs []int64
}

// SetZxidBase raises zxidBase (migration import). From this entry on, zxid =
// Base + entry index. Lowering it is refused with BadArguments.
type SetZxidBase struct {
	Base int64
}

func (*CreateSession) kind() opKind   { return kindCreateSession }
func (*CloseSession) kind() opKind    { return kindCloseSession }
func (*SetSessionOwner) kind() opKind { return kindSetSessionOwner }
func (*Create) kind() opKind          { return kindCreate }
func (*Delete) kind() opKind          { return kindDelete }
func (*SetData) kind() opKind         { return kindSetData }
func (*SetACL) kind() opKind          { return kindSetACL }
func (*Check) kind() opKind           { return kindCheck }
func (*Multi) kind() opKind           { return kindMulti }
func (*ReapContainer) kind() opKind   { return kindReapContainer }
func (o *ReapTTL) kind() opKind {
	if o.Mzxid != 0 {
		return kindReapTTLVersion
	}
	return kindReapTTL
}
func (*SetZxidBase) kind() opKind     { return kindSetZxidBase }
func (*Rejected) kind() opKind        { return kindRejected }
func (*TouchSessions) kind() opKind   { return kindTouchSessions }
func (*RegisterReplica) kind() opKind { return kindRegisterReplica }
func (*ConfigChanged) kind() opKind   { return kindConfigChanged }
func (*SetCutover) kind() opKind      { return kindSetCutover }
func (*Increment) kind() opKind       { return kindIncrement }
func (*ImportNodes) kind() opKind     { return kindImportNodes }
func (*ImportSessions) kind() opKind  { return kindImportSessions }
func (*ImportUpdate) kind() opKind    { return kindImportUpdate }
func (*PutTenant) kind() opKind       { return kindPutTenant }
func (*WithinLimits) kind() opKind    { return kindWithinLimits }
func (*DeleteTenant) kind() opKind    { return kindDeleteTenant }

// Encode returns the versioned binary form of c.
func (c *Command) Encode() []byte {
	e := &enc{b: make([]byte, 0, 64+sizeHint(c.Op))}
	e.u8(CommandVersion)
	e.svar(c.Session)
	e.uvar(c.Conn)
	e.uvar(c.Seq)
	e.svar(c.Time)
	encodeIDs(e, c.Auth)
	encodeOp(e, c.Op, true)
	return e.b
}

// sizeHint estimates the encoded size of a multi's ops (a few bytes
// over), so that its command is encoded into one buffer instead of one
// grown a dozen times; other ops fit the first 64 bytes or grow once.
func sizeHint(op Op) int {
	m, ok := op.(*Multi)
	if !ok {
		return 0
	}
	n := 0
	for _, sub := range m.Ops {
		switch o := sub.(type) {
		case *SetData:
			n += 16 + len(o.Path) + len(o.Data)
		case *Create:
			n += 32 + len(o.Path) + len(o.Data) + 16*len(o.ACL)
		case *Delete:
			n += 16 + len(o.Path)
		case *Check:
			n += 16 + len(o.Path)
		}
	}
	return n
}

func encodeIDs(e *enc, ids []zkproto.Id) {
	e.uvar(uint64(len(ids)))
	for _, id := range ids {
		e.str(id.Scheme)
		e.str(id.ID)
	}
}

func encodeACL(e *enc, acl []zkproto.ACL) {
	e.uvar(uint64(len(acl)))
	for _, a := range acl {
		e.svar(int64(a.Perms))
		e.str(a.ID.Scheme)
		e.str(a.ID.ID)
	}
}

func encodeOp(e *enc, op Op, top bool) {
	if op == nil {
		panic("sm: Command.Op is nil")
	}
	e.u8(byte(op.kind()))
	switch o := op.(type) {
	case *CreateSession:
		e.svar(int64(o.Timeout))
		e.bytesOrNil(o.Password)
		e.uvar(o.Owner)
	case *CloseSession:
		e.boolean(o.Expired)
	case *SetSessionOwner:
		e.uvar(o.Owner)
		e.bytesOrNil(o.Password)
	case *Create:
		e.svar(int64(o.OpCode))
		e.str(o.Path)
		e.bytesOrNil(o.Data)
		encodeACL(e, o.ACL)
		e.svar(int64(o.Flags))
		e.svar(o.TTL)
	case *Delete:
		e.str(o.Path)
		e.svar(int64(o.Version))
	case *SetData:
		e.str(o.Path)
		e.bytesOrNil(o.Data)
		e.svar(int64(o.Version))
	case *SetACL:
		e.str(o.Path)
		encodeACL(e, o.ACL)
		e.svar(int64(o.Version))
	case *Check:
		e.str(o.Path)
		e.svar(int64(o.Version))
	case *Multi:
		if !top {
			panic("sm: nested Multi")
		}
		e.uvar(uint64(len(o.Ops)))
		for _, sub := range o.Ops {
			switch sub.(type) {
			case *Create, *Delete, *SetData, *Check:
			default:
				panic(fmt.Sprintf("sm: %T is not allowed inside Multi", sub))
			}
			encodeOp(e, sub, false)
		}
	case *ReapContainer:
		e.str(o.Path)
		e.svar(o.NeverUsedMs)
	case *ReapTTL:
		e.str(o.Path)
		if o.Mzxid != 0 {
			e.svar(o.Mzxid)
		}
	case *SetZxidBase:
		e.svar(o.Base)
	case *Rejected:
		e.svar(int64(o.Code))
	case *TouchSessions:
		e.uvar(uint64(len(o.IDs)))
		for _, id := range o.IDs {
			e.svar(id)
		}
	case *RegisterReplica:
		encodeReplica(e, &o.Replica)
	case *ConfigChanged:
		encodeOrder(e, o.Order)
	case *SetCutover:
		e.str(o.Path)
		e.u8(byte(o.Mode))
	case *Increment:
		e.str(o.Path)
		e.svar(o.Delta)
	case *ImportNodes:
		e.boolean(o.Merge)
		encodeImported(e, o.Nodes)
	case *ImportUpdate:
		e.uvar(uint64(len(o.Deletes)))
		for _, p := range o.Deletes {
			e.str(p)
		}
		encodeImported(e, o.Nodes)
	case *ImportSessions:
		e.uvar(uint64(len(o.Sessions)))
		for _, s := range o.Sessions {
			e.svar(s.ID)
			e.svar(int64(s.Timeout))
			e.bytesOrNil(s.Password)
		}
	case *PutTenant:
		e.boolean(o.Create)
		encodeTenant(e, &o.Tenant)
	case *DeleteTenant:
		e.str(o.Name)
	case *WithinLimits:
		if !top {
			panic("sm: WithinLimits inside a Multi")
		}
		e.svar(o.MaxZnodes)
		e.svar(o.MaxBytes)
		if !limitable(o.Op) {
			panic(fmt.Sprintf("sm: %T is not limited by WithinLimits", o.Op))
		}
		encodeOp(e, o.Op, true)
	default:
		panic(fmt.Sprintf("sm: unknown op type %T", op))
	}
}

// ErrUnknownCommandVersion is wrapped by DecodeCommand when the version byte
// is not CommandVersion.
var ErrUnknownCommandVersion = fmt.Errorf("sm: unknown command version")

// DecodeCommand parses an encoded command. It fails on an unknown version,
// an unknown kind, a Multi containing a non-multi op, truncation or trailing
// bytes.
func DecodeCommand(b []byte) (*Command, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("sm: decode command: empty")
	}
	if b[0] != CommandVersion {
		return nil, fmt.Errorf("%w %d (this build understands %d)", ErrUnknownCommandVersion, b[0], CommandVersion)
	}
	d := &dec{b: b[1:]}
	c := &Command{}
	c.Session = d.svar()
	c.Conn = d.uvar()
	c.Seq = d.uvar()
	c.Time = d.svar()
	c.Auth = decodeIDs(d)
	c.Op = decodeOp(d, true)
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("sm: decode command: %w", err)
	}
	return c, nil
}

// CommandOrigin reads the connection id and sequence number from an
// encoded command's header without decoding the rest; ok is false if b is
// not a command of this version.
func CommandOrigin(b []byte) (conn, seq uint64, ok bool) {
	if len(b) == 0 || b[0] != CommandVersion {
		return 0, 0, false
	}
	d := &dec{b: b[1:]}
	d.svar()
	conn = d.uvar()
	seq = d.uvar()
	return conn, seq, d.err == nil
}

func decodeIDs(d *dec) []zkproto.Id {
	n := d.count()
	if n == 0 {
		return nil
	}
	ids := make([]zkproto.Id, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		ids = append(ids, zkproto.Id{Scheme: d.str(), ID: d.str()})
	}
	return ids
}

func decodeACL(d *dec) []zkproto.ACL {
	n := d.count()
	acl := make([]zkproto.ACL, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		perms := d.i32()
		acl = append(acl, zkproto.ACL{Perms: perms, ID: zkproto.Id{Scheme: d.str(), ID: d.str()}})
	}
	return acl
}

func decodeOp(d *dec, top bool) Op {
	k := opKind(d.u8())
	if d.err != nil {
		return nil
	}
	switch k {
	case kindCreateSession:
		return &CreateSession{Timeout: d.i32(), Password: d.bytesOrNil(), Owner: d.uvar()}
	case kindCloseSession:
		return &CloseSession{Expired: d.boolean()}
	case kindSetSessionOwner:
		return &SetSessionOwner{Owner: d.uvar(), Password: d.bytesOrNil()}
	case kindCreate:
		o := &Create{OpCode: zkproto.OpCode(d.i32()), Path: d.str(), Data: d.bytesOrNil()}
		o.ACL = decodeACL(d)
		o.Flags = d.i32()
		o.TTL = d.svar()
		return o
	case kindDelete:
		return &Delete{Path: d.str(), Version: d.i32()}
	case kindSetData:
		return &SetData{Path: d.str(), Data: d.bytesOrNil(), Version: d.i32()}
	case kindSetACL:
		o := &SetACL{Path: d.str()}
		o.ACL = decodeACL(d)
		o.Version = d.i32()
		return o
	case kindCheck:
		return &Check{Path: d.str(), Version: d.i32()}
	case kindMulti:
		if !top {
			d.fail(fmt.Errorf("nested multi"))
			return nil
		}
		n := d.count()
		m := &Multi{Ops: make([]Op, 0, n)}
		var sets []SetData
		for i := 0; i < n && d.err == nil; i++ {
			if len(d.b) > 0 && opKind(d.b[0]) == kindSetData {
				// A multi's setData ops share one slice (its capacity is
				// never exceeded, so none moves): one allocation instead
				// of one per op, the bench's multi of 1,000 setData.
				d.u8()
				if sets == nil {
					sets = make([]SetData, 0, n-i)
				}
				sets = append(sets, SetData{Path: d.str(), Data: d.bytesOrNil(), Version: d.i32()})
				m.Ops = append(m.Ops, &sets[len(sets)-1])
				continue
			}
			sub := decodeOp(d, false)
			switch sub.(type) {
			case *Create, *Delete, *SetData, *Check:
			default:
				d.fail(fmt.Errorf("op kind %T not allowed in multi", sub))
			}
			m.Ops = append(m.Ops, sub)
		}
		return m
	case kindReapContainer:
		return &ReapContainer{Path: d.str(), NeverUsedMs: d.svar()}
	case kindReapTTL:
		return &ReapTTL{Path: d.str()}
	case kindReapTTLVersion:
		return &ReapTTL{Path: d.str(), Mzxid: d.svar()}
	case kindSetZxidBase:
		return &SetZxidBase{Base: d.svar()}
	case kindRejected:
		return &Rejected{Code: zkproto.ErrCode(d.i32())}
	case kindTouchSessions:
		n := d.count()
		o := &TouchSessions{IDs: make([]int64, 0, n)}
		for i := 0; i < n && d.err == nil; i++ {
			o.IDs = append(o.IDs, d.svar())
		}
		return o
	case kindRegisterReplica:
		return &RegisterReplica{Replica: decodeReplica(d)}
	case kindConfigChanged:
		return &ConfigChanged{Order: decodeOrder(d)}
	case kindSetCutover:
		return &SetCutover{Path: d.str(), Mode: CutoverMode(d.u8())}
	case kindIncrement:
		return &Increment{Path: d.str(), Delta: d.svar()}
	case kindImportNodes:
		return &ImportNodes{Merge: d.boolean(), Nodes: decodeImported(d)}
	case kindImportUpdate:
		o := &ImportUpdate{}
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			o.Deletes = append(o.Deletes, d.str())
		}
		o.Nodes = decodeImported(d)
		return o
	case kindImportSessions:
		o := &ImportSessions{}
		n := d.count()
		for i := 0; i < n && d.err == nil; i++ {
			o.Sessions = append(o.Sessions, ImportedSession{ID: d.svar(), Timeout: int32(d.svar()), Password: d.bytesOrNil()})
		}
		return o
	case kindPutTenant:
		return &PutTenant{Create: d.boolean(), Tenant: decodeTenant(d)}
	case kindDeleteTenant:
		return &DeleteTenant{Name: d.str()}
	case kindWithinLimits:
		if !top {
			d.fail(fmt.Errorf("limits inside a multi"))
			return nil
		}
		o := &WithinLimits{MaxZnodes: d.svar(), MaxBytes: d.svar()}
		o.Op = decodeOp(d, true)
		if !limitable(o.Op) {
			d.fail(fmt.Errorf("op kind %T not allowed under limits", o.Op))
			return nil
		}
		return o
	}
	d.fail(fmt.Errorf("unknown command kind %d", k))
	return nil
}

// encodeImported writes imported nodes (ImportNodes, ImportUpdate).
func encodeImported(e *enc, nodes []ImportedNode) {
	e.uvar(uint64(len(nodes)))
	for i := range nodes {
		n := &nodes[i]
		e.str(n.Path)
		e.bytesOrNil(n.Data)
		encodeACL(e, n.ACL)
		e.svar(n.Czxid)
		e.svar(n.Mzxid)
		e.svar(n.Pzxid)
		e.svar(n.Ctime)
		e.svar(n.Mtime)
		e.svar(int64(n.Version))
		e.svar(int64(n.Aversion))
		e.svar(n.EphemeralOwner)
		e.svar(int64(n.Creates))
	}
}

// decodeImported reads what encodeImported wrote.
func decodeImported(d *dec) []ImportedNode {
	n := d.count()
	// An encoded node takes at least 12 bytes: a corrupt count cannot make
	// the slice larger than the input warrants.
	var out []ImportedNode
	if n > 0 {
		out = make([]ImportedNode, 0, min(n, len(d.b)/12))
	}
	// Imported nodes mostly share their ACL: when a node's encoded ACL is
	// the previous node's, it gets the same (read-only) slice without a
	// decode, which had been a fifth of an import's decode.
	var lastRaw []byte
	var lastACL []zkproto.ACL
	for i := 0; i < n && d.err == nil; i++ {
		node := ImportedNode{Path: d.str(), Data: d.bytesOrNil()}
		if len(lastRaw) > 0 && bytes.HasPrefix(d.b, lastRaw) {
			d.b = d.b[len(lastRaw):]
			node.ACL = lastACL
		} else {
			before := d.b
			node.ACL = decodeACL(d)
			lastRaw, lastACL = before[:len(before)-len(d.b)], node.ACL
		}
		node.Czxid, node.Mzxid, node.Pzxid, node.Ctime, node.Mtime = d.svar(), d.svar(), d.svar(), d.svar(), d.svar()
		node.Version, node.Aversion = int32(d.svar()), int32(d.svar())
		node.EphemeralOwner, node.Creates = d.svar(), int32(d.svar())
		out = append(out, node)
	}
	return out
}
