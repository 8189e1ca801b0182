package server

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/zkproto"
)

const saslJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_super="adminsecret"
  user_bob="bobsecret";
};
`

// withSASL configures DIGEST-MD5 users bob and super and the sasl scheme.
func withSASL(t testing.TB, more func(*Config)) func(*Config) {
	path := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(path, []byte(saslJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.Auth.JAASFile = path
		c.Auth.AuthProviders = []string{config.SASLProvider}
		if more != nil {
			more(c)
		}
	}
}

// saslStep sends one token and returns the reply header, the frame's
// length (what its length prefix says) and the token.
func (c *testClient) saslStep(token []byte) (zkproto.ReplyHeader, int, []byte) {
	c.t.Helper()
	x := c.send(zkproto.OpSASL, &zkproto.GetSASLRequest{Token: token})
	frame := c.next()
	d := zkproto.NewDecoder(frame)
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		c.t.Fatal(err)
	}
	if h.Xid != x {
		c.t.Fatalf("SASL reply xid %d, want %d", h.Xid, x)
	}
	var r zkproto.SetSASLResponse
	if err := r.Decode(d); err != nil {
		c.t.Fatalf("SASL reply body: %v (frame %x)", err, frame)
	}
	return h, len(frame), r.Token
}

// saslLogin runs the whole DIGEST-MD5 exchange.
func (c *testClient) saslLogin(user, password string) {
	c.t.Helper()
	h, _, challenge := c.saslStep([]byte{})
	if h.Err != zkproto.ErrOK || h.Zxid != 0 {
		c.t.Fatalf("challenge reply %+v", h)
	}
	cl := &sasl.DigestClient{User: user, Password: password}
	rsp, err := cl.Respond(challenge)
	if err != nil {
		c.t.Fatal(err)
	}
	h, _, final := c.saslStep(rsp)
	if h.Err != zkproto.ErrOK || h.Zxid != 0 {
		c.t.Fatalf("response reply %+v", h)
	}
	if err := cl.Verify(final); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testClient) whoAmI() []zkproto.ClientInfo {
	c.t.Helper()
	c.send(zkproto.OpWhoAmI, nil)
	h, d := c.reply()
	var r zkproto.WhoAmIResponse
	if h.Err != zkproto.ErrOK || r.Decode(d) != nil {
		c.t.Fatalf("whoAmI: %+v", h)
	}
	return r.ClientInfo
}

func TestSASLDigestMD5(t *testing.T) {
	s := startTestServer(t, withSASL(t, func(c *Config) { c.Auth.SASLSuperUsers = []string{"super"} }))
	bob := dial(t, s)
	bob.saslLogin("bob", "bobsecret")
	ids := bob.whoAmI()
	var schemes []string
	for _, id := range ids {
		schemes = append(schemes, id.AuthScheme+":"+id.User)
	}
	sort.Strings(schemes) // order is not significant to clients
	if strings.Join(schemes, " ") != "ip:127.0.0.1 sasl:bob" {
		t.Fatalf("whoAmI after SASL: %v, want ip and sasl:bob", schemes)
	}
	// An auth ACL becomes sasl:bob; others cannot read the node.
	bob.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/secret", Data: []byte("x"),
		ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth", ID: ""}}}})
	if h, _ := bob.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create with auth ACL: %v", h.Err)
	}
	bob.send(zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/secret"})
	h, d := bob.reply()
	var acl zkproto.GetACLResponse
	if h.Err != zkproto.ErrOK || acl.Decode(d) != nil || len(acl.ACL) != 1 || acl.ACL[0].ID != (zkproto.Id{Scheme: "sasl", ID: "bob"}) {
		t.Fatalf("getACL: %v %+v, want sasl:bob", h.Err, acl.ACL)
	}
	anon := dial(t, s)
	anon.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/secret"})
	if h, _ := anon.reply(); h.Err != zkproto.ErrNoAuth {
		t.Fatalf("anonymous read: %v, want NoAuth", h.Err)
	}
	// zookeeper.superUser: the SASL user super reads everything.
	admin := dial(t, s)
	admin.saslLogin("super", "adminsecret")
	admin.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/secret"})
	if h, _ := admin.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("super read: %v", h.Err)
	}
}

// TestSASLFailuresAnswerAuthFailedAndClose: a wrong password, an unknown
// user, another mechanism's token, a truncated, empty or garbage response —
// each gets what ZooKeeper 3.8 sends: the request's xid, zxid 0,
// AuthFailed and a null token (a 20-byte frame), then the connection
// closes.
func TestSASLFailuresAnswerAuthFailedAndClose(t *testing.T) {
	s := startTestServer(t, withSASL(t, nil))
	respond := func(user, pw string) func([]byte) []byte {
		return func(ch []byte) []byte {
			r, err := (&sasl.DigestClient{User: user, Password: pw}).Respond(ch)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	cases := map[string]struct {
		first  []byte              // nil: the empty token
		second func([]byte) []byte // the response to the challenge
	}{
		"wrong password": {second: respond("bob", "nope")},
		"unknown user":   {second: respond("eve", "bobsecret")},
		// PLAIN's initial response gets the challenge (as from ZooKeeper),
		// and fails as the response.
		"PLAIN":          {first: []byte("\x00bob\x00bobsecret"), second: func([]byte) []byte { return []byte("\x00bob\x00bobsecret") }},
		"empty response": {second: func([]byte) []byte { return []byte{} }},
		"truncated":      {second: func(ch []byte) []byte { r := respond("bob", "bobsecret")(ch); return r[:len(r)/3] }},
		"garbage":        {second: func([]byte) []byte { return []byte{0xff, 0, 0x80} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, s)
			first := tc.first
			if first == nil {
				first = []byte{}
			}
			h, _, ch := c.saslStep(first)
			if h.Err != zkproto.ErrOK {
				t.Fatalf("challenge: %v", h.Err)
			}
			h, n, tok := c.saslStep(tc.second(ch))
			if h.Err != zkproto.ErrAuthFailed || h.Zxid != 0 || n != 20 || tok != nil {
				t.Fatalf("reply %+v, %d bytes, token %q; want AuthFailed, zxid 0, 20 bytes, null token", h, n, tok)
			}
			if !c.closed(5 * time.Second) {
				t.Fatal("connection still open after AuthFailed")
			}
		})
	}
}

// TestSASLNullTokenClosesWithoutReply: a null token (length -1) closes the
// connection without a reply, as ZooKeeper 3.8 (which fails on it before
// its SASL server sees it).
func TestSASLNullTokenClosesWithoutReply(t *testing.T) {
	s := startTestServer(t, withSASL(t, nil))
	c := dial(t, s)
	c.send(zkproto.OpSASL, &zkproto.GetSASLRequest{Token: nil})
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if f, err := c.fr.Next(); err == nil {
		t.Fatalf("got a reply %x, want the connection closed", f)
	}
}

// TestSASLRequired: with zookeeper.sessionRequireClientSASLAuth, a request
// before SASL gets SessionClosedRequireSASLAuth and the connection closes;
// a failed SASL exchange answers that code too; after SASL, requests work.
func TestSASLRequired(t *testing.T) {
	s := startTestServer(t, withSASL(t, func(c *Config) { c.Auth.SASLRequired = true }))
	c := dial(t, s)
	x := c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if h, _ := c.reply(); h.Xid != x || h.Err != zkproto.ErrSessionClosedRequireSASLAuth || h.Zxid != 0 {
		t.Fatalf("unauthenticated exists: %+v, want SessionClosedRequireSASLAuth", h)
	}
	if !c.closed(5 * time.Second) {
		t.Fatal("connection still open")
	}
	bad := dial(t, s)
	bad.saslStep([]byte{})
	if h, _, _ := bad.saslStep([]byte("x=y")); h.Err != zkproto.ErrSessionClosedRequireSASLAuth {
		t.Fatalf("failed SASL when required: %v", h.Err)
	}
	good := dial(t, s)
	good.saslLogin("bob", "bobsecret")
	good.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if h, _ := good.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("exists after SASL: %v", h.Err)
	}
}

// TestSASLWithoutJAAS: a server with no JAAS file answers a SASL token OK
// with a null token, as a ZooKeeper without a Server section does.
func TestSASLWithoutJAAS(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	h, _, tok := c.saslStep([]byte{})
	if h.Err != zkproto.ErrOK || tok != nil {
		t.Fatalf("%+v %q", h, tok)
	}
}

// TestSASLStalledHandshakeEndsWithSession: a client that takes the
// challenge and goes silent holds its connection only until its session
// expires.
func TestSASLStalledHandshakeEndsWithSession(t *testing.T) {
	s := startTestServer(t, withSASL(t, func(c *Config) { c.TickTime = 100 * time.Millisecond }))
	c := dial(t, s) // asks 30 s, gets maxSessionTimeout = 2 s
	c.saslStep([]byte{})
	if !c.closed(15 * time.Second) {
		t.Fatal("a stalled SASL client still connected after its session timeout")
	}
}

// TestFailedHandshakesLeakNothing: 1,000 failed SASL handshakes leave the
// node's goroutines and file descriptors where they were.
func TestFailedHandshakesLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sessions")
	}
	s := startTestServer(t, withSASL(t, func(c *Config) { c.TickTime = 100 * time.Millisecond }))
	warm := dial(t, s)
	warm.saslLogin("bob", "bobsecret")
	warm.nc.Close()
	time.Sleep(100 * time.Millisecond)
	base := takeLeakBaseline(t)
	const n = 1000
	for i := 0; i < n; i++ {
		c := dial(t, s)
		switch i % 3 {
		case 0: // wrong password
			_, _, ch := c.saslStep([]byte{})
			r, _ := (&sasl.DigestClient{User: "bob", Password: "x"}).Respond(ch)
			c.send(zkproto.OpSASL, &zkproto.GetSASLRequest{Token: r})
		case 1: // a null token: closed without a reply
			c.send(zkproto.OpSASL, &zkproto.GetSASLRequest{Token: nil})
		case 2: // a truncated record: the token's length says more than follows
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], 100)
			c.xid++
			c.write(&zkproto.RequestHeader{Xid: c.xid, Type: zkproto.OpSASL}, rawBytes(b[:]))
		}
		if !c.closed(5 * time.Second) {
			t.Fatalf("handshake %d: connection not closed", i)
		}
		c.nc.Close()
	}
	base.check(fmt.Sprintf("%d failed handshakes", n))
}

type rawBytes []byte

func (r rawBytes) Encode(e *zkproto.Encoder) { e.Raw(r) }
func (r rawBytes) Decode(*zkproto.Decoder) error {
	return nil
}

// leakBaseline is this process's goroutines and file descriptors before a
// run of failed handshakes.
type leakBaseline struct {
	t         testing.TB
	g, fd     int
	startedAt time.Time
}

func takeLeakBaseline(t testing.TB) leakBaseline {
	return leakBaseline{t: t, g: runtime.NumGoroutine(), fd: openFDs(t), startedAt: time.Now()}
}

// check waits (bounded) for goroutines and fds to come back near the
// baseline and fails the test if they do not: what handshakes failed
// must leave nothing behind.
func (b leakBaseline) check(what string) {
	b.t.Helper()
	elapsed := time.Since(b.startedAt)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (runtime.NumGoroutine() > b.g+10 || openFDs(b.t) > b.fd+5) {
		time.Sleep(50 * time.Millisecond)
	}
	g, fd := runtime.NumGoroutine(), openFDs(b.t)
	b.t.Logf("%s in %v; goroutines %d → %d, fds %d → %d", what, elapsed, b.g, g, b.fd, fd)
	if g > b.g+10 || fd > b.fd+5 {
		b.t.Fatalf("leak after %s: goroutines %d → %d, fds %d → %d", what, b.g, g, b.fd, fd)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// SASL over TLS with a client certificate: whoAmI holds all three
// identities (x509, sasl, ip), as ZooKeeper 3.8 was observed to answer,
// and with SASL required the certificate alone does not let a client in.
func TestSASLOverTLS(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, withSASL(t, func(c *Config) {
		c.TLS.Client = f.settings("need")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
		c.Auth.SASLRequired = true
	}))
	cert := f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "bob"))
	c := dialTLS(t, s.zk.SecureAddr(), f.clientConfig(cert))
	c.saslLogin("bob", "bobsecret")
	if got := strings.Join(whoAmI(t, c), " "); got != "ip:127.0.0.1 sasl:bob x509:CN=bob" {
		t.Fatalf("whoAmI over TLS after SASL: %s, want ip, sasl and x509 ids", got)
	}
	only := dialTLS(t, s.zk.SecureAddr(), f.clientConfig(cert))
	x := only.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if h, _ := only.reply(); h.Xid != x || h.Err != zkproto.ErrSessionClosedRequireSASLAuth {
		t.Fatalf("a certificate without SASL when SASL is required: %+v", h)
	}
}
