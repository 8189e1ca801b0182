package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ZooKeeper's DIGEST-MD5 server identity: the JDK's SaslServer is created
// for protocol "zookeeper" and server name "zk-sasl-md5", which is also the
// only realm it offers.
const (
	Protocol   = "zookeeper"
	ServerName = "zk-sasl-md5"
	Realm      = ServerName
	DigestURI  = Protocol + "/" + ServerName
)

// MaxResponseLen bounds a client's digest-response: RFC 2831 §2.1.2 says
// it must be under 4096 bytes.
const MaxResponseLen = 4096

// ErrAuthFailed wraps every reason an exchange fails; the door answers
// AuthFailed for any of them.
var ErrAuthFailed = errors.New("DIGEST-MD5 authentication failed")

// PasswordLookup returns the password of a user, and whether it exists.
type PasswordLookup func(user string) (string, bool)

// Digest is one connection's DIGEST-MD5 exchange, server side. It is not
// safe for concurrent use (a connection's reader drives it).
type Digest struct {
	lookup PasswordLookup
	step   int
	nonce  string
	user   string
	done   bool
}

// NewDigest starts an exchange whose users come from lookup.
func NewDigest(lookup PasswordLookup) *Digest {
	return &Digest{lookup: lookup}
}

// Complete reports whether the client has authenticated.
func (d *Digest) Complete() bool { return d.done }

// AuthenticationID is the user name the client authenticated as (valid
// once Complete).
func (d *Digest) AuthenticationID() string { return d.user }

// Step evaluates one client token and returns the server's answer, as the
// JDK's SaslServer.evaluateResponse behind ZooKeeper 3.8: the first token
// gets the challenge whatever it holds (observed: a PLAIN initial response
// is answered with the challenge too), the digest-response gets rspauth,
// anything else fails. An error ends the exchange: every later step fails
// too.
func (d *Digest) Step(token []byte) ([]byte, error) {
	d.step++
	switch d.step {
	case 1:
		d.nonce = newNonce()
		return []byte(`realm="` + Realm + `",nonce="` + d.nonce + `",charset=utf-8,algorithm=md5-sess`), nil
	case 2:
		rsp, err := d.verify(token)
		if err != nil {
			d.step = 99
			return nil, err
		}
		d.done = true
		return rsp, nil
	case 3:
		d.step = 99
		return nil, fmt.Errorf("%w: authentication already completed", ErrAuthFailed)
	default:
		return nil, fmt.Errorf("%w: exchange already failed", ErrAuthFailed)
	}
}

// newNonce is 30 random bytes, base64: 40 characters, as the JDK's.
func newNonce() string {
	var b [30]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// verify checks a digest-response (RFC 2831 §2.1.2) and returns
// `rspauth=<hex>`.
func (d *Digest) verify(token []byte) ([]byte, error) {
	fail := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrAuthFailed}, args...)...)
	}
	if len(token) == 0 {
		return fail("empty digest-response")
	}
	if len(token) >= MaxResponseLen {
		return fail("digest-response of %d bytes is over the 4096-byte limit", len(token))
	}
	dirs, err := ParseDirectives(token)
	if err != nil {
		return fail("%v", err)
	}
	get := func(k string) (string, bool) { v, ok := dirs[k]; return v, ok }

	if cs, ok := get("charset"); ok && !strings.EqualFold(cs, "utf-8") {
		return fail("charset %q is not utf-8", cs)
	}
	user, ok := get("username")
	if !ok {
		return fail("no username")
	}
	realm, hasRealm := get("realm")
	if hasRealm && realm != Realm {
		return fail("realm %q is not %q", realm, Realm)
	}
	if n, _ := get("nonce"); n != d.nonce {
		return fail("nonce does not match the challenge's")
	}
	cnonce, ok := get("cnonce")
	if !ok || cnonce == "" {
		return fail("no cnonce")
	}
	nc, _ := get("nc")
	if nc != "00000001" {
		return fail("nonce-count %q is not 00000001", nc)
	}
	qop := "auth"
	if q, ok := get("qop"); ok {
		qop = q
	}
	if qop != "auth" {
		// The challenge offered qop auth only (no qop directive).
		return fail("qop %q was not offered (only auth)", qop)
	}
	uri, ok := get("digest-uri")
	if !ok {
		return fail("no digest-uri")
	}
	if !digestURIMatches(uri) {
		return fail("digest-uri %q is not %s", uri, DigestURI)
	}
	response, ok := get("response")
	if !ok || len(response) != 32 {
		return fail("response is not 32 hex digits")
	}
	authzid, hasAuthzid := get("authzid")

	password, known := d.lookup(user)
	if !known {
		return fail("unknown user %q", user)
	}
	a1 := a1Hash(user, realm, password, d.nonce, cnonce, authzid, hasAuthzid)
	want := kd(a1, d.nonce+":"+nc+":"+cnonce+":"+qop+":"+md5Hex("AUTHENTICATE:"+uri))
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(response)), []byte(want)) != 1 {
		return fail("wrong password for user %q", user)
	}
	d.user = user
	return []byte("rspauth=" + kd(a1, d.nonce+":"+nc+":"+cnonce+":"+qop+":"+md5Hex(":"+uri))), nil
}

