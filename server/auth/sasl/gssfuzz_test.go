package sasl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Without a KDC: the service key in an in-memory keytab, a ticket made
// with it as a KDC would, and a client holding that ticket.
const fuzzRealm = "FUZZ.TEST"

func fuzzService(tb testing.TB) (*keytab.Keytab, func() *GSSAPIClient) {
	tb.Helper()
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", fuzzRealm, "service-password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		tb.Fatal(err)
	}
	now := time.Now().UTC()
	cname := types.NewPrincipalName(1, "alice")
	sname := types.NewPrincipalName(2, "zookeeper/localhost")
	tkt, key, err := messages.NewTicket(cname, fuzzRealm, sname, fuzzRealm, types.NewKrbFlags(), kt, etypeID.AES256_CTS_HMAC_SHA1_96, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	return kt, func() *GSSAPIClient {
		return &GSSAPIClient{CName: cname, Realm: fuzzRealm, Ticket: tkt, SessionKey: key}
	}
}

func fuzzKerberos(kt *keytab.Keytab) *Kerberos {
	return &Kerberos{Keytab: kt, Service: types.NewPrincipalName(2, "zookeeper/localhost"), Realm: fuzzRealm, MaxClockSkew: 5 * time.Minute}
}

// TestGSSAPIWithoutKDC: the whole exchange against a ticket made from
// the keytab, and its refusals, without a KDC.
func TestGSSAPIWithoutKDC(t *testing.T) {
	kt, newClient := fuzzService(t)
	srv := NewGSSAPI(fuzzKerberos(kt))
	if err := exchange(srv, newClient(), nil); err != nil {
		t.Fatal(err)
	}
	if srv.AuthenticationID() != "alice@"+fuzzRealm {
		t.Fatalf("authentication id %q", srv.AuthenticationID())
	}
	other := keytab.New()
	if err := other.AddEntry("zookeeper/localhost", fuzzRealm, "another-password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	if err := exchange(NewGSSAPI(fuzzKerberos(other)), newClient(), nil); err == nil {
		t.Fatal("a ticket encrypted under another key was accepted")
	}
	// RC4-HMAC (23) session keys take RFC 4757 tokens, not served.
	rc4 := keytab.New()
	if err := rc4.AddEntry("zookeeper/localhost", fuzzRealm, "service-password", time.Now(), 1, etypeID.RC4_HMAC); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	tkt, key, err := messages.NewTicket(types.NewPrincipalName(1, "alice"), fuzzRealm, types.NewPrincipalName(2, "zookeeper/localhost"), fuzzRealm,
		types.NewKrbFlags(), rc4, etypeID.RC4_HMAC, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c := &GSSAPIClient{CName: types.NewPrincipalName(1, "alice"), Realm: fuzzRealm, Ticket: tkt, SessionKey: key}
	if err := exchange(NewGSSAPI(fuzzKerberos(rc4)), c, nil); err == nil || !strings.Contains(err.Error(), "not served") {
		t.Fatalf("RC4 ticket: err = %v, want not served", err)
	}
}

// FuzzGSSAPIInitialToken: arbitrary first tokens fail cleanly; one that
// passes authenticates the ticket's client and no one else.
func FuzzGSSAPIInitialToken(f *testing.F) {
	kt, newClient := fuzzService(f)
	for i := 0; i < 2; i++ {
		tok, err := newClient().InitialToken()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
	}
	f.Add([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x60, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, token []byte) {
		g := NewGSSAPI(fuzzKerberos(kt))
		answer, err := g.Step(token)
		if err != nil {
			if answer != nil {
				t.Fatalf("an answer with the error %v", err)
			}
			return
		}
		if g.Complete() || g.AuthenticationID() != "alice@"+fuzzRealm {
			t.Fatalf("accepted as %q (complete %v)", g.AuthenticationID(), g.Complete())
		}
	})
}

// FuzzGSSAPIUnwrap: arbitrary wrap tokens fail cleanly or verify under
// the key; what verifies is no longer than the token.
func FuzzGSSAPIUnwrap(f *testing.F) {
	kt, newClient := fuzzService(f)
	c := newClient()
	tok, err := c.InitialToken()
	if err != nil {
		f.Fatal(err)
	}
	srv := NewGSSAPI(fuzzKerberos(kt))
	rep, err := srv.Step(tok)
	if err != nil {
		f.Fatal(err)
	}
	empty, err := c.Respond(rep)
	if err != nil {
		f.Fatal(err)
	}
	offer, err := srv.Step(empty)
	if err != nil {
		f.Fatal(err)
	}
	c.AuthzID = "alice"
	choice, err := c.Respond(offer)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(choice)
	f.Add(offer)
	f.Add(choice[:16])
	key := srv.key
	f.Fuzz(func(t *testing.T, token []byte) {
		msg, err := Unwrap(key, token)
		if err == nil && len(msg) > len(token) {
			t.Fatalf("unwrapped %d bytes from a %d-byte token", len(msg), len(token))
		}
	})
}

// TestLoadKerberos: the JAAS module's keytab and principal, and the
// refusals that keep a node from starting with an unusable Kerberos login.
func TestLoadKerberos(t *testing.T) {
	kt, _ := fuzzService(t)
	path := filepath.Join(t.TempDir(), "zk.keytab")
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mod := func(opts ...string) LoginModule {
		m := LoginModule{Class: KerberosLoginModule, Options: map[string]string{}}
		for i := 0; i+1 < len(opts); i += 2 {
			m.Options[opts[i]] = opts[i+1]
		}
		return m
	}
	k, err := LoadKerberos(mod("keyTab", path, "principal", "zookeeper/localhost@"+fuzzRealm))
	if err != nil {
		t.Fatal(err)
	}
	if k.ServicePrincipal() != "zookeeper/localhost@"+fuzzRealm {
		t.Fatalf("service principal %q", k.ServicePrincipal())
	}
	for _, c := range []struct {
		m    LoginModule
		want string
	}{
		{mod("principal", "zookeeper/localhost@"+fuzzRealm), "without keyTab"},
		{mod("keyTab", path), "without principal"},
		{mod("keyTab", path, "principal", "zookeeper/localhost"), "no @REALM"},
		{mod("keyTab", path, "principal", "zookeeper/otherhost@"+fuzzRealm), "holds no key"},
		{mod("keyTab", path, "principal", "zookeeper/localhost@OTHER.REALM"), "holds no key"},
		{mod("keyTab", path+".missing", "principal", "zookeeper/localhost@"+fuzzRealm), "keytab"},
	} {
		if _, err := LoadKerberos(c.m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.m.Options, err, c.want)
		}
	}
}

