package sasl

import (
	"testing"
)

// FuzzDigestResponse feeds arbitrary digest-responses to an exchange: it
// must fail or succeed without panicking, and succeed only for the right
// password.
func FuzzDigestResponse(f *testing.F) {
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="x",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=0123456789abcdef0123456789abcdef,qop=auth`))
	f.Add([]byte(`a="\`))
	f.Add([]byte(`,,,=`))
	f.Add([]byte{0xff, 0xfe})
	f.Fuzz(func(t *testing.T, token []byte) {
		d := NewDigest(func(u string) (string, bool) { return "secret", u == "bob" })
		if _, err := d.Step(nil); err != nil {
			t.Fatal(err)
		}
		rsp, err := d.Step(token)
		if err == nil && (!d.Complete() || len(rsp) != len("rspauth=")+32) {
			t.Fatalf("accepted %q without completing properly", token)
		}
		if _, err := ParseDirectives(token); err != nil && d.Complete() {
			t.Fatalf("completed on unparseable %q", token)
		}
	})
}

// FuzzParseJAAS: any text parses or fails cleanly.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="x"; };`)
	f.Add(`/* a */ # b
	X{m optional;};`)
	f.Fuzz(func(t *testing.T, text string) {
		j, err := ParseJAAS(text)
		if err == nil {
			for name := range j.Sections {
				if _, err := j.Users(name); err != nil {
					t.Fatalf("section %q listed but Users fails: %v", name, err)
				}
			}
		}
	})
}
