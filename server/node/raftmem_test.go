package node

import "testing"

// dragonboat's entry slice sizes are set by linkname (raftmem.go): a
// rename on its side must not silently keep the old sizes.
func TestEntrySliceSizesAreSet(t *testing.T) {
	if raftEntrySliceSize != inMemEntrySliceSize || raftMinEntrySliceFree != inMemEntrySliceMinFree {
		t.Fatalf("dragonboat's entry slice sizes are %d/%d, want %d/%d",
			raftEntrySliceSize, raftMinEntrySliceFree, inMemEntrySliceSize, inMemEntrySliceMinFree)
	}
}
