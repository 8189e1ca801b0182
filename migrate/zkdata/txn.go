package zkdata

import (
	"errors"
	"fmt"
)

// Txn types (ZooDefs.OpCode) that appear in transaction logs.
const (
	OpCreate          int32 = 1
	OpDelete          int32 = 2
	OpSetData         int32 = 5
	OpSetACL          int32 = 7
	OpCheck           int32 = 13
	OpMulti           int32 = 14
	OpCreate2         int32 = 15
	OpReconfig        int32 = 16
	OpCreateContainer int32 = 19
	OpDeleteContainer int32 = 20
	OpCreateTTL       int32 = 21
	OpCreateSession   int32 = -10
	OpCloseSession    int32 = -11
	OpError           int32 = -1
)

// OpName names a txn type for messages.
func OpName(t int32) string {
	switch t {
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpSetData:
		return "setData"
	case OpSetACL:
		return "setACL"
	case OpCheck:
		return "check"
	case OpMulti:
		return "multi"
	case OpCreate2:
		return "create2"
	case OpReconfig:
		return "reconfig"
	case OpCreateContainer:
		return "createContainer"
	case OpDeleteContainer:
		return "deleteContainer"
	case OpCreateTTL:
		return "createTTL"
	case OpCreateSession:
		return "createSession"
	case OpCloseSession:
		return "closeSession"
	case OpError:
		return "error"
	}
	return fmt.Sprintf("unknown(%d)", t)
}

// TxnHeader precedes every logged transaction.
type TxnHeader struct {
	ClientID int64 // session id
	Cxid     int32
	Zxid     int64
	Time     int64 // milliseconds since the epoch
	Type     int32
}

// TxnDigest is the tree digest ZooKeeper 3.6+ appends to a logged txn.
type TxnDigest struct {
	Version    int32
	TreeDigest int64
}

// Record is one decoded txn record: one of *CreateTxn, *CreateTTLTxn,
// *CreateContainerTxn, *DeleteTxn, *SetDataTxn, *SetACLTxn,
// *CheckVersionTxn, *CreateSessionTxn, *CloseSessionTxn, *ErrorTxn,
// *MultiTxn.
type Record interface{ isRecord() }

// CreateTxn is logged by create and create2. V0 is set when the record was
// the pre-3.3 CreateTxnV0 (no parentCVersion; ParentCVersion is then -1).
type CreateTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	Ephemeral      bool
	ParentCVersion int32
	V0             bool
}

// CreateTTLTxn is logged by createTTL (TTL in milliseconds).
type CreateTTLTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	ParentCVersion int32
	TTL            int64
}

// CreateContainerTxn is logged by createContainer.
type CreateContainerTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	ParentCVersion int32
}

// DeleteTxn is logged by delete and deleteContainer.
type DeleteTxn struct{ Path string }

// SetDataTxn is logged by setData and reconfig (on /zookeeper/config).
// Version is the node's new version.
type SetDataTxn struct {
	Path    string
	Data    []byte
	Version int32
}

// SetACLTxn is logged by setACL; Version is the node's new aversion.
type SetACLTxn struct {
	Path    string
	ACL     []ACL
	Version int32
}

// CheckVersionTxn appears inside a multi.
type CheckVersionTxn struct {
	Path    string
	Version int32
}

// CreateSessionTxn opens a session (header.ClientID) with a timeout in ms.
type CreateSessionTxn struct{ TimeOut int32 }

// CloseSessionTxn closes a session. Paths2Delete lists its ephemerals
// (3.6+); Legacy is set when the record is absent (older logs).
type CloseSessionTxn struct {
	Paths2Delete []string
	Legacy       bool
}

// ErrorTxn is logged for a failed operation (inside a failed multi).
type ErrorTxn struct{ Err int32 }

// SubTxn is one operation of a multi.
type SubTxn struct {
	Type   int32
	Record Record
}

// MultiTxn is logged by multi. If any sub-txn is an ErrorTxn the multi
// failed and none of its operations applies.
type MultiTxn struct{ Txns []SubTxn }

// Failed tells whether the multi failed as a whole.
func (m *MultiTxn) Failed() bool {
	for _, t := range m.Txns {
		if t.Type == OpError {
			return true
		}
	}
	return false
}

func (*CreateTxn) isRecord()          {}
func (*CreateTTLTxn) isRecord()       {}
func (*CreateContainerTxn) isRecord() {}
func (*DeleteTxn) isRecord()          {}
func (*SetDataTxn) isRecord()         {}
func (*SetACLTxn) isRecord()          {}
func (*CheckVersionTxn) isRecord()    {}
func (*CreateSessionTxn) isRecord()   {}
func (*CloseSessionTxn) isRecord()    {}
func (*ErrorTxn) isRecord()           {}
func (*MultiTxn) isRecord()           {}

// Txn is one decoded log entry.
type Txn struct {
	Header TxnHeader
	Record Record
	Digest *TxnDigest // nil when absent (digest disabled, or before 3.6)
}

// ErrUnknownTxnType is wrapped by errors for a txn type this package
// (and ZooKeeper's SerializeUtils) does not know.
var ErrUnknownTxnType = errors.New("unknown txn type")

