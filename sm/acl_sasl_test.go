package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The sasl scheme as ZooKeeper's SASLAuthenticationProvider: exact match,
// the SASL user "super" matches every sasl ACL, ids must be Kerberos names,
// and an auth ACL expands to the connection's sasl id.
func TestSASLScheme(t *testing.T) {
	acl := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "sasl", ID: "bob"}}}
	for id, want := range map[string]bool{"bob": true, "super": true, "bobby": false, "bob@EXAMPLE.COM": false} {
		got := CheckACL(acl, zkproto.PermRead, []zkproto.Id{{Scheme: "sasl", ID: id}}, "")
		if got != want {
			t.Errorf("sasl:%s on sasl:bob: %v, want %v", id, got, want)
		}
	}
	if CheckACL(acl, zkproto.PermRead, []zkproto.Id{{Scheme: "digest", ID: "bob"}}, "") {
		t.Error("a digest id must not match a sasl ACL")
	}
	for id, want := range map[string]bool{"bob": true, "bob@R": true, "zk/host@R": true, "a/b/c@R": false, "a@b@c": false, "a@b/c": false, "x/y/z": true} {
		if got := validACLID("sasl", id); got != want {
			t.Errorf("validACLID(sasl, %q) = %v, want %v", id, got, want)
		}
	}
	out, code := fixupACL([]zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth", ID: ""}}},
		[]zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "sasl", ID: "bob"}})
	if code != zkproto.ErrOK || len(out) != 1 || out[0].ID != (zkproto.Id{Scheme: "sasl", ID: "bob"}) {
		t.Fatalf("auth ACL with a sasl id: %v %v, want sasl:bob", out, code)
	}
}
