package sm

import (
	"sort"
	"unicode/utf16"
)

// ZooKeeper hands a session's ephemerals around as clones of a Java
// HashSet<String> (DataTree.getEphemerals): a closing session's ephemerals
// are deleted in that clone's iteration order, so watchers see NodeDeleted
// events in hash-table order, and getEphemerals answers in it too.
// HashSetOrder reproduces that order so both match ZooKeeper's.

// JavaStringHash is java.lang.String.hashCode (over UTF-16 code units).
func JavaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaTableSizeFor is HashMap.tableSizeFor: the next power of two ≥ c.
func javaTableSizeFor(c int) uint32 {
	n := uint32(1)
	for int(n) < c {
		n <<= 1
	}
	return n
}

// HashSetOrder sorts paths (with their czxids, which stand for the order the
// ephemerals were added to the session's set) as the clone iterates them.
// The clone is pre-sized from the set's size (HashMap.putMapEntries:
// tableSizeFor(size/0.75+1)) and filled in the original set's order; the
// original grew from 16 buckets, doubling past 3/4 full. Within a bucket
// the order is insertion order. The original's size is taken to be the
// current one (a session that once held many more ephemerals may differ).
func HashSetOrder(paths []string, czxid []int64) {
	n := len(paths)
	if n < 2 {
		return
	}
	clone := javaTableSizeFor(int(float32(n)/0.75 + 1))
	orig := uint32(16)
	for n > int(orig*3/4) {
		orig <<= 1
	}
	type entry struct {
		path          string
		czxid         int64
		bucket, first uint32
	}
	es := make([]entry, n)
	for i, p := range paths {
		h := uint32(JavaStringHash(p))
		h ^= h >> 16 // HashMap.hash
		es[i] = entry{path: p, czxid: czxid[i], bucket: h & (clone - 1), first: h & (orig - 1)}
	}
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.bucket != b.bucket {
			return a.bucket < b.bucket
		}
		if a.first != b.first {
			return a.first < b.first
		}
		if a.czxid != b.czxid {
			return a.czxid < b.czxid
		}
		return a.path < b.path // created by one multi: keep replicas in agreement
	})
	for i, e := range es {
		paths[i], czxid[i] = e.path, e.czxid
	}
}
