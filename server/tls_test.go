package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/client"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/zkproto"
)

// tlsFixture is a CA with a server certificate and stores on disk.
type tlsFixture struct {
	t        *testing.T
	dir      string
	ca       *tlstest.CA
	keyStore string
	trust    string
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	f := &tlsFixture{t: t, dir: t.TempDir()}
	var err error
	if f.ca, err = tlstest.NewCA("zkbridge test CA"); err != nil {
		t.Fatal(err)
	}
	srv, err := f.ca.Issue(tlstest.Options{CN: "zkbridge server"})
	if err != nil {
		t.Fatal(err)
	}
	if f.keyStore, err = srv.WritePKCS12KeyStore(f.dir, "server.p12", "storepw"); err != nil {
		t.Fatal(err)
	}
	if f.trust, err = f.ca.WritePEM(f.dir, "ca.pem"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *tlsFixture) settings(clientAuth string) tlsconf.Settings {
	return tlsconf.Settings{
		KeyStore:   tlsconf.Store{Location: f.keyStore, Password: "storepw"},
		TrustStore: tlsconf.Store{Location: f.trust},
		ClientAuth: clientAuth,
	}
}

// clientCert issues a client certificate with the given raw subject.
func (f *tlsFixture) clientCert(rdns ...[]tlstest.AVA) tls.Certificate {
	f.t.Helper()
	subject, err := tlstest.Name(rdns...)
	if err != nil {
		f.t.Fatal(err)
	}
	leaf, err := f.ca.Issue(tlstest.Options{RawSubject: subject})
	if err != nil {
		f.t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leaf.Cert.Raw}, PrivateKey: leaf.Key, Leaf: leaf.Cert}
}

func (f *tlsFixture) clientConfig(certs ...tls.Certificate) *tls.Config {
	_, pool, err := loadPool(f.trust)
	if err != nil {
		f.t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: certs, MinVersion: tls.VersionTLS12}
}

func loadPool(path string) (any, *x509.CertPool, error) {
	pool, _, err := tlsconf.LoadTrustStore(tlsconf.Store{Location: path})
	return nil, pool, err
}

// dialTLS opens a session over TLS; it fails the test if the handshake or
// the session does not come up.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *testClient {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	return sessionOver(t, nc)
}

