package sm

import (
	"encoding/binary"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Increment adds Delta to the counter at Path, a znode holding an 8-byte
// big-endian long (Curator's DistributedAtomicLong format; empty data reads
// as 0), creating it (persistent, open ACL) when it is missing. It is a
// setData (or create) of the new value, with the same checks, events and
// change record, so ZooKeeper-mode code incrementing the same counter by
// compare-and-set sees an ordinary version bump and never overlaps: the
// native API's AllocateID is one entry, never a retry loop. The result's
// Counter is the value before (Curator's preValue).
type Increment struct {
	Path  string
	Delta int64
}

func (a *applier) increment(o *Increment) (int64, *zkproto.Stat, zkproto.ErrCode, error) {
	if !validPath(o.Path) || o.Delta <= 0 {
		return 0, nil, zkproto.ErrBadArguments, nil
	}
	n, err := a.t.node(o.Path)
	if err != nil {
		return 0, nil, 0, err
	}
	var cur int64
	if n != nil {
		switch len(n.data) {
		case 0:
		case 8:
			cur = int64(binary.BigEndian.Uint64(n.data))
		default:
			return 0, nil, zkproto.ErrBadArguments, nil // not a counter
		}
	}
	if cur > (1<<63-1)-o.Delta {
		return 0, nil, zkproto.ErrBadArguments, nil // would overflow
	}
	next := binary.BigEndian.AppendUint64(nil, uint64(cur+o.Delta))
	if n == nil {
		_, st, code, err := a.create(&Create{OpCode: zkproto.OpCreate2, Path: o.Path, Data: next, ACL: zkproto.OpenACLUnsafe()})
		return cur, st, code, err
	}
	st, code, err := a.setData(&SetData{Path: o.Path, Data: next, Version: n.version})
	return cur, st, code, err
}
