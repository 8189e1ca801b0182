package compattests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// TestShellClientConfigurationTLS runs zkbridge shell with zkCli's
// -client-configuration file asking for TLS (PEM or PKCS12 trust store) through a
// TLS endpoint in front of zkbridge's client port: the command works, and
// without the trust store it fails.
func TestShellClientConfigurationTLS(t *testing.T) {
	_, zbAddr := servers(t)
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkbridge-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
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
				s, err := net.Dial("tcp", zbAddr)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c) }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	trust := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(trust, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(good, []byte("zookeeper.client.secure=true\nzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"+
		"zookeeper.ssl.trustStore.location="+trust+"\nzookeeper.ssl.trustStore.type=PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	stdout, stderr, code := runShellWith(addr, []string{"-client-configuration", good}, "ls", "/zookeeper")
	if code != 0 || !strings.Contains(stdout, "config") {
		t.Fatalf("ls over TLS: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Without the trust store the server's certificate is unknown.
	bad := filepath.Join(dir, "untrusted.properties")
	if err := os.WriteFile(bad, []byte("zookeeper.client.secure=true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runShellWith(addr, []string{"-client-configuration", bad, "-timeout", "2000"}, "ls", "/"); code == 0 {
		t.Fatalf("an untrusted server was accepted: %q", stderr)
	}
	// A PKCS12 trust store (what keytool and openssl write) works too.
	p12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{mustParseCert(t, der)}, "changeit")
	if err != nil {
		t.Fatal(err)
	}
	trustP12 := filepath.Join(dir, "ca.p12")
	if err := os.WriteFile(trustP12, p12, 0o600); err != nil {
		t.Fatal(err)
	}
	withP12 := filepath.Join(dir, "pkcs12.properties")
	if err := os.WriteFile(withP12, []byte("zookeeper.client.secure=true\n"+
		"zookeeper.ssl.trustStore.location="+trustP12+"\nzookeeper.ssl.trustStore.password=changeit\nzookeeper.ssl.trustStore.type=PKCS12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runShellWith(addr, []string{"-client-configuration", withP12}, "ls", "/zookeeper"); code != 0 || !strings.Contains(stdout, "config") {
		t.Fatalf("ls over TLS with a PKCS12 trust store: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A JKS store is refused with what to do (the keytool command).
	jksFile := filepath.Join(dir, "ca.jks")
	if err := os.WriteFile(jksFile, []byte{0xfe, 0xed, 0xfe, 0xed}, 0o600); err != nil {
		t.Fatal(err)
	}
	jks := filepath.Join(dir, "jks.properties")
	if err := os.WriteFile(jks, []byte("zookeeper.client.secure=true\nzookeeper.ssl.trustStore.location="+jksFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runShellWith(addr, []string{"-client-configuration", jks}, "ls", "/"); code != 2 || !strings.Contains(stderr, "keytool -importkeystore") {
		t.Fatalf("JKS store: exit %d, %q", code, stderr)
	}
}

func mustParseCert(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
