package sm

import "encoding/binary"

// Pebble key layout. The first byte names the key space; every space is
// disjoint from the others.
//
//	'n' parent 0x00 name   → node record (nodeRec); the root is 'n' 0x00
//	'k' parent 0x00 name   → "" (child index: written on create and delete only)
//	'a' aclID(8, BE)       → refcount + ACL list
//	'A' encoded ACL list   → aclID(8, BE)   (dedupe index)
//	's' sessionID(8, BE)   → session record
//	'e' sessionID(8) path  → "" (ephemeral index)
//	'c' path               → "" (container index, for the reaper)
//	't' path               → "" (TTL index, for the reaper)
//	'l' zxid(8, BE)        → change-log record
//	'm' name               → metadata (applied index, zxid base, ...)
//	'r' replicaID(8, BE)   → replica directory entry (addresses)
//	'T' name               → tenant registry entry (shard 1 only, tenants.go)
//
// Invariant: a path is only turned into a key after it passed validPath, so
// names never contain 0x00 and a node key is never a prefix of a child scan.
// Children of P are exactly the keys in ['k' P 0x00, 'k' P 0x01): one bounded
// range scan, returned in byte order. Listings scan the child index, not the
// node records: every setData rewrites a node record, and an iterator over a
// range of often-rewritten keys steps over each old version still in the
// memtable (a getChildren after 100k setData on its children was 6× slower).
const (
	spaceNode      = 'n'
	spaceChild     = 'k'
	spaceACL       = 'a'
	spaceACLIndex  = 'A'
	spaceSession   = 's'
	spaceEphemeral = 'e'
	spaceContainer = 'c'
	spaceTTL       = 't'
	spaceLog       = 'l'
	spaceMeta      = 'm'
	spaceReplica   = 'r'
	spaceTenant    = 'T'
)

var (
	keyApplied    = []byte("mapplied")
	keyZxidBase   = []byte("mzxidbase")
	keyACLNext    = []byte("maclnext")
	keyLogMeta    = []byte("mlogmeta")
	keySpecialVer = []byte("mlayout")
)

// splitPath returns the parent path and the last name of a valid path.
// The root's parent is "".
func splitPath(p string) (parent, name string) {
	if p == "/" {
		return "", ""
	}
	i := lastSlash(p)
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}

func nodeKey(p string) []byte { return treeKey(spaceNode, p) }

// childKey is p's entry in its parent's child index.
func childKey(p string) []byte { return treeKey(spaceChild, p) }

func treeKey(space byte, p string) []byte {
	parent, name := splitPath(p)
	k := make([]byte, 0, 2+len(parent)+len(name))
	k = append(k, space)
	k = append(k, parent...)
	k = append(k, 0)
	return append(k, name...)
}

// childRange returns [lo, hi) covering the keys of p's children in space
// (spaceNode or spaceChild).
func childRange(space byte, p string) (lo, hi []byte) {
	lo = make([]byte, 0, len(p)+2)
	lo = append(append(append(lo, space), p...), 0)
	hi = append(append([]byte(nil), lo[:len(lo)-1]...), 1)
	return lo, hi
}

// deepRange returns [lo, hi) covering the keys in space of p's
// grandchildren and deeper: their parent path starts with p + "/". For the
// root it covers every node except the root itself.
func deepRange(space byte, p string) (lo, hi []byte) {
	if p == "/" {
		return []byte{space, '/'}, []byte{space, '/' + 1}
	}
	lo = append(append([]byte{space}, p...), '/')
	hi = append(append([]byte{space}, p...), '/'+1)
	return lo, hi
}

func u64be(prefix byte, v uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], v)
	return k
}

func sessionKey(id int64) []byte { return u64be(spaceSession, uint64(id)) }
func aclKey(id uint64) []byte    { return u64be(spaceACL, id) }
func logKey(zxid int64) []byte   { return u64be(spaceLog, uint64(zxid)) }

func ephemeralKey(session int64, p string) []byte {
	return append(u64be(spaceEphemeral, uint64(session)), p...)
}

func ephemeralPrefix(session int64) (lo, hi []byte) {
	lo = u64be(spaceEphemeral, uint64(session))
	hi = u64be(spaceEphemeral, uint64(session)+1)
	if uint64(session) == ^uint64(0) {
		hi = []byte{spaceEphemeral + 1}
	}
	return lo, hi
}

func indexKey(space byte, p string) []byte { return append([]byte{space}, p...) }

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