// digestURIMatches checks serv-type/host as the JDK does: the service must
// be "zookeeper", the host the server name (case-insensitive).
func digestURIMatches(uri string) bool {
	serv, host, ok := strings.Cut(uri, "/")
	if !ok || serv != Protocol {
		return false
	}
	host, _, _ = strings.Cut(host, "/") // an optional serv-name
	return strings.EqualFold(host, ServerName)
}

// a1Hash is HEX(H(A1)) for md5-sess:
// A1 = H(user:realm:password) ":" nonce ":" cnonce [":" authzid].
func a1Hash(user, realm, password, nonce, cnonce, authzid string, hasAuthzid bool) string {
	h := md5.New()
	h.Write(latin1OrUTF8(user))
	h.Write([]byte(":"))
	h.Write(latin1OrUTF8(realm))
	h.Write([]byte(":"))
	h.Write(latin1OrUTF8(password))
	inner := h.Sum(nil)
	a1 := append(inner, []byte(":"+nonce+":"+cnonce)...)
	if hasAuthzid {
		a1 = append(a1, []byte(":"+authzid)...)
	}
	sum := md5.Sum(a1)
	return hex.EncodeToString(sum[:])
}

func kd(key, data string) string { return md5Hex(key + ":" + data) }

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// latin1OrUTF8 encodes user, realm and password as RFC 2831 (and the JDK)
// do with charset=utf-8: ISO 8859-1 when every character fits, UTF-8
// otherwise.
func latin1OrUTF8(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xFF {
			return []byte(s)
		}
		out = append(out, byte(r))
	}
	return out
}

// ParseDirectives parses a comma-separated list of name=value directives
// (RFC 2831 §7.1's #rule: empty elements and white space allowed, values
// tokens or quoted strings with \ escapes). Names are case-insensitive and
// returned lower case; a repeated directive is an error, as in the JDK.
func ParseDirectives(b []byte) (map[string]string, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("digest-response is not valid UTF-8")
	}
	s := string(b)
	out := map[string]string{}
	i := 0
	skipLWS := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	for {
		skipLWS()
		for i < len(s) && s[i] == ',' {
			i++
			skipLWS()
		}
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		name := strings.ToLower(s[start:i])
		if name == "" {
			return nil, fmt.Errorf("directive without a name at byte %d", start)
		}
		skipLWS()
		if i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("directive %q has no value", name)
		}
		i++
		skipLWS()
		var val string
		if i < len(s) && s[i] == '"' {
			i++
			var vb strings.Builder
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					vb.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				vb.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("directive %q: unterminated quoted value", name)
			}
			val = vb.String()
		} else {
			vs := i
			for i < len(s) && s[i] != ',' {
				i++
			}
			val = strings.TrimRight(s[vs:i], " \t\r\n")
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("directive %q appears twice", name)
		}
		out[name] = val
		skipLWS()
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("directive %q: unexpected %q after its value", name, s[i])
		}
	}
}
