package zk

import (
	"sort"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Orders in which ZooKeeper (Java) iterates hash sets, where clients see
// them.

// ZooKeeper keeps a connection's auth ids in a set backed by a Java
// ConcurrentHashMap, so whoAmI lists them in hash-table order, not in the
// order they were added: clients (zkCli's whoami, kazoo's whoami) print
// them that way. zookeeperIDOrder reproduces that order.

// javaIDHash is the jute-generated org.apache.zookeeper.data.Id.hashCode.
func javaIDHash(id zkproto.Id) int32 {
	h := int32(17)
	h = 37*h + sm.JavaStringHash(id.Scheme)
	h = 37*h + sm.JavaStringHash(id.ID)
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

// ZooKeeper answers getEphemerals from a clone of the session's
// HashSet<String> of paths, so clients see Java HashMap iteration order.
// The clone is rebuilt with a table sized for its current count and filled
// in the original set's iteration order; that original has 16 buckets (or
// more once it outgrew them) and keeps insertion order within a bucket.
// zookeeperEphemeralOrder reproduces that from the paths and their creation
// zxids (insertion order); it cannot know that a session once held more
// ephemerals than now (its original table does not shrink), which is the
// only case where it may differ.
func zookeeperEphemeralOrder(paths []string, czxid func(string) int64) []string {
	out := append([]string(nil), paths...)
	zxids := make([]int64, len(out))
	for i, p := range out {
		zxids[i] = czxid(p)
	}
	sm.HashSetOrder(out, zxids)
	return out
}