func sessionOver(t *testing.T, nc net.Conn) *testClient {
	t.Helper()
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	t.Cleanup(func() { nc.Close() })
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(c.next(), &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	c.sid = resp.SessionID
	return c
}

func whoAmI(t *testing.T, c *testClient) []string {
	t.Helper()
	c.send(zkproto.OpWhoAmI, nil)
	h, d := c.reply()
	if h.Err != zkproto.ErrOK {
		t.Fatalf("whoAmI: %v", h.Err)
	}
	var r zkproto.WhoAmIResponse
	if err := r.Decode(d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ci := range r.ClientInfo {
		out = append(out, ci.AuthScheme+":"+ci.User)
	}
	sort.Strings(out)
	return out
}

var (
	printable, utf8 = asn1.TagPrintableString, asn1.TagUTF8String
	oneAVA          = func(oid asn1.ObjectIdentifier, tag int, v string) []tlstest.AVA {
		return []tlstest.AVA{{OID: oid, Tag: tag, Value: v}}
	}
)

// TestClientTLSPortsAndX509 runs a node with a plaintext-and-TLS unified
// client port and a TLS-only secure port, clientAuth=want, and checks who
// gets in, as whom, and what x509 ACLs let them do.
func TestClientTLSPortsAndX509(t *testing.T) {
	f := newTLSFixture(t)
	adminCert := f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "admin"))
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("want")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
		c.TLS.PortUnification = true
		c.TLS.X509SuperUser = "CN=admin"
	})
	secure := s.zk.SecureAddr()
	if secure == "" || secure == s.ClientAddr() {
		t.Fatalf("secure address %q beside client address %q", secure, s.ClientAddr())
	}
	alice := f.clientCert(
		oneAVA(tlstest.OIDCountry, printable, "US"),
		oneAVA(tlstest.OIDOrganization, utf8, "Acme, Inc."),
		oneAVA(tlstest.OIDOrgUnit, utf8, "Platform"),
		oneAVA(tlstest.OIDOrgUnit, utf8, "ZK Team"),
		oneAVA(tlstest.OIDCommonName, utf8, "Älice"))
	aliceDN := `CN=Älice,OU=ZK Team,OU=Platform,O=Acme\, Inc.,C=US`
	bob := f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "bob"))

	// The secure port: the identity is the Java form of the subject.
	a := dialTLS(t, secure, f.clientConfig(alice))
	if got, want := whoAmI(t, a), []string{"ip:127.0.0.1", "x509:" + aliceDN}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("whoAmI over TLS = %v, want %v", got, want)
	}
	// x509 ACL: only alice (and the super user) may read.
	acl := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "x509", ID: aliceDN}}}
	a.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/alice", Data: []byte("secret"), ACL: acl})
	if h, _ := a.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create with an x509 ACL: %v", h.Err)
	}
	a.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/alice-auth", ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth"}}}})
	if h, _ := a.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create with an auth ACL: %v", h.Err)
	}
	a.send(zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/alice-auth"})
	if h, d := a.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("getACL: %v", h.Err)
	} else {
		var r zkproto.GetACLResponse
		if err := r.Decode(d); err != nil || len(r.ACL) != 1 || r.ACL[0].ID != (zkproto.Id{Scheme: "x509", ID: aliceDN}) {
			t.Errorf("auth ACL became %+v, want x509:%s", r.ACL, aliceDN)
		}
	}
	read := func(c *testClient) zkproto.ErrCode {
		c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/alice"})
		h, _ := c.reply()
		return h.Err
	}
	if code := read(a); code != zkproto.ErrOK {
		t.Errorf("alice reading her node: %v", code)
	}
	if code := read(dialTLS(t, secure, f.clientConfig(bob))); code != zkproto.ErrNoAuth {
		t.Errorf("bob reading alice's node: %v, want NoAuth", code)
	}
	su := dialTLS(t, s.ClientAddr(), f.clientConfig(adminCert)) // TLS on the unified port
	if code := read(su); code != zkproto.ErrOK {
		t.Errorf("the x509 super user reading alice's node: %v", code)
	}
	if got := whoAmI(t, su); strings.Join(got, "|") != "ip:127.0.0.1|super:|x509:CN=admin" {
		t.Errorf("super user's whoAmI = %v", got)
	}
	// want: no certificate is fine, and gives no x509 identity.
	anon := dialTLS(t, secure, f.clientConfig())
	if got := whoAmI(t, anon); strings.Join(got, "|") != "ip:127.0.0.1" {
		t.Errorf("whoAmI without a certificate = %v", got)
	}
	if code := read(anon); code != zkproto.ErrNoAuth {
		t.Errorf("anonymous TLS client reading alice's node: %v", code)
	}
	// Unified port: plaintext sessions and four-letter words still work.
	if code := read(dial(t, s)); code != zkproto.ErrNoAuth {
		t.Errorf("plaintext client on the unified port: %v, want NoAuth", code)
	}
	if out := fourLetterWord(t, s.ClientAddr(), "ruok"); out != "imok" {
		t.Errorf("ruok on the unified port: %q", out)
	}
	// A certificate from another CA is refused.
	other, _ := tlstest.NewCA("another CA")
	stranger, _ := other.Issue(tlstest.Options{CN: "stranger"})
	strangerCert := tls.Certificate{Certificate: [][]byte{stranger.Cert.Raw}, PrivateKey: stranger.Key}
	strangerCfg := f.clientConfig()
	// Go's client would not offer a certificate the server's CA list does
	// not name; a Java client may. Force it.
	strangerCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil }
	if err := tlsSessionFails(secure, strangerCfg); err != nil {
		t.Error(err)
	}
	// A plaintext ConnectRequest on the secure port: closed at once, no bytes.
	nc, err := net.DialTimeout("tcp", secure, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &testClient{t: t, nc: nc}
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 64)); n != 0 || !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("plaintext on the secure port: read %d bytes, %v; want a close with nothing", n, err)
	}
}

