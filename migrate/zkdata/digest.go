package zkdata

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
)

// ZooKeeper 3.6+ keeps a digest of its whole tree (DigestCalculator,
// version 2, and NodeHashMapImpl's AdHash): the sum, wrapping, of one
// CRC32 per node over its path ("" for /), its data and its stored stat
// (czxid, mzxid, pzxid, ctime, mtime as longs, version, cversion, aversion
// as ints, ephemeralOwner as a long, big-endian). Nodes under /zookeeper/
// are left out (/zookeeper itself counts). Every logged txn carries the
// digest of the tree after it, so a replay that ends on such a txn can be
// checked whole.

// NodeDigest is one node's share of the tree digest.
func NodeDigest(path string, data []byte, st StatPersisted) int64 {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0
	}
	if path == "/" {
		path = ""
	}
	var b [60]byte
	binary.BigEndian.PutUint64(b[0:], uint64(st.Czxid))
	binary.BigEndian.PutUint64(b[8:], uint64(st.Mzxid))
	binary.BigEndian.PutUint64(b[16:], uint64(st.Pzxid))
	binary.BigEndian.PutUint64(b[24:], uint64(st.Ctime))
	binary.BigEndian.PutUint64(b[32:], uint64(st.Mtime))
	binary.BigEndian.PutUint32(b[40:], uint32(st.Version))
	binary.BigEndian.PutUint32(b[44:], uint32(st.Cversion))
	binary.BigEndian.PutUint32(b[48:], uint32(st.Aversion))
	binary.BigEndian.PutUint64(b[52:], uint64(st.EphemeralOwner))
	h := crc32.NewIEEE()
	h.Write([]byte(path))
	h.Write(data)
	h.Write(b[:])
	return int64(h.Sum32())
}

// Digest is the tree digest of t, as ZooKeeper computes it.
func (t *Tree) Digest() int64 {
	var sum int64
	for p, n := range t.Nodes {
		sum += NodeDigest(p, n.Data, n.Stat)
	}
	return sum
}
