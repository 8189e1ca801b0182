package migrate

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// parseNodeLine gives exactly what encoding/json gives, or declines: on the
// Writer's own lines (where it must not decline when they are plain ASCII)
// and on hand-made lines with escapes, odd numbers, other key order or
// spelling.
func TestParseNodeLineMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var lines [][]byte
	plain := map[int]bool{}
	for i := 0; i < 2000; i++ {
		n := &Node{Path: pick("/a", "/a/b-1", "/é/ü", "/q\"uote", "/back\\slash", "/tab\t", "/<html>&"),
			Czxid: rng.Int63() - rng.Int63(), Mzxid: math.MaxInt64, Pzxid: math.MinInt64, Ctime: int64(rng.Intn(3)), Mtime: -1,
			Version: int32(rng.Uint32()), Cversion: math.MinInt32, Aversion: math.MaxInt32,
			EphemeralOwner: int64(rng.Uint64()), NumChildren: int32(rng.Intn(5)), Creates: int32(rng.Intn(5)), Ancestor: rng.Intn(2) == 0}
		switch rng.Intn(3) {
		case 0: // null data
		case 1:
			n.Data = []byte{}
		default:
			n.Data = make([]byte, rng.Intn(40))
			rng.Read(n.Data)
		}
		switch rng.Intn(3) {
		case 0: // null ACL
		case 1:
			n.ACL = []ACL{}
		default:
			for j := rng.Intn(3) + 1; j > 0; j-- {
				n.ACL = append(n.ACL, ACL{Perms: int32(rng.Intn(32)), Scheme: pick("world", "digest", "ip"), ID: pick("anyone", "u:h/x+=", "10.0.0.0/8", "ü")})
			}
		}
		b, err := json.Marshal(Record{Node: n})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.ContainsAny(string(b), "\\") && isASCII(b) {
			plain[len(lines)] = true
		}
		lines = append(lines, b)
	}
	for _, s := range []string{
		`{"node":{}}`, `{"node":{"path":"/x"}}`, `{"node":{"Path":"/x"}}`, `{"node":{"path":"/x","extra":1}}`,
		`{"node":{"czxid":01}}`, `{"node":{"czxid":1.0}}`, `{"node":{"czxid":1e3}}`, `{"node":{"czxid":-}}`,
		`{"node":{"version":2147483648}}`, `{"node":{"czxid":9223372036854775808}}`, `{"node":{"czxid":-0}}`,
		`{"node":{"data":"!!"}}`, `{"node":{"data":"QQ"}}`, `{"node":{"data":"QQ=="}}`, `{"node":{"data":""}}`,
		`{"node":{"acl":[{}]}}`, `{"node":{"acl":[{"perms":1,"perms":2}]}}`, `{"node":{"acl":[{"id":"a"},]}}`,
		`{"node":{"acl":[1]}}`, `{"node":{"path":"/a","path":"/b"}}`, `{"node":{"ancestor":true}}`, `{"node":{"ancestor":1}}`,
		`{"node":{"path":"/a"},"end":{}}`, `{"node":{"path":"/a" }}`, `{"node": {"path":"/a"}}`, `{"node":{"path":"/a\u0041"}}`,
		`{"node":{"path":"/a",}}`, `{"node":{,}}`, `{"node":{"path"}}`, `{"node":{"path":}}`,
		`{"node":{"czxid":-9223372036854775808}}`, `{"node":{"czxid":-9223372036854775809}}`, `{"node":{"czxid":9223372036854775807}}`,
		`{"node":{"czxid":99999999999999999999}}`, `{"node":{"version":-2147483648}}`, `{"node":{"version":-2147483649}}`,
		// The same ACL again (the memo's), then one that starts like it.
		`{"node":{"acl":[{"perms":31,"scheme":"world","id":"anyone"}]}}`, `{"node":{"path":"/b","acl":[{"perms":31,"scheme":"world","id":"anyone"}]}}`,
		`{"node":{"acl":[{"perms":31,"scheme":"world","id":"anyone"},{"perms":1,"scheme":"ip","id":"10.0.0.1"}]}}`,
		`{"node":{"acl":[{"perms":31,"scheme":"world","id":"anyone"}],"path":"/c"}}`, `{"node":{"acl":[{"perms":31,"scheme":"world","id":"anyone"}]]}}`,
	} {
		lines = append(lines, []byte(s))
	}
	var memo aclMemo // shared, as a Reader shares it
	for i, line := range lines {
		got, ok := parseNodeLine(line, &memo)
		var want Record
		err := json.Unmarshal(line, &want)
		if plain[i] && !ok {
			t.Fatalf("declined the Writer's plain line %s", line)
		}
		if !ok {
			continue
		}
		if err != nil || want.Node == nil || want.Session != nil || want.End != nil {
			t.Fatalf("took %s, which encoding/json reads as %+v, %v", line, want, err)
		}
		if !reflect.DeepEqual(got, want.Node) {
			t.Fatalf("%s:\n fast %+v\n json %+v", line, got, want.Node)
		}
	}
	if len(plain) == 0 {
		t.Fatal("no plain line was generated")
	}
}

func isASCII(b []byte) bool {
	return bytes.IndexFunc(b, func(r rune) bool { return r > 0x7e || r < 0x20 }) < 0
}
