package server

import (
	"sort"
	"unicode/utf16"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Orders in which ZooKeeper (Java) iterates hash sets, where clients see
// them.

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
	s := len(paths)
	// HashMap.putMapEntries: tableSizeFor((float)s / 0.75f + 1).
	clone := tableSizeFor(int(float32(s)/0.75 + 1))
	orig := 16
	for s > orig*3/4 {
		orig *= 2
	}
	hash := func(p string) int {
		h := uint32(javaStringHash(p))
		return int(h ^ h>>16) // HashMap.hash
	}
	type entry struct {
		path      string
		h         int
		insertion int64
	}
	es := make([]entry, s)
	for i, p := range paths {
		es[i] = entry{p, hash(p), czxid(p)}
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if x, y := a.h&(clone-1), b.h&(clone-1); x != y {
			return x < y
		}
		if x, y := a.h&(orig-1), b.h&(orig-1); x != y {
			return x < y
		}
		return a.insertion < b.insertion
	})
	out := make([]string, s)
	for i, e := range es {
		out[i] = e.path
	}
	return out
}

// tableSizeFor is HashMap.tableSizeFor: the power of two at or above c.
func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n *= 2
	}
	return n
}
