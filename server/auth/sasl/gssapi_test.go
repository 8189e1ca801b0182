package sasl

import (
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkbridge/zkbridge/server/auth/sasl/kdctest"
)

// kdcRealm is a throwaway KDC with the service zookeeper/localhost and
// the client alice.
type kdcRealm struct {
	kdc       *kdctest.KDC
	serviceKT string
	aliceKT   string
}

func startRealm(t *testing.T) *kdcRealm {
	t.Helper()
	if m := kdctest.Missing(); m != "" {
		t.Skipf("Kerberos KDC binaries absent (%s): run scripts/install-zookeeper.sh", m)
	}
	k, err := kdctest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	r := &kdcRealm{kdc: k}
	if r.serviceKT, err = k.AddPrincipal("zookeeper/localhost"); err != nil {
		t.Fatal(err)
	}
	if _, err = k.AddPrincipal("zookeeper/otherhost"); err != nil {
		t.Fatal(err)
	}
	if r.aliceKT, err = k.AddPrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	return r
}

// gssClient logs alice in with gokrb5 and gets a ticket for spn.
func (r *kdcRealm) gssClient(t *testing.T, spn string) *GSSAPIClient {
	t.Helper()
	cfg, err := config.Load(r.kdc.Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(r.aliceKT)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithKeytab("alice", kdctest.Realm, kt, cfg, client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatal(err)
	}
	tkt, key, err := cl.GetServiceTicket(spn)
	if err != nil {
		t.Fatal(err)
	}
	return &GSSAPIClient{CName: types.NewPrincipalName(1, "alice"), Realm: kdctest.Realm, Ticket: tkt, SessionKey: key}
}

func (r *kdcRealm) service(t *testing.T, keytabPath string) *Kerberos {
	t.Helper()
	k, err := LoadKerberos(LoginModule{Class: KerberosLoginModule, Options: map[string]string{
		"keyTab": keytabPath, "principal": "zookeeper/localhost@" + kdctest.Realm, "useKeyTab": "true", "storeKey": "true",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// exchange runs a whole exchange and reports the server's error, if any.
func exchange(srv *GSSAPI, c *GSSAPIClient, tamper func(step int, tok []byte) []byte) error {
	tok, err := c.InitialToken()
	if err != nil {
		return err
	}
	for step := 0; ; step++ {
		if tamper != nil {
			tok = tamper(step, tok)
		}
		answer, err := srv.Step(tok)
		if err != nil {
			return err
		}
		if srv.Complete() {
			if answer != nil {
				return errNonNilFinal
			}
			return nil
		}
		if tok, err = c.Respond(answer); err != nil {
			return err
		}
	}
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errNonNilFinal = testErr("final server token is not null (ZooKeeper answers null)")

func TestGSSAPIExchange(t *testing.T) {
	r := startRealm(t)
	svc := r.service(t, r.serviceKT)

	c := r.gssClient(t, "zookeeper/localhost")
	c.AuthzID = "someone-else"
	srv := NewGSSAPI(svc)
	if err := exchange(srv, c, nil); err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if got := srv.AuthenticationID(); got != "alice@"+kdctest.Realm {
		t.Fatalf("authentication id %q", got)
	}
	if srv.AuthorizationID() != "someone-else" {
		t.Fatalf("authorization id %q", srv.AuthorizationID())
	}
	if _, err := srv.Step([]byte{}); err == nil {
		t.Fatal("a token after completion was accepted")
	}

	// The same AP-REQ twice: a replay.
	c = r.gssClient(t, "zookeeper/localhost")
	first, err := c.InitialToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGSSAPI(svc).Step(first); err != nil {
		t.Fatal(err)
	}
	if _, err := NewGSSAPI(svc).Step(first); err == nil {
		t.Fatal("a replayed AP-REQ was accepted")
	}

	cases := []struct {
		name   string
		svc    *Kerberos
		spn    string
		tamper func(int, []byte) []byte
		want   string
	}{
		{"ticket for another service", svc, "zookeeper/otherhost", nil, "ticket for zookeeper/otherhost"},
		{"flipped AP-REQ byte", svc, "zookeeper/localhost", flipAt(0, -20), ""},
		{"truncated AP-REQ", svc, "zookeeper/localhost", func(s int, b []byte) []byte {
			if s == 0 {
				return b[:len(b)/2]
			}
			return b
		}, "context token"},
		{"data instead of the empty token", svc, "zookeeper/localhost", func(s int, b []byte) []byte {
			if s == 1 {
				return []byte{1}
			}
			return b
		}, "expected an empty token"},
		{"flipped wrap checksum", svc, "zookeeper/localhost", flipAt(2, -1), "checksum mismatch"},
		{"flipped wrap payload", svc, "zookeeper/localhost", flipAt(2, 17), "checksum mismatch"},
	}
	for _, tc := range cases {
		err := exchange(NewGSSAPI(tc.svc), r.gssClient(t, tc.spn), tc.tamper)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}

	// A stale service keytab: the principal was re-keyed since.
	if _, err := r.kdc.Rekey("zookeeper/localhost", "new.keytab"); err != nil {
		t.Fatal(err)
	}
	if err := exchange(NewGSSAPI(svc), r.gssClient(t, "zookeeper/localhost"), nil); err == nil || !strings.Contains(err.Error(), "AP-REQ rejected") {
		t.Errorf("stale keytab: err = %v", err)
	}
}

// flipAt flips one byte of the token sent at step (negative: from the end).
func flipAt(step, at int) func(int, []byte) []byte {
	return func(s int, b []byte) []byte {
		if s != step {
			return b
		}
		b = append([]byte{}, b...)
		i := at
		if i < 0 {
			i += len(b)
		}
		b[i] ^= 0x40
		return b
	}
}
