package sasl

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// DigestClient is the client side of ZooKeeper's DIGEST-MD5 exchange, for
// Go callers and tests that authenticate against a ZooKeeper port (the
// ZooKeeper Java client and kazoo's puresasl do the same).
type DigestClient struct {
	User, Password string
	// CNonce is the client nonce; empty: random.
	CNonce string

	a1, uri, nonce, nc, qop string
}

// Respond answers the server's challenge with a digest-response.
func (c *DigestClient) Respond(challenge []byte) ([]byte, error) {
	dirs, err := ParseDirectives(challenge)
	if err != nil {
		return nil, fmt.Errorf("DIGEST-MD5 challenge: %w", err)
	}
	c.nonce = dirs["nonce"]
	if c.nonce == "" {
		return nil, fmt.Errorf("DIGEST-MD5 challenge without a nonce: %q", challenge)
	}
	realm := dirs["realm"]
	if c.CNonce == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		c.CNonce = base64.StdEncoding.EncodeToString(b[:])
	}
	c.uri, c.nc, c.qop = DigestURI, "00000001", "auth"
	c.a1 = a1Hash(c.User, realm, c.Password, c.nonce, c.CNonce, "", false)
	response := kd(c.a1, c.nonce+":"+c.nc+":"+c.CNonce+":"+c.qop+":"+md5Hex("AUTHENTICATE:"+c.uri))
	quote := func(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }
	return []byte(fmt.Sprintf("charset=utf-8,username=%s,realm=%s,nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=%s",
		quote(c.User), quote(realm), quote(c.nonce), c.nc, quote(c.CNonce), quote(c.uri), response, c.qop)), nil
}

// Verify checks the server's rspauth: the server knew the password too.
func (c *DigestClient) Verify(final []byte) error {
	want := "rspauth=" + kd(c.a1, c.nonce+":"+c.nc+":"+c.CNonce+":"+c.qop+":"+md5Hex(":"+c.uri))
	if string(final) != want {
		return fmt.Errorf("DIGEST-MD5: server's rspauth %q does not prove the password", final)
	}
	return nil
}
