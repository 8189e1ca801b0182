package console

import (
	"encoding/binary"
	"sort"
)

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortLeases(ls []leaseRow) { sort.Slice(ls, func(i, j int) bool { return ls[i].ID < ls[j].ID }) }