// DecodeTxn decodes the bytes of one log entry (what the CRC covers) as
// ZooKeeper's SerializeUtils.deserializeTxn does, strictly: every byte must
// be accounted for by the header, the record and an optional digest.
func DecodeTxn(b []byte) (Txn, error) {
	d := &dec{b: b}
	var t Txn
	t.Header = TxnHeader{ClientID: d.int64(), Cxid: d.int32(), Zxid: d.int64(), Time: d.int64(), Type: d.int32()}
	if d.err != nil {
		return t, fmt.Errorf("txn header: %w", d.err)
	}
	start := d.off
	switch t.Header.Type {
	case OpCreate:
		// A create may be the pre-3.3 CreateTxnV0 (no parentCVersion).
		rec, err := decodeRecord(t.Header.Type, d)
		if err == nil && !digestFits(d.remaining()) {
			err = errShort
		}
		if err != nil {
			d2 := &dec{b: b, off: start}
			c := &CreateTxn{Path: d2.string(), Data: d2.buffer(), ACL: d2.acls(), Ephemeral: d2.bool(), ParentCVersion: -1, V0: true}
			if d2.err != nil || !digestFits(d2.remaining()) {
				return t, fmt.Errorf("zxid 0x%x: create record: %w", t.Header.Zxid, err)
			}
			rec, d = c, d2
		}
		t.Record = rec
	case OpCloseSession:
		// The record is absent in logs written before 3.6 (and when
		// zookeeper.closeSessionTxn.enabled is false).
		if d.remaining() == 0 || d.remaining() == 12 && !closeSessionFits(b[start:]) {
			t.Record = &CloseSessionTxn{Legacy: true}
		} else {
			rec, err := decodeRecord(t.Header.Type, d)
			if err != nil {
				return t, fmt.Errorf("zxid 0x%x: closeSession record: %w", t.Header.Zxid, err)
			}
			t.Record = rec
		}
	default:
		rec, err := decodeRecord(t.Header.Type, d)
		if err != nil {
			return t, fmt.Errorf("zxid 0x%x: %s record: %w", t.Header.Zxid, OpName(t.Header.Type), err)
		}
		t.Record = rec
	}
	switch d.remaining() {
	case 0:
	case 12:
		t.Digest = &TxnDigest{Version: d.int32(), TreeDigest: d.int64()}
	default:
		return t, fmt.Errorf("zxid 0x%x: %s: %d unexpected bytes after the record", t.Header.Zxid, OpName(t.Header.Type), d.remaining())
	}
	return t, nil
}

func digestFits(n int) bool { return n == 0 || n == 12 }

// closeSessionFits tells whether b is exactly one CloseSessionTxn.
func closeSessionFits(b []byte) bool {
	d := &dec{b: b}
	n := d.count(4)
	for i := 0; i < n; i++ {
		d.string()
	}
	return d.err == nil && d.remaining() == 0
}

func decodeRecord(typ int32, d *dec) (Record, error) {
	var r Record
	switch typ {
	case OpCreate, OpCreate2:
		r = &CreateTxn{Path: d.string(), Data: d.buffer(), ACL: d.acls(), Ephemeral: d.bool(), ParentCVersion: d.int32()}
	case OpCreateTTL:
		r = &CreateTTLTxn{Path: d.string(), Data: d.buffer(), ACL: d.acls(), ParentCVersion: d.int32(), TTL: d.int64()}
	case OpCreateContainer:
		r = &CreateContainerTxn{Path: d.string(), Data: d.buffer(), ACL: d.acls(), ParentCVersion: d.int32()}
	case OpDelete, OpDeleteContainer:
		r = &DeleteTxn{Path: d.string()}
	case OpSetData, OpReconfig:
		r = &SetDataTxn{Path: d.string(), Data: d.buffer(), Version: d.int32()}
	case OpSetACL:
		r = &SetACLTxn{Path: d.string(), ACL: d.acls(), Version: d.int32()}
	case OpCheck:
		r = &CheckVersionTxn{Path: d.string(), Version: d.int32()}
	case OpCreateSession:
		r = &CreateSessionTxn{TimeOut: d.int32()}
	case OpCloseSession:
		c := &CloseSessionTxn{}
		n := d.count(4)
		for i := 0; i < n && d.err == nil; i++ {
			c.Paths2Delete = append(c.Paths2Delete, d.string())
		}
		r = c
	case OpError:
		r = &ErrorTxn{Err: d.int32()}
	case OpMulti:
		m := &MultiTxn{}
		n := d.count(8)
		for i := 0; i < n && d.err == nil; i++ {
			st := d.int32()
			data := d.take(int(d.int32()))
			if d.err != nil {
				break
			}
			switch st {
			case OpCreate, OpCreate2, OpCreateTTL, OpCreateContainer, OpDelete, OpDeleteContainer, OpSetData, OpError, OpCheck:
			default:
				return nil, fmt.Errorf("multi op %d: %w %d", i, ErrUnknownTxnType, st)
			}
			sd := &dec{b: data}
			sub, err := decodeRecord(st, sd)
			if err == nil && sd.remaining() != 0 {
				err = fmt.Errorf("%d unexpected bytes", sd.remaining())
			}
			if err != nil {
				return nil, fmt.Errorf("multi op %d (%s): %w", i, OpName(st), err)
			}
			m.Txns = append(m.Txns, SubTxn{Type: st, Record: sub})
		}
		r = m
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownTxnType, typ)
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
