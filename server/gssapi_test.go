package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A KDC-less Kerberos service: the node's keytab and a ticket for it made
// as a KDC would, with the service key (compat-tests/gssapi_test.go runs
// the same against a real KDC and ZooKeeper).
const gssRealm = "NODE.TEST"

// withGSSAPI writes a keytab for zookeeper/localhost and a JAAS
// Krb5LoginModule naming it; it returns the option and a source of
// clients holding a ticket for principal under key password pw.
func withGSSAPI(t testing.TB, pw string) (func(*Config), func(user string) *sasl.GSSAPIClient) {
	dir := t.TempDir()
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", gssRealm, "service-password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ktPath := filepath.Join(dir, "zk.keytab")
	jaas := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(ktPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true keyTab=%q storeKey=true\n  principal=\"zookeeper/localhost@%s\";\n};\n", ktPath, gssRealm)
	if err := os.WriteFile(jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The tickets' key: the service's, or another one (a stale keytab).
	tktKT := keytab.New()
	if err := tktKT.AddEntry("zookeeper/localhost", gssRealm, pw, time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	opt := func(c *Config) {
		c.Auth.JAASFile = jaas
		c.Auth.AuthProviders = []string{config.SASLProvider}
		c.Auth.SASLSuperUsers = []string{"admin@" + gssRealm}
	}
	newClient := func(user string) *sasl.GSSAPIClient {
		now := time.Now().UTC()
		cname := types.NewPrincipalName(1, user)
		tkt, key, err := messages.NewTicket(cname, gssRealm, types.NewPrincipalName(2, "zookeeper/localhost"), gssRealm,
			types.NewKrbFlags(), tktKT, etypeID.AES256_CTS_HMAC_SHA1_96, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return &sasl.GSSAPIClient{CName: cname, Realm: gssRealm, Ticket: tkt, SessionKey: key}
	}
	return opt, newClient
}

// gssLogin runs the exchange; it returns the last reply's error code.
func (c *testClient) gssLogin(g *sasl.GSSAPIClient, tamper func(step int, tok []byte) []byte) zkproto.ErrCode {
	c.t.Helper()
	tok, err := g.InitialToken()
	if err != nil {
		c.t.Fatal(err)
	}
	for step := 0; ; step++ {
		if tamper != nil {
			tok = tamper(step, tok)
		}
		h, _, answer := c.saslStep(tok)
		if h.Err != zkproto.ErrOK || answer == nil {
			return h.Err
		}
		if tok, err = g.Respond(answer); err != nil {
			c.t.Fatalf("client: %v", err)
		}
	}
}

func TestSASLGSSAPI(t *testing.T) {
	opt, newClient := withGSSAPI(t, "service-password")
	s := startTestServer(t, opt)
	alice := dial(t, s)
	if code := alice.gssLogin(newClient("alice"), nil); code != zkproto.ErrOK {
		t.Fatalf("GSSAPI login: %v", code)
	}
	var ids []string
	for _, id := range alice.whoAmI() {
		ids = append(ids, id.AuthScheme+":"+id.User)
	}
	sort.Strings(ids)
	if strings.Join(ids, " ") != "ip:127.0.0.1 sasl:alice@"+gssRealm {
		t.Fatalf("whoAmI after GSSAPI: %v", ids)
	}
	alice.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/alices", Data: []byte("x"),
		ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth", ID: ""}}}})
	if h, _ := alice.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create with auth ACL: %v", h.Err)
	}
	eve := dial(t, s)
	eve.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/alices"})
	if h, _ := eve.reply(); h.Err != zkproto.ErrNoAuth {
		t.Fatalf("anonymous read: %v, want NoAuth", h.Err)
	}
	admin := dial(t, s)
	if code := admin.gssLogin(newClient("admin"), nil); code != zkproto.ErrOK {
		t.Fatalf("admin login: %v", code)
	}
	admin.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/alices"})
	if h, _ := admin.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("superUser read: %v", h.Err)
	}
}

// TestGSSAPIFailedHandshakesLeakNothing: 1,000 failed GSSAPI exchanges
// (a ticket under a stale key, a truncated AP-REQ, a tampered wrap token)
// each answer AuthFailed and close; nothing is left behind.
func TestGSSAPIFailedHandshakesLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sessions")
	}
	opt, good := withGSSAPI(t, "service-password")
	_, stale := withGSSAPI(t, "an-older-password")
	s := startTestServer(t, func(c *Config) { opt(c); c.TickTime = 100 * time.Millisecond })
	warm := dial(t, s)
	if code := warm.gssLogin(good("alice"), nil); code != zkproto.ErrOK {
		t.Fatalf("warm-up login: %v", code)
	}
	warm.nc.Close()
	time.Sleep(100 * time.Millisecond)
	base := takeLeakBaseline(t)
	const n = 1000
	for i := 0; i < n; i++ {
		c := dial(t, s)
		var code zkproto.ErrCode
		switch i % 3 {
		case 0:
			code = c.gssLogin(stale("alice"), nil)
		case 1:
			code = c.gssLogin(good("alice"), func(step int, b []byte) []byte { return b[:len(b)/3] })
		case 2:
			code = c.gssLogin(good("alice"), func(step int, b []byte) []byte {
				if step == 2 {
					b = append([]byte{}, b...)
					b[len(b)-1] ^= 1
				}
				return b
			})
		}
		if code != zkproto.ErrAuthFailed {
			t.Fatalf("handshake %d: %v, want AuthFailed", i, code)
		}
		if !c.closed(5 * time.Second) {
			t.Fatalf("handshake %d: connection not closed", i)
		}
		c.nc.Close()
	}
	base.check(fmt.Sprintf("%d failed GSSAPI handshakes", n))
}
