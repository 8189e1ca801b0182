package sasl

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRFC2831Example checks the hashing against the example exchange of
// RFC 2831 §4 (user chris, password secret).
func TestRFC2831Example(t *testing.T) {
	const nonce, cnonce, uri = "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "imap/elwood.innosoft.com"
	a1 := a1Hash("chris", "elwood.innosoft.com", "secret", nonce, cnonce, "", false)
	if got := kd(a1, nonce+":00000001:"+cnonce+":auth:"+md5Hex("AUTHENTICATE:"+uri)); got != "d388dad90d4bbd760a152321f2143af7" {
		t.Fatalf("response = %s, want RFC 2831's d388dad90d4bbd760a152321f2143af7", got)
	}
	if got := kd(a1, nonce+":00000001:"+cnonce+":auth:"+md5Hex(":"+uri)); got != "ea40f60335c427b5527b84dbabcdfffd" {
		t.Fatalf("rspauth = %s, want RFC 2831's ea40f60335c427b5527b84dbabcdfffd", got)
	}
}

// clientResponse is what a DIGEST-MD5 client (the JDK's, puresasl) sends
// for a challenge, computed independently of the server code.
func clientResponse(t *testing.T, challenge []byte, user, realm, password, cnonce string, extra string) string {
	t.Helper()
	dirs, err := ParseDirectives(challenge)
	if err != nil {
		t.Fatalf("challenge %q: %v", challenge, err)
	}
	nonce := dirs["nonce"]
	h := func(s []byte) []byte { x := md5.Sum(s); return x[:] }
	hx := func(s string) string { return hex.EncodeToString(h([]byte(s))) }
	inner := h([]byte(user + ":" + realm + ":" + password))
	a1 := hex.EncodeToString(h(append(inner, []byte(":"+nonce+":"+cnonce)...)))
	resp := hx(a1 + ":" + nonce + ":00000001:" + cnonce + ":auth:" + hx("AUTHENTICATE:"+DigestURI))
	return fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth%s`,
		user, realm, nonce, cnonce, DigestURI, resp, extra)
}

func users(m map[string]string) PasswordLookup {
	return func(u string) (string, bool) { p, ok := m[u]; return p, ok }
}

func TestDigestExchange(t *testing.T) {
	d := NewDigest(users(map[string]string{"bob": "bobsecret"}))
	ch, err := d.Step(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The challenge ZooKeeper 3.8 was observed to send.
	dirs, _ := ParseDirectives(ch)
	if dirs["realm"] != "zk-sasl-md5" || len(dirs["nonce"]) != 40 || dirs["charset"] != "utf-8" || dirs["algorithm"] != "md5-sess" || len(dirs) != 4 {
		t.Fatalf("challenge %q is not ZooKeeper's", ch)
	}
	rsp, err := d.Step([]byte(clientResponse(t, ch, "bob", Realm, "bobsecret", "abc123", "")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(rsp), "rspauth=") || len(rsp) != len("rspauth=")+32 {
		t.Fatalf("final answer %q, want rspauth=<32 hex>", rsp)
	}
	if !d.Complete() || d.AuthenticationID() != "bob" {
		t.Fatalf("complete=%v id=%q", d.Complete(), d.AuthenticationID())
	}
	if _, err := d.Step(nil); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("a token after completion: %v, want AuthFailed", err)
	}
}

func TestDigestFailures(t *testing.T) {
	lookup := users(map[string]string{"bob": "bobsecret", "ünï": "pässwörd"})
	cases := []struct {
		name  string
		token func(ch []byte) string
		ok    bool
	}{
		{"good", func(ch []byte) string { return clientResponse(t, ch, "bob", Realm, "bobsecret", "c1", "") }, true},
		{"latin-1 user and password", func(ch []byte) string {
			// The client hashes ISO 8859-1 bytes, as RFC 2831 says.
			return clientResponseLatin1(t, ch, "ünï", "pässwörd")
		}, true},
		{"wrong password", func(ch []byte) string { return clientResponse(t, ch, "bob", Realm, "nope", "c1", "") }, false},
		{"unknown user", func(ch []byte) string { return clientResponse(t, ch, "eve", Realm, "bobsecret", "c1", "") }, false},
		{"other realm", func(ch []byte) string { return clientResponse(t, ch, "bob", "elsewhere", "bobsecret", "c1", "") }, false},
		{"duplicate directive", func(ch []byte) string {
			return clientResponse(t, ch, "bob", Realm, "bobsecret", "c1", ",username=\"bob\"")
		}, false},
		{"truncated", func(ch []byte) string {
			s := clientResponse(t, ch, "bob", Realm, "bobsecret", "c1", "")
			return s[:len(s)/2]
		}, false},
		{"empty", func([]byte) string { return "" }, false},
		{"garbage", func([]byte) string { return "\x00\xff\x01" }, false},
		{"oversize", func([]byte) string { return strings.Repeat("a", MaxResponseLen) }, false},
		{"qop auth-int", func(ch []byte) string {
			return strings.Replace(clientResponse(t, ch, "bob", Realm, "bobsecret", "c1", ""), "qop=auth", "qop=auth-int", 1)
		}, false},
		{"nonce count 2", func(ch []byte) string {
			return strings.Replace(clientResponse(t, ch, "bob", Realm, "bobsecret", "c1", ""), "nc=00000001", "nc=00000002", 1)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDigest(lookup)
			ch, err := d.Step([]byte{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Step([]byte(tc.token(ch)))
			if tc.ok != (err == nil) || d.Complete() != tc.ok {
				t.Fatalf("ok=%v, got err=%v complete=%v", tc.ok, err, d.Complete())
			}
			if err != nil && !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("error %v does not wrap ErrAuthFailed", err)
			}
		})
	}
}

func clientResponseLatin1(t *testing.T, ch []byte, user, password string) string {
	dirs, _ := ParseDirectives(ch)
	nonce, cnonce := dirs["nonce"], "xyz"
	l1 := func(s string) []byte {
		var b []byte
		for _, r := range s {
			b = append(b, byte(r))
		}
		return b
	}
	inner := md5.Sum(append(append(append(l1(user), ':'), []byte(Realm+":")...), l1(password)...))
	a1 := md5.Sum(append(inner[:], []byte(":"+nonce+":"+cnonce)...))
	a1h := hex.EncodeToString(a1[:])
	resp := md5Hex(a1h + ":" + nonce + ":00000001:" + cnonce + ":auth:" + md5Hex("AUTHENTICATE:"+DigestURI))
	return fmt.Sprintf(`username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",response=%s,qop=auth,charset=utf-8`,
		user, Realm, nonce, cnonce, DigestURI, resp)
}