// TestDefaultRule: which names ZooKeeper's default rule shortens, and
// the default realm as read from a krb5.conf.
func TestDefaultRule(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "krb5.conf")
	text := "[realms]\n  default_realm = NOT.HERE\n[libdefaults]\n  dns_lookup_kdc = false\n  default_realm = EXAMPLE.COM\n[domain_realm]\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DefaultRealm(conf); got != "EXAMPLE.COM" {
		t.Fatalf("DefaultRealm = %q", got)
	}
	if got := DefaultRealm(conf + ".missing"); got != "" {
		t.Fatalf("DefaultRealm of a missing file = %q", got)
	}
	for name, want := range map[string]bool{
		"bob": true, "alice@EXAMPLE.COM": true, "zk/host@EXAMPLE.COM": true,
		"alice@OTHER.COM": false, "zk/host@OTHER.COM": false, "alice@": false,
	} {
		if got := DefaultRuleMaps(name, "EXAMPLE.COM"); got != want {
			t.Errorf("DefaultRuleMaps(%q) = %v, want %v", name, got, want)
		}
	}
	if DefaultRuleMaps("alice@EXAMPLE.COM", "") {
		t.Error("without a default realm a name with a realm was mapped")
	}
}

// TestUnwrapSealedAndRotated: an initiator's wrap token with
// confidentiality (RFC 4121 section 4.2.4: encrypted message, filler and
// header copy) and one rotated right (RRC, as Windows sends) both unwrap;
// a flipped ciphertext byte does not.
func TestUnwrapSealedAndRotated(t *testing.T) {
	key := types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: []byte("0123456789abcdef0123456789abcdef")}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte{1, 0, 0, 0, 'a', 'l', 'i', 'c', 'e'}
	const seq = 77
	ec := uint16(3) // filler bytes
	plain := append(append(append([]byte{}, msg...), make([]byte, ec)...), wrapHeader(wrapSealed, ec, 0, seq)...)
	_, ct, err := et.EncryptMessage(key.KeyValue, plain, keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		t.Fatal(err)
	}
	sealed := append(wrapHeader(wrapSealed, ec, 0, seq), ct...)
	got, err := Unwrap(key, sealed)
	if err != nil || string(got) != string(msg) {
		t.Fatalf("sealed: %q, %v", got, err)
	}
	// The same rotated right by 28 bytes.
	const rrc = 28
	rot := append(append([]byte{}, ct[len(ct)-rrc:]...), ct[:len(ct)-rrc]...)
	got, err = Unwrap(key, append(wrapHeader(wrapSealed, ec, rrc, seq), rot...))
	if err != nil || string(got) != string(msg) {
		t.Fatalf("sealed, rotated: %q, %v", got, err)
	}
	bad := append([]byte{}, sealed...)
	bad[len(bad)-20] ^= 1
	if _, err := Unwrap(key, bad); err == nil {
		t.Fatal("a tampered sealed token unwrapped")
	}
	// Integrity only, rotated: header | rotate(msg | checksum).
	sum, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, msg...), wrapHeader(0, 0, 0, seq)...), keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		t.Fatal(err)
	}
	body := append(append([]byte{}, msg...), sum[:12]...)
	rot = append(append([]byte{}, body[len(body)-5:]...), body[:len(body)-5]...)
	got, err = Unwrap(key, append(wrapHeader(0, 12, 5, seq), rot...))
	if err != nil || string(got) != string(msg) {
		t.Fatalf("integrity, rotated: %q, %v", got, err)
	}
}
