package sm

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zkbridge/zkbridge/zkproto"
)

// keyTreeStats holds the tree's sizes, kept in the same batch as the data.
var keyTreeStats = []byte("mtreestats")

// TreeStats are the tree's sizes, maintained by apply (no scans): what
// ZooKeeper reports as znode count, ephemerals count and approximate data
// size (path plus data bytes of every node).
type TreeStats struct {
	Nodes      int64
	Ephemerals int64
	DataBytes  int64
}

// add accounts for a node of kind at p with dataLen bytes of data being
// created (sign 1) or removed (sign -1).
func (t *TreeStats) add(kind nodeKind, p string, dataLen int, sign int64) {
	t.Nodes += sign
	if kind == kindEphemeral {
		t.Ephemerals += sign
	}
	t.DataBytes += sign * int64(len(p)+dataLen)
}

func (t *TreeStats) plus(d TreeStats) {
	t.Nodes += d.Nodes
	t.Ephemerals += d.Ephemerals
	t.DataBytes += d.DataBytes
}

func (t TreeStats) encode() []byte {
	b := binary.AppendVarint(nil, t.Nodes)
	b = binary.AppendVarint(b, t.Ephemerals)
	return binary.AppendVarint(b, t.DataBytes)
}

// specialTreeStats are the sizes of a fresh tree: the four special nodes.
func specialTreeStats() TreeStats {
	n := int64(len(zkproto.RootPath) + len(zkproto.ZooKeeperPath) + len(zkproto.QuotaPath) + len(zkproto.ConfigPath))
	return TreeStats{Nodes: 4, DataBytes: n}
}

func readTreeStats(r pebble.Reader) (TreeStats, error) {
	v, err := readRaw(r, keyTreeStats)
	if err != nil {
		return TreeStats{}, err
	}
	if v == nil {
		return specialTreeStats(), nil
	}
	var t TreeStats
	for _, f := range []*int64{&t.Nodes, &t.Ephemerals, &t.DataBytes} {
		x, k := binary.Varint(v)
		if k <= 0 {
			return TreeStats{}, fmt.Errorf("sm: corrupt tree stats record")
		}
		*f, v = x, v[k:]
	}
	return t, nil
}

// Stats returns the tree's sizes as of the last applied entry.
func (s *StateMachine) Stats() TreeStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}