// TestClientAuthNeed refuses a TLS client without a certificate.
func TestClientAuthNeed(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("") // ZooKeeper's default: need
		c.TLS.SecureClientAddr = "127.0.0.1:0"
	})
	if err := tlsSessionFails(s.zk.SecureAddr(), f.clientConfig()); err != nil {
		t.Error(err)
	}
	// TLS 1.2, as ZooKeeper 3.8's Java client speaks it, is accepted.
	cfg := f.clientConfig(f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "client")))
	cfg.MaxVersion = tls.VersionTLS12
	c := dialTLS(t, s.zk.SecureAddr(), cfg)
	if got := whoAmI(t, c); strings.Join(got, "|") != "ip:127.0.0.1|x509:CN=client" {
		t.Errorf("whoAmI = %v", got)
	}
}

// tlsSessionFails returns nil if no session can be opened: the handshake
// or the first read fails (TLS 1.3 reports a refused client certificate
// only then).
func tlsSessionFails(addr string, cfg *tls.Config) error {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil
	}
	defer nc.Close()
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
	e.FinishFrame(off)
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(e.Bytes()); err != nil {
		return nil
	}
	if _, err := nc.Read(make([]byte, 64)); err != nil {
		return nil
	}
	return errors.New("a session opened; want the TLS handshake refused")
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// TestNativeAndAdminTLS: with ssl.* set, the native gRPC port speaks TLS
// with the same certificate and clientAuth, and admin.forceHttps puts the
// admin port on HTTPS; the Go client dials with the CLI's TLS files.
func TestNativeAndAdminTLS(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("need")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
		c.NativeAddr = "127.0.0.1:0"
		c.AdminDisabled = false
		c.AdminAddr = "127.0.0.1:0"
		c.TLS.AdminHTTPS = true
	})
	leaf, err := f.ca.Issue(tlstest.Options{CN: "native client"})
	if err != nil {
		t.Fatal(err)
	}
	clientStore, err := leaf.WritePEMKeyStore(t.TempDir(), "client.pem")
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := tlsconf.ClientFiles{CA: f.trust, Cert: clientStore}.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, []string{s.NativeAddr()}, client.WithTLS(withCert))
	if err != nil {
		t.Fatalf("native dial over TLS: %v", err)
	}
	defer cl.Close()
	if _, err := cl.Put(ctx, "/over-tls", []byte("v")); err != nil {
		t.Fatalf("native put over TLS: %v", err)
	}
	// Plaintext, and TLS without the client certificate clientAuth=need
	// asks for, are refused.
	noCert, _ := tlsconf.ClientFiles{CA: f.trust}.Config()
	for name, opt := range map[string]client.Option{"plaintext": client.WithTLS(nil), "no client certificate": client.WithTLS(noCert)} {
		c2, err := client.Dial(ctx, []string{s.NativeAddr()}, opt, client.WithDialTimeout(2*time.Second), client.WithFailoverWindow(2*time.Second))
		if err == nil {
			_, err = c2.Status(ctx)
			c2.Close()
		}
		if err == nil {
			t.Errorf("native API %s: a call went through", name)
		}
	}
	// Admin over HTTPS.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: withCert}}
	resp, err := hc.Get("https://" + s.AdminAddr() + "/commands/ruok")
	if err != nil {
		t.Fatalf("admin over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("admin over HTTPS: %s", resp.Status)
	}
}

