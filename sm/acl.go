package sm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Well-known ACL lists (ZooDefs.Ids).
var (
	openACL = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
	readACL = []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
)

// isSuper reports whether the identities bypass every ACL: a super: id, or a
// digest id equal to the configured super digest ("super:<base64 sha1>").
func isSuper(ids []zkproto.Id, superDigest string) bool {
	for _, id := range ids {
		if id.Scheme == "super" {
			return true
		}
		if superDigest != "" && id.Scheme == "digest" && id.ID == superDigest {
			return true
		}
	}
	return false
}

// CheckACL is ZooKeeper's checkACL: it reports whether identities ids are
// granted perm by acl. An empty ACL allows everything; super identities (see
// Config.SuperDigest) allow everything. The server uses it for reads; apply
// uses it for writes, so both agree.
func CheckACL(acl []zkproto.ACL, perm int32, ids []zkproto.Id, superDigest string) bool {
	if len(acl) == 0 || isSuper(ids, superDigest) {
		return true
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == "world" && a.ID.ID == "anyone" {
			return true
		}
		for _, id := range ids {
			if id.Scheme == a.ID.Scheme && schemeMatches(id.Scheme, id.ID, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

func schemeMatches(scheme, id, expr string) bool {
	switch scheme {
	case "digest", "x509":
		return id == expr
	case "ip":
		return ipMatches(id, expr)
	case "sasl":
		// SASLAuthenticationProvider.matches: a SASL user named "super"
		// matches every sasl ACL.
		return id == expr || id == "super"
	}
	return false
}

// authenticatedScheme reports whether ids of this scheme are expanded by the
// `auth` ACL scheme (ZooKeeper's isAuthenticated: digest and x509, not ip).
func authenticatedScheme(s string) bool { return s == "digest" || s == "x509" || s == "sasl" }

// validACLID is the provider isValid check per scheme.
func validACLID(scheme, id string) bool {
	switch scheme {
	case "digest":
		// Java's id.split(":").length == 2 (trailing empty parts dropped).
		parts := strings.Split(id, ":")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		return len(parts) == 2
	case "ip":
		_, _, ok := parseIPExpr(id)
		return ok
	case "x509":
		return true
	case "sasl":
		return validKerberosName(id)
	}
	return false
}

// validKerberosName is SASLAuthenticationProvider.isValid: KerberosName's
// pattern service[/host]@realm, or any name without '@'.
func validKerberosName(id string) bool {
	at := strings.IndexByte(id, '@')
	if at < 0 {
		return true
	}
	name, realm := id[:at], id[at+1:]
	return !strings.ContainsAny(realm, "/@") && strings.Count(name, "/") <= 1
}

// parseIPExpr parses "addr[/bits]" as ZooKeeper 3.8's IPAuthenticationProvider
// does: the address must be IPv4 (3.8 has no IPv6 support in ip ACLs) and
// the bits, if a "/" is present, an integer from 0 to 32.
func parseIPExpr(expr string) (net.IP, int, bool) {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	ip := parseIPv4(addr)
	if ip == nil {
		return nil, 0, false
	}
	bits := 32
	if hasBits {
		n, ok := javaParseInt(bitsStr)
		if !ok || n < 0 || n > 32 {
			return nil, 0, false
		}
		bits = n
	}
	return ip, bits, true
}

// parseIPv4 is v4addr2Bytes: exactly four dot-separated parts, each a Java
// integer (sign and leading zeros allowed) from 0 to 255.
func parseIPv4(addr string) net.IP {
	parts := strings.Split(addr, ".")
	if len(parts) != 4 {
		return nil
	}
	ip := make(net.IP, 4)
	for i, p := range parts {
		n, ok := javaParseInt(p)
		if !ok || n < 0 || n > 255 {
			return nil
		}
		ip[i] = byte(n)
	}
	return ip
}

// javaParseInt accepts what Integer.parseInt accepts for ASCII input: an
// optional sign and at least one decimal digit, within int32.
func javaParseInt(s string) (int, bool) {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int(n), err == nil
}

func ipMatches(id, expr string) bool {
	want, bits, ok := parseIPExpr(expr)
	if !ok {
		return false
	}
	got, _, ok := parseIPExpr(id)
	if !ok || len(got) != len(want) {
		return false
	}
	mask := net.CIDRMask(bits, len(want)*8)
	for i := range want {
		if got[i]&mask[i] != want[i]&mask[i] {
			return false
		}
	}
	return true
}

// fixupACL is ZooKeeper's fixupACL: duplicates removed (first occurrence
// kept), empty list → InvalidACL, world:anyone kept, world:<other> and
// unknown schemes → InvalidACL, `auth` replaced by every authenticated id of
// the requester (none → InvalidACL), other ids must pass their provider's
// isValid. Perm values are not validated.
func fixupACL(acl []zkproto.ACL, ids []zkproto.Id) ([]zkproto.ACL, zkproto.ErrCode) {
	uniq := make([]zkproto.ACL, 0, len(acl))
	for _, a := range acl {
		dup := false
		for _, u := range uniq {
			if u == a {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, zkproto.ErrInvalidACL
	}
	out := make([]zkproto.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID.Scheme == "world" && a.ID.ID == "anyone":
			out = append(out, a)
		case a.ID.Scheme == "auth":
			found := false
			for _, id := range ids {
				if authenticatedScheme(id.Scheme) {
					found = true
					out = append(out, zkproto.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, zkproto.ErrInvalidACL
			}
		case validACLID(a.ID.Scheme, a.ID.ID):
			out = append(out, a)
		default:
			return nil, zkproto.ErrInvalidACL
		}
	}
	return out, zkproto.ErrOK
}

// ACL storage: lists are deduplicated and reference counted.
//
//	'A' encodedList → id        (lookup by content)
//	'a' id          → refcount, encodedList
//
// Invariant: refcount equals the number of nodes whose aclID is id; the pair
// of keys is deleted when it drops to zero. IDs come from a counter in
// metadata, so they are identical on all replicas.

func encodeACLList(acl []zkproto.ACL) []byte {
	e := &enc{}
	encodeACL(e, acl)
	return e.b
}

func decodeACLRec(b []byte) (refs uint64, acl []zkproto.ACL, err error) {
	d := &dec{b: b}
	refs = d.uvar()
	acl = decodeACL(d)
	if err := d.done(); err != nil {
		return 0, nil, fmt.Errorf("acl record: %w", err)
	}
	return refs, acl, nil
}

func (t *txn) aclRef(acl []zkproto.ACL) (uint64, error) {
	list := encodeACLList(acl)
	idxKey := append([]byte{spaceACLIndex}, list...)
	v, err := t.get(idxKey)
	if err != nil {
		return 0, err
	}
	var id uint64
	var refs uint64
	if v != nil {
		id = binary.BigEndian.Uint64(v)
		rec, err := t.get(aclKey(id))
		if err != nil {
			return 0, err
		}
		if rec == nil {
			return 0, fmt.Errorf("acl %d: index without record", id)
		}
		refs, _, err = decodeACLRec(rec)
		if err != nil {
			return 0, fmt.Errorf("acl %d: %w", id, err)
		}
	} else {
		nv, err := t.get(keyACLNext)
		if err != nil {
			return 0, err
		}
		id = 1
		if nv != nil {
			id = binary.BigEndian.Uint64(nv)
		}
		t.set(keyACLNext, binary.BigEndian.AppendUint64(nil, id+1))
		t.set(idxKey, binary.BigEndian.AppendUint64(nil, id))
	}
	rec := binary.AppendUvarint(nil, refs+1)
	t.set(aclKey(id), append(rec, list...))
	return id, nil
}

func (t *txn) aclUnref(id uint64) error {
	rec, err := t.get(aclKey(id))
	if err != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("acl %d: missing record", id)
	}
	refs, acl, err := decodeACLRec(rec)
	if err != nil {
		return fmt.Errorf("acl %d: %w", id, err)
	}
	list := encodeACLList(acl)
	if refs <= 1 {
		t.del(aclKey(id))
		t.del(append([]byte{spaceACLIndex}, list...))
		return nil
	}
	t.set(aclKey(id), append(binary.AppendUvarint(nil, refs-1), list...))
	return nil
}

// decodedACL is an ACL list as stored (without its reference count) and
// decoded.
type decodedACL struct {
	key  []byte // aclKey(id), kept so a lookup builds no key (two per setData)
	list []byte
	acl  []zkproto.ACL
}

// maxDecodedACLs bounds txn.acls; past it the map starts over. A tree
// has few distinct ACLs.
const maxDecodedACLs = 1024

// aclGet returns the ACL list of id. Every setData (twice: the check and
// the event), delete and event asks for its node's list, so decoded lists
// are kept by id: decoding them again was a tenth of the leader's CPU
// under multi. A kept list serves only while the stored list bytes are
// the same, so an id freed and reused for another list is decoded afresh.
// The returned slice is shared: callers only read it.
func (t *txn) aclGet(id uint64) ([]zkproto.ACL, error) {
	d, known := t.acls[id]
	key := d.key
	if !known {
		key = aclKey(id)
	}
	rec, err := t.get(key)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("acl %d: missing record", id)
	}
	_, n := binary.Uvarint(rec)
	if n <= 0 { // malformed: the decoder says how
		_, acl, err := decodeACLRec(rec)
		return acl, err
	}
	list := rec[n:]
	if known && bytes.Equal(d.list, list) {
		return d.acl, nil
	}
	_, acl, err := decodeACLRec(rec)
	if err != nil {
		return nil, err
	}
	if len(t.acls) >= maxDecodedACLs {
		clear(t.acls)
	}
	t.acls[id] = decodedACL{key: key, list: bytes.Clone(list), acl: acl}
	return acl, nil
}
