package node

import _ "unsafe" // for go:linkname

// dragonboat keeps a replica's log entries that are not yet applied in a
// slice with room for 512 entries, and allocates a new one each time the
// applied entries leave it (nearly) empty. With one write in flight that
// is after every write: about 50 KB per write on every node, three
// quarters of all a node allocated under create@1 and one garbage
// collection per node every half second. Room for 32 entries makes the
// slice 16 times smaller; larger batches still get a slice their size.
//
// dragonboat reads these two sizes from its soft settings when it loads,
// and offers no other way to set them than a JSON file in the process's
// working directory, so they are set here, in the package variables that
// hold them. If dragonboat renames them the build fails at link time
// rather than silently keeping the old sizes.

//go:linkname raftEntrySliceSize github.com/lni/dragonboat/v4/internal/raft.entrySliceSize
var raftEntrySliceSize uint64

//go:linkname raftMinEntrySliceFree github.com/lni/dragonboat/v4/internal/raft.minEntrySliceSize
var raftMinEntrySliceFree uint64

const (
	// inMemEntrySliceSize is the room of a fresh in-memory entry slice.
	inMemEntrySliceSize = 32
	// inMemEntrySliceMinFree is the free room below which a shrunk slice
	// is replaced (dragonboat requires it below inMemEntrySliceSize).
	inMemEntrySliceMinFree = 4
)

func init() {
	raftEntrySliceSize = inMemEntrySliceSize
	raftMinEntrySliceFree = inMemEntrySliceMinFree
}