// TestCertificateRotation replaces the key store and the trust store of a
// running node: new handshakes get the new certificate and trust only the
// new CA, without a restart.
func TestCertificateRotation(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("need")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
	})
	addr := s.zk.SecureAddr()
	oldClient := f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "old client"))
	c := dialTLS(t, addr, f.clientConfig(oldClient))
	if got := c.nc.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName; got != "zkbridge server" {
		t.Fatalf("server certificate before rotation: %q", got)
	}

	newCA, err := tlstest.NewCA("rotated CA")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := newCA.Issue(tlstest.Options{CN: "rotated server"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.WritePKCS12KeyStore(f.dir, "server.p12", "storepw"); err != nil {
		t.Fatal(err)
	}
	if _, err := newCA.WritePEM(f.dir, "ca.pem"); err != nil {
		t.Fatal(err)
	}
	newLeaf, err := newCA.Issue(tlstest.Options{CN: "new client"})
	if err != nil {
		t.Fatal(err)
	}
	newPool := x509.NewCertPool()
	newPool.AddCert(newCA.Cert)
	newCfg := &tls.Config{RootCAs: newPool, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{{Certificate: [][]byte{newLeaf.Cert.Raw}, PrivateKey: newLeaf.Key}}}
	// The node looks at its files at most once a second: poll.
	deadline := time.Now().Add(15 * time.Second)
	for {
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, newCfg)
		if err == nil {
			nc.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated certificate was not served within 15 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	nc := dialTLS(t, addr, newCfg)
	if got := whoAmI(t, nc); strings.Join(got, "|") != "ip:127.0.0.1|x509:CN=new client" {
		t.Errorf("whoAmI after rotation = %v", got)
	}
	// The old CA's clients are no longer trusted; the session opened
	// before the rotation lives on.
	oldCfg := f.clientConfig(oldClient)
	oldCfg.InsecureSkipVerify = true // the server's new certificate is not the old CA's
	oldCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &oldClient, nil }
	if err := tlsSessionFails(addr, oldCfg); err != nil {
		t.Errorf("a client of the old CA after rotation: %v", err)
	}
	if got := whoAmI(t, c); strings.Join(got, "|") != "ip:127.0.0.1|x509:CN=old client" {
		t.Errorf("the session opened before the rotation: whoAmI = %v", got)
	}
}

// TestTLSOnlyClientPort: a zoo.cfg with secureClientPort and no
// clientPort has one client port, TLS only.
func TestTLSOnlyClientPort(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("none")
		c.TLS.ClientPortTLS = true
	})
	if s.SecureClientAddr() != s.ClientAddr() {
		t.Fatalf("secure address %q, client address %q: want one TLS port", s.SecureClientAddr(), s.ClientAddr())
	}
	c := dialTLS(t, s.ClientAddr(), f.clientConfig())
	if got := whoAmI(t, c); strings.Join(got, "|") != "ip:127.0.0.1" {
		t.Errorf("whoAmI with clientAuth=none = %v", got)
	}
	nc, err := net.DialTimeout("tcp", s.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _ := io.Copy(io.Discard, nc); n != 0 {
		t.Errorf("a plaintext four-letter word on the TLS-only port got %d bytes back", n)
	}
}

// TestFailedHandshakesLeaveNothing: hundreds of refused TLS clients (no
// certificate under need, garbage, plaintext, a hang-up mid-handshake)
// leave no connection, goroutine or file descriptor behind.
func TestFailedHandshakesLeaveNothing(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("need")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
	})
	addr := s.zk.SecureAddr()
	settle := func() (int, int) {
		time.Sleep(200 * time.Millisecond)
		return runtime.NumGoroutine(), openFDs(t)
	}
	// One good session first, so lazily started goroutines count in the
	// baseline.
	dialTLS(t, addr, f.clientConfig(f.clientCert(oneAVA(tlstest.OIDCommonName, utf8, "warm"))))
	g0, fd0 := settle()
	noCert := f.clientConfig()
	for i := 0; i < 300; i++ {
		switch i % 3 {
		case 0: // no client certificate: refused
			_ = tlsSessionFails(addr, noCert)
		case 1: // not TLS at all
			if nc, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
				_, _ = nc.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
				_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(io.Discard, nc)
				nc.Close()
			}
		case 2: // a ClientHello, then the client hangs up
			if nc, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
				tc := tls.Client(nc, noCert)
				_ = tc.SetDeadline(time.Now().Add(time.Millisecond))
				_ = tc.Handshake()
				nc.Close()
			}
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		g, fd := settle()
		if s.zk.Connections() <= 1 && g <= g0+5 && fd <= fd0+5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 300 failed handshakes: %d connections, goroutines %d (before %d), fds %d (before %d)", s.zk.Connections(), g, g0, fd, fd0)
		}
	}
}

// TestMaxClientCnxnsPerListener: maxClientCnxns counts per port, as
// ZooKeeper's connection factories do: with the plaintext port full, the
// secure port still takes a session.
func TestMaxClientCnxnsPerListener(t *testing.T) {
	f := newTLSFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("none")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
		c.MaxClientCnxns = 2
	})
	dial(t, s)
	dial(t, s)
	c := dialTLS(t, s.zk.SecureAddr(), f.clientConfig())
	if got := whoAmI(t, c); len(got) != 1 {
		t.Errorf("TLS session beside a full plaintext port: whoAmI %v", got)
	}
	nc, err := net.DialTimeout("tcp", s.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _ := io.Copy(io.Discard, nc); n != 0 {
		t.Errorf("a third plaintext connection got %d bytes; want it closed", n)
	}
}
