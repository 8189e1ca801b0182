package server

import (
	"sort"
	"unicode/utf16"

	"github.com/zkbridge/zkbridge/zkproto"
)

// ZooKeeper keeps a connection's auth ids in a set backed by a Java
// ConcurrentHashMap, so whoAmI lists them in hash-table order, not in the
// order they were added: clients (zkCli's whoami, kazoo's whoami) print
// them that way. zookeeperIDOrder reproduces that order.

// javaStringHash is java.lang.String.hashCode (over UTF-16 code units).
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaIDHash is the jute-generated org.apache.zookeeper.data.Id.hashCode.
func javaIDHash(id zkproto.Id) int32 {
	h := int32(17)
	h = 37*h + javaStringHash(id.Scheme)
	h = 37*h + javaStringHash(id.ID)
	return h
}

// zookeeperIDOrder returns ids (distinct, in insertion order) in the order
// a ConcurrentHashMap with default capacity iterates them: by bucket, and
// within a bucket by insertion. The table starts at 16 buckets and doubles
// once it holds 3/4 of its size; past the first resize the order within a
// bucket is only approximately Java's, which needs a dozen auth ids.
func zookeeperIDOrder(ids []zkproto.Id) []zkproto.Id {
	n := uint32(16)
	for uint32(len(ids)) >= n*3/4 {
		n *= 2
	}
	bucket := func(id zkproto.Id) uint32 {
		h := uint32(javaIDHash(id))
		return (h ^ h>>16) & 0x7fffffff & (n - 1) // ConcurrentHashMap.spread
	}
	out := append([]zkproto.Id(nil), ids...)
	sort.SliceStable(out, func(i, j int) bool { return bucket(out[i]) < bucket(out[j]) })
	return out
}
