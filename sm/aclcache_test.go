package sm

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// aclGet keeps decoded lists by id; a kept list must never answer for
// another list stored under the same id, and a reference count change
// (the same list) keeps it.
func TestACLGetKeepsDecodedListsOnlyWhileStoredListIsSame(t *testing.T) {
	tx := newTxn(nil)
	store := func(id, refs uint64, acl []zkproto.ACL) {
		tx.set(aclKey(id), append(binary.AppendUvarint(nil, refs), encodeACLList(acl)...))
	}
	get := func(id uint64) []zkproto.ACL {
		t.Helper()
		acl, err := tx.aclGet(id)
		if err != nil {
			t.Fatalf("aclGet(%d): %v", id, err)
		}
		return acl
	}
	world := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
	digest := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: "u:x"}}}
	store(7, 1, world)
	if got := get(7); !reflect.DeepEqual(got, world) {
		t.Fatalf("got %v, want %v", got, world)
	}
	store(7, 5, world) // another reference: the same list
	first := get(7)
	if again := get(7); &again[0] != &first[0] {
		t.Fatalf("the same list was decoded again")
	}
	store(7, 1, digest) // the id now names another list
	if got := get(7); !reflect.DeepEqual(got, digest) {
		t.Fatalf("after the list changed: got %v, want %v", got, digest)
	}
	for id := uint64(100); id < 100+2*maxDecodedACLs; id++ {
		store(id, 1, digest)
		get(id)
	}
	if len(tx.acls) > maxDecodedACLs {
		t.Fatalf("%d decoded lists kept, over the bound %d", len(tx.acls), maxDecodedACLs)
	}
	if got := get(7); !reflect.DeepEqual(got, digest) {
		t.Fatalf("after the map started over: got %v, want %v", got, digest)
	}
}
