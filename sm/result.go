package sm

import (
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// resultVersion is the first byte of an encoded Result.
const resultVersion byte = 1

// Flags of a Result's optional trailing fields.
const (
	resultFenced  byte = 1 << 0
	resultCounter byte = 1 << 1
)

// Result is the outcome of one applied entry.
//
// Err is the reply header error of the request (ErrOK for a multi whose ops
// failed: the failure is in Ops, as in ZooKeeper). When OutOfOrder is set the
// write was not applied because it broke primary order (wrong sequence
// number for its connection); the server must close that connection.
// Every entry consumes its zxid, whatever the outcome.
type Result struct {
	Index      uint64
	Zxid       int64
	Err        zkproto.ErrCode
	OutOfOrder bool
	// Session is the new session ID (CreateSession only).
	Session int64
	// Path is the created path (with sequence suffix) for Create.
	Path string
	// Stat is the node's stat after Create, SetData and SetACL.
	Stat *zkproto.Stat
	// Ops are the per-op results of a Multi, one per op, in order.
	Ops []OpResult
	// Events are the change events of this entry for the watch managers, in
	// ZooKeeper's firing order. They are not part of Encode.
	Events []Event
	// ClosedSession is the session a successful CloseSession ended (client
	// close or expiry), so every node can drop its connections. Not part of
	// Encode.
	ClosedSession int64
	// Timeout is the session timeout of a CreateSession or SetSessionOwner,
	// and Touched the live sessions of a TouchSessions: what every node's
	// session tracker follows. Not part of Encode.
	Timeout int32
	Touched []int64
	// DirectoryChanged marks a RegisterReplica: nodes re-render
	// /zookeeper/config with the new addresses. Not part of Encode.
	DirectoryChanged bool
	// TenantsChanged marks a change of the tenant registry: every node
	// reconciles its tenants' replicas and listeners. Not part of Encode.
	TenantsChanged bool
	// Fenced marks a write refused by a cutover policy (NoAuth): the
	// ZooKeeper door counts and logs it.
	Fenced bool
	// Counter is an Increment's value before it (Curator's preValue).
	Counter int64
	// Imported are the sessions an ImportSessions created, for every node's
	// session tracker. Not part of Encode.
	Imported []ImportedSession
}

// OpResult is one op's outcome inside a Multi. Type is the result type of the
// MultiResponse header: 1 create, 15 create2 (also for ops 19 and 21), 2
// delete, 5 setData, 13 check, or -1 error (all ops of a failed multi: 0
// before the failing op, its code, then RuntimeInconsistency).
type OpResult struct {
	Type zkproto.OpCode
	Err  zkproto.ErrCode
	Path string
	Stat *zkproto.Stat
}

// Event is one change for the watch managers.
type Event struct {
	Type zkproto.EventType
	Path string
	Zxid int64
	// ACL is the ACL of the node the event names (for NodeChildrenChanged,
	// the parent): a watcher without READ on it is not told.
	ACL []zkproto.ACL
}

// Encode returns the compact binary form of r without its Events. It is what
// Update puts into statemachine.Result.Data for the proposer.
func (r *Result) Encode() []byte {
	size := 32 + statMax + len(r.Path)
	for i := range r.Ops {
		size += 12 + statMax + len(r.Ops[i].Path)
	}
	e := &enc{b: make([]byte, 0, size)}
	e.u8(resultVersion)
	e.uvar(r.Index)
	e.svar(r.Zxid)
	e.svar(int64(r.Err))
	e.boolean(r.OutOfOrder)
	e.svar(r.Session)
	e.str(r.Path)
	encodeStatPtr(e, r.Stat)
	e.uvar(uint64(len(r.Ops)))
	for _, o := range r.Ops {
		e.svar(int64(o.Type))
		e.svar(int64(o.Err))
		e.str(o.Path)
		encodeStatPtr(e, o.Stat)
	}
	// Optional trailing fields, present only when set, so other results
	// encode as before: a flags byte, then the fields it names.
	var flags byte
	if r.Fenced {
		flags |= resultFenced
	}
	if r.Counter != 0 {
		flags |= resultCounter
	}
	if flags != 0 {
		e.u8(flags)
		if flags&resultCounter != 0 {
			e.svar(r.Counter)
		}
	}
	return e.b
}

// DecodeResult parses Result.Encode output.
func DecodeResult(b []byte) (*Result, error) {
	if len(b) == 0 || b[0] != resultVersion {
		return nil, fmt.Errorf("sm: decode result: bad version")
	}
	d := &dec{b: b[1:]}
	r := &Result{}
	r.Index = d.uvar()
	r.Zxid = d.svar()
	r.Err = zkproto.ErrCode(d.i32())
	r.OutOfOrder = d.boolean()
	r.Session = d.svar()
	r.Path = d.str()
	r.Stat = decodeStatPtr(d)
	n := d.count()
	if n > 0 {
		// A multi's results in one slice and their stats in another: one
		// allocation each instead of a growing slice and a Stat per op.
		r.Ops = make([]OpResult, 0, n)
	}
	var stats []zkproto.Stat
	for i := 0; i < n && d.err == nil; i++ {
		o := OpResult{Type: zkproto.OpCode(d.i32()), Err: zkproto.ErrCode(d.i32()), Path: d.str()}
		if d.u8() != 0 {
			if stats == nil {
				stats = make([]zkproto.Stat, 0, n-i)
			}
			stats = append(stats, decodeStat(d))
			o.Stat = &stats[len(stats)-1]
		}
		r.Ops = append(r.Ops, o)
	}
	if d.err == nil && len(d.b) > 0 {
		flags := d.u8()
		r.Fenced = flags&resultFenced != 0
		if flags&resultCounter != 0 {
			r.Counter = d.svar()
		}
	}
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("sm: decode result: %w", err)
	}
	return r, nil
}

func encodeStatPtr(e *enc, s *zkproto.Stat) {
	if s == nil {
		e.u8(0)
		return
	}
	e.u8(1)
	encodeStat(e, s)
}

// statMax bounds encodeStat's output: eleven varints of at most 10 bytes
// (a presizing estimate, not a limit).
const statMax = 110

func encodeStat(e *enc, s *zkproto.Stat) {
	e.svar(s.Czxid)
	e.svar(s.Mzxid)
	e.svar(s.Ctime)
	e.svar(s.Mtime)
	e.svar(int64(s.Version))
	e.svar(int64(s.Cversion))
	e.svar(int64(s.Aversion))
	e.svar(s.EphemeralOwner)
	e.svar(int64(s.DataLength))
	e.svar(int64(s.NumChildren))
	e.svar(s.Pzxid)
}

func decodeStatPtr(d *dec) *zkproto.Stat {
	if d.u8() == 0 {
		return nil
	}
	s := decodeStat(d)
	return &s
}

func decodeStat(d *dec) zkproto.Stat {
	var s zkproto.Stat
	s.Czxid = d.svar()
	s.Mzxid = d.svar()
	s.Ctime = d.svar()
	s.Mtime = d.svar()
	s.Version = d.i32()
	s.Cversion = d.i32()
	s.Aversion = d.i32()
	s.EphemeralOwner = d.svar()
	s.DataLength = d.i32()
	s.NumChildren = d.i32()
	s.Pzxid = d.svar()
	return s
}
