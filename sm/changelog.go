package sm

import (
	"encoding/binary"
	"fmt"

	"github.com/zkbridge/zkbridge/zkproto"
)

// ChangeType says what a Change did.
type ChangeType byte

// Change types of the change log.
const (
	ChangeCreated        ChangeType = 1 // node created (Stat, Data of the new node)
	ChangeDeleted        ChangeType = 2 // node deleted
	ChangeData           ChangeType = 3 // setData (new Stat, Data)
	ChangeACL            ChangeType = 4 // setACL (new Stat)
	ChangeSessionCreated ChangeType = 5 // Session opened
	ChangeSessionClosed  ChangeType = 6 // Session closed or expired (after its ephemerals' deletes)
	// ChangeImported: a migration import (ImportNodes) created nodes under
	// Path, their closest common ancestor, without a record of each: the
	// record is a snapshot point. A feed that reaches it cannot go on
	// from records (it must read an image taken at or after it, as after
	// compaction). One record of a few bytes instead of every node's
	// stat and data again kept a third of an import's writes out of Pebble.
	ChangeImported ChangeType = 7
)

// Change is one effect of a transaction.
type Change struct {
	Type    ChangeType
	Path    string
	Session int64
	Stat    zkproto.Stat
	Data    []byte
	// DataSuperseded (read from the log only): the change's value was
	// larger than changeValueInline, so its record did not copy it, and a
	// later change (in this record or a later one) replaced or deleted
	// the node before the log was read: Data is nil, and the later change
	// carries what the node became.
	DataSuperseded bool
	// dataInNode (read from the log only): the record left the value out;
	// View.ChangeLog takes it from the node.
	dataInNode bool
}

// changeValueInline is the largest value a change-log record copies. A
// larger value (a create's or a setData's) stays only in its node, where
// the feed reads it while no later change has replaced it. Each value
// used to be written to Pebble twice, the node and the record, and for
// large values the second copy was a third of a node's disk writes (the
// Raft log, the node, the record) and the compactions behind them; the
// log's byte bound also held only a few hundred records of 100 KB. The
// limit is part of the record format: every replica applies the same rule.
const changeValueInline = 4096

// dataInNodeMark is the length a record encodes for a value it left in the
// node (bytesOrNil's null is -1).
const dataInNodeMark = -2

// carriesData reports whether a change of type t has a value.
func carriesData(t ChangeType) bool { return t == ChangeCreated || t == ChangeData }

// ChangeRecord is the change-log record of one successful transaction,
// keyed by its zxid. Failed transactions change nothing and leave no record.
type ChangeRecord struct {
	Zxid    int64
	Time    int64
	Changes []Change
}

const changeRecVersion byte = 1

func (r *ChangeRecord) encode() []byte {
	size := 24
	for i := range r.Changes {
		size += 80 + len(r.Changes[i].Path) + min(len(r.Changes[i].Data), changeValueInline) // a Stat's varints fit in 70
	}
	e := &enc{b: make([]byte, 0, size)}
	e.u8(changeRecVersion)
	e.svar(r.Zxid)
	e.svar(r.Time)
	e.uvar(uint64(len(r.Changes)))
	for i := range r.Changes {
		c := &r.Changes[i]
		e.u8(byte(c.Type))
		e.str(c.Path)
		e.svar(c.Session)
		encodeStat(e, &c.Stat)
		if carriesData(c.Type) && len(c.Data) > changeValueInline {
			e.svar(dataInNodeMark)
			continue
		}
		e.bytesOrNil(c.Data)
	}
	return e.b
}

func decodeChangeRecord(b []byte) (*ChangeRecord, error) {
	if len(b) == 0 || b[0] != changeRecVersion {
		return nil, fmt.Errorf("change record: unknown version")
	}
	d := &dec{b: b[1:]}
	r := &ChangeRecord{Zxid: d.svar(), Time: d.svar()}
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		c := Change{Type: ChangeType(d.u8()), Path: d.str(), Session: d.svar()}
		c.Stat = decodeStat(d)
		if d.peekSvar() == dataInNodeMark && carriesData(c.Type) {
			d.svar()
			c.dataInNode = true
		} else {
			c.Data = d.bytesOrNil()
		}
		r.Changes = append(r.Changes, c)
	}
	if err := d.done(); err != nil {
		return nil, fmt.Errorf("change record: %w", err)
	}
	return r, nil
}

// logMeta tracks the retained change log. Trimmed is the highest zxid whose
// record was dropped by retention (0: nothing dropped yet): a reader asking
// for records at or below it has lost history.
//
// Invariant: Count and Bytes are the number and total value size of the
// 'l' keys. Retention keeps the longest suffix of records within both limits;
// that suffix does not depend on how entries were batched, so replicas agree.
type logMeta struct {
	Count   uint64
	Bytes   uint64
	Trimmed int64
}

func (m *logMeta) encode() []byte {
	b := binary.AppendUvarint(nil, m.Count)
	b = binary.AppendUvarint(b, m.Bytes)
	return binary.AppendVarint(b, m.Trimmed)
}

func decodeLogMeta(b []byte) (logMeta, error) {
	if b == nil {
		return logMeta{}, nil
	}
	d := &dec{b: b}
	m := logMeta{Count: d.uvar(), Bytes: d.uvar(), Trimmed: d.svar()}
	if err := d.done(); err != nil {
		return logMeta{}, fmt.Errorf("log meta: %w", err)
	}
	return m, nil
}

func encodeInt(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeInt(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