// Another mechanism's initial response (PLAIN's authzid NUL user NUL
// password) gets the challenge, as from ZooKeeper 3.8; PLAIN's client then
// stops, unauthenticated. Sent again as the response, it fails.
func TestInitialResponseOfAnotherMechanism(t *testing.T) {
	d := NewDigest(users(map[string]string{"bob": "bobsecret"}))
	ch, err := d.Step([]byte("\x00bob\x00bobsecret"))
	if err != nil || !strings.HasPrefix(string(ch), `realm="zk-sasl-md5",nonce=`) {
		t.Fatalf("PLAIN initial response: %q, %v; want the challenge", ch, err)
	}
	if _, err := d.Step([]byte("\x00bob\x00bobsecret")); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("PLAIN as the response: %v, want AuthFailed", err)
	}
	if _, err := d.Step([]byte{}); !errors.Is(err, ErrAuthFailed) || d.Complete() {
		t.Fatalf("a failed exchange must stay failed, got %v", err)
	}
}

func TestParseDirectives(t *testing.T) {
	got, err := ParseDirectives([]byte(` , Realm = "a\"b,c" ,, qop=auth , nc=00000001 `))
	if err != nil {
		t.Fatal(err)
	}
	if got["realm"] != `a"b,c` || got["qop"] != "auth" || got["nc"] != "00000001" || len(got) != 3 {
		t.Fatalf("got %q", got)
	}
	for _, bad := range []string{`a`, `a="x`, `=x`, `a=x,a=y`, `a="x"y`} {
		if _, err := ParseDirectives([]byte(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestPrincipal(t *testing.T) {
	cases := []struct {
		name                    string
		removeHost, removeRealm bool
		want                    string
	}{
		{"bob", false, false, "bob"},
		{"bob@EXAMPLE.COM", false, false, "bob@EXAMPLE.COM"},
		{"bob@EXAMPLE.COM", false, true, "bob"},
		{"zk/host1.example.com@EXAMPLE.COM", false, false, "zk/host1.example.com@EXAMPLE.COM"},
		{"zk/host1.example.com@EXAMPLE.COM", true, false, "zk@EXAMPLE.COM"},
		{"zk/host1.example.com@EXAMPLE.COM", true, true, "zk"},
		{"zk/host1", true, true, "zk/host1"}, // no realm: not a principal, kept whole
	}
	for _, tc := range cases {
		got, err := Principal(tc.name, tc.removeHost, tc.removeRealm)
		if err != nil || got != tc.want {
			t.Errorf("Principal(%q, host=%v, realm=%v) = %q, %v; want %q", tc.name, tc.removeHost, tc.removeRealm, got, err, tc.want)
		}
	}
	if _, err := Principal("a@b@c", false, false); err == nil {
		t.Error("a@b@c: want an error (ZooKeeper's KerberosName refuses it)")
	}
}

func TestDigestClient(t *testing.T) {
	d := NewDigest(users(map[string]string{`a"b`: `p\w`}))
	ch, _ := d.Step(nil)
	c := &DigestClient{User: `a"b`, Password: `p\w`}
	rsp, err := c.Respond(ch)
	if err != nil {
		t.Fatal(err)
	}
	final, err := d.Step(rsp)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(final); err != nil {
		t.Fatal(err)
	}
	if err := c.Verify([]byte("rspauth=00000000000000000000000000000000")); err == nil {
		t.Fatal("a forged rspauth verified")
	}
}
