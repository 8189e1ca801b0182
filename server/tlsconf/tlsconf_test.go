package tlsconf_test

import (
	"crypto/tls"
	"encoding/asn1"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
)

// The expected strings are what ZooKeeper 3.8's X509AuthenticationProvider
// (X500Principal.getName()) reported for the same subjects.
func TestJavaDN(t *testing.T) {
	utf8, printable, ia5 := asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String
	one := func(oid asn1.ObjectIdentifier, tag int, v string) []tlstest.AVA {
		return []tlstest.AVA{{OID: oid, Tag: tag, Value: v}}
	}
	cases := []struct {
		name string
		rdns [][]tlstest.AVA
		want string
	}{
		{"multiple OUs and a comma", [][]tlstest.AVA{
			one(tlstest.OIDCountry, printable, "US"),
			one(tlstest.OIDOrganization, utf8, "Acme, Inc."),
			one(tlstest.OIDOrgUnit, utf8, "Platform"),
			one(tlstest.OIDOrgUnit, utf8, "ZK Team"),
			one(tlstest.OIDCommonName, utf8, "client one"),
		}, `CN=client one,OU=ZK Team,OU=Platform,O=Acme\, Inc.,C=US`},
		{"email by OID with its IA5String bytes", [][]tlstest.AVA{
			one(tlstest.OIDCountry, printable, "US"),
			one(tlstest.OIDCommonName, utf8, "bob"),
			one(tlstest.OIDEmail, ia5, "bob@example.com"),
		}, `1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d,CN=bob,C=US`},
		{"non-ASCII stays as is", [][]tlstest.AVA{
			one(tlstest.OIDOrganization, utf8, "Zürich Büro"),
			one(tlstest.OIDCommonName, utf8, "Jürgen Å"),
		}, `CN=Jürgen Å,O=Zürich Büro`},
		{"special characters and edge spaces", [][]tlstest.AVA{
			one(tlstest.OIDCommonName, utf8, ` a+b=c;"d"<e>#f\ `),
		}, `CN=\ a\+b\=c\;\"d\"\<e\>\#f\\\ `},
		{"a multi-valued RDN keeps its plus", [][]tlstest.AVA{
			{{OID: tlstest.OIDOrgUnit, Tag: utf8, Value: "x"}, {OID: tlstest.OIDCommonName, Tag: utf8, Value: "y"}},
		}, `CN=y+OU=x`}, // DER orders a SET OF; Java keeps that order
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := tlstest.Name(tc.rdns...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tlsconf.JavaDNFromRaw(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("JavaDN = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStoresLoad(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(tlstest.Options{CN: "server"})
	if err != nil {
		t.Fatal(err)
	}
	pemKS, _ := leaf.WritePEMKeyStore(dir, "server.pem")
	p12KS, _ := leaf.WritePKCS12KeyStore(dir, "server.p12", "secret")
	pemTS, _ := ca.WritePEM(dir, "ca.pem")
	p12TS, _ := ca.WritePKCS12TrustStore(dir, "ca.p12", "secret")
	for _, st := range []tlsconf.Store{{Location: pemKS}, {Location: p12KS, Password: "secret"}, {Location: p12KS, Password: "secret", Type: "pkcs12"}} {
		c, err := tlsconf.LoadKeyStore(st)
		if err != nil {
			t.Fatalf("%+v: %v", st, err)
		}
		if c.Leaf.SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 || len(c.Certificate) != 2 {
			t.Errorf("%+v: loaded the wrong certificate or chain", st)
		}
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: p12KS, Password: "wrong"}); err == nil {
		t.Error("a PKCS12 store opened with a wrong password")
	}
	for _, st := range []tlsconf.Store{{Location: pemTS}, {Location: p12TS, Password: "secret"}} {
		_, certs, err := tlsconf.LoadTrustStore(st)
		if err != nil {
			t.Fatalf("%+v: %v", st, err)
		}
		if len(certs) != 1 || !certs[0].Equal(ca.Cert) {
			t.Errorf("%+v: trust store has %d certificates, not the CA", st, len(certs))
		}
	}
	jks := filepath.Join(dir, "server.jks")
	if err := os.WriteFile(jks, []byte{0xfe, 0xed, 0xfe, 0xed}, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = tlsconf.LoadKeyStore(tlsconf.Store{Location: jks})
	if !errors.Is(err, tlsconf.ErrJKS) || !strings.Contains(err.Error(), "keytool -importkeystore") {
		t.Errorf("JKS key store: %v, want ErrJKS with the keytool command", err)
	}
	// The key of one certificate with another's certificate is refused.
	other, _ := ca.Issue(tlstest.Options{CN: "other"})
	mixed := &tlstest.Leaf{Cert: other.Cert, Key: leaf.Key}
	mixedPath, _ := mixed.WritePEMKeyStore(dir, "mixed.pem")
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: mixedPath}); err == nil || !strings.Contains(err.Error(), "does not belong") {
		t.Errorf("mismatched key and certificate: %v", err)
	}
}

func TestSettingsValidation(t *testing.T) {
	dir := t.TempDir()
	ca, _ := tlstest.NewCA("ca")
	leaf, _ := ca.Issue(tlstest.Options{CN: "server"})
	ks, _ := leaf.WritePEMKeyStore(dir, "server.pem")
	ts, _ := ca.WritePEM(dir, "ca.pem")
	base := tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks}, TrustStore: tlsconf.Store{Location: ts}}
	for _, bad := range []func(*tlsconf.Settings){
		func(s *tlsconf.Settings) { s.ClientAuth = "sometimes" },
		func(s *tlsconf.Settings) { s.Protocol = "SSLv3" },
		func(s *tlsconf.Settings) { s.CipherSuites = []string{"TLS_DHE_RSA_WITH_AES_128_CBC_SHA"} },
		func(s *tlsconf.Settings) { s.KeyStore.Location = filepath.Join(dir, "missing.pem") },
	} {
		s := base
		bad(&s)
		if _, err := tlsconf.NewSource(s, "ssl", zerolog.Nop()); err == nil {
			t.Errorf("settings %+v accepted", s)
		}
	}
	s := base
	s.CipherSuites = []string{"TLS_DHE_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
	if _, err := tlsconf.NewSource(s, "ssl", zerolog.Nop()); err != nil {
		t.Errorf("one known suite among unknown ones: %v", err)
	}
}

// TestReload rotates the server certificate and the trusted CA on disk
// and checks that the next handshakes use them, without a restart.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca1, _ := tlstest.NewCA("first CA")
	ca2, _ := tlstest.NewCA("second CA")
	server1, _ := ca1.Issue(tlstest.Options{CN: "server one"})
	client1, _ := ca1.Issue(tlstest.Options{CN: "client one"})
	client2, _ := ca2.Issue(tlstest.Options{CN: "client two"})
	server2, _ := ca2.Issue(tlstest.Options{CN: "server two"})
	ks, _ := server1.WritePEMKeyStore(dir, "server.pem")
	ts, _ := ca1.WritePEM(dir, "ca.pem")
	src, err := tlsconf.NewSource(tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks}, TrustStore: tlsconf.Store{Location: ts}}, "ssl", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	src.SetCheckInterval(0)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", src.ServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Read(make([]byte, 1))
			}()
		}
	}()
	dialWith := func(client *tlstest.Leaf, trust *tlstest.CA) (string, error) {
		dir := t.TempDir()
		cks, _ := client.WritePEMKeyStore(dir, "c.pem")
		cts, _ := trust.WritePEM(dir, "ca.pem")
		csrc, err := tlsconf.NewSource(tlsconf.Settings{KeyStore: tlsconf.Store{Location: cks}, TrustStore: tlsconf.Store{Location: cts}}, "client", zerolog.Nop())
		if err != nil {
			return "", err
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), csrc.ClientConfig(ln.Addr().String()))
		if err != nil {
			return "", err
		}
		defer c.Close()
		// TLS 1.3: the server's verdict on the client certificate arrives
		// with the first read.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			return "", err
		}
		return tlsconf.JavaDN(c.ConnectionState().PeerCertificates[0]), nil
	}
	if got, err := dialWith(client1, ca1); err != nil || got != "CN=server one" {
		t.Fatalf("before rotation: %q, %v", got, err)
	}
	if _, err := dialWith(client2, ca1); err == nil {
		t.Fatal("a client of the second CA was accepted before the rotation")
	}
	// Rotate: new server certificate and the new CA.
	if _, err := server2.WritePEMKeyStore(dir, "server.pem"); err != nil {
		t.Fatal(err)
	}
	if _, err := ca2.WritePEM(dir, "ca.pem"); err != nil {
		t.Fatal(err)
	}
	if got, err := dialWith(client2, ca2); err != nil || got != "CN=server two" {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
	if _, err := dialWith(client1, ca1); err == nil {
		t.Fatal("a client of the old CA was still accepted after the rotation")
	}
	// A broken store file keeps the last good certificate.
	if err := os.WriteFile(ks, []byte("not a key store"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := dialWith(client2, ca2); err != nil || got != "CN=server two" {
		t.Fatalf("after a broken rotation: %q, %v", got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
