package compattests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/zkproto"
)

// TLS against the oracle: a real ZooKeeper 3.8 and zkbridge take the same
// zoo.cfg TLS keys and the same certificates (made here, thrown away
// after), and the same clients — a raw protocol client, zkCli.sh on Netty
// with zookeeper.client.secure=true, kazoo with use_ssl — must see the
// same identities, ACL decisions and refusals on both.

const tlsStorePassword = "storepw"

// tlsClientCert is a client certificate with an unusual subject and the
// identity ZooKeeper's x509 provider gives it (X500Principal.getName()).
type tlsClientCert struct {
	name    string
	leaf    *tlstest.Leaf
	pem     string // PEM key store: key and chain
	certPEM string // the certificate alone (kazoo)
	keyPEM  string // the key alone (kazoo)
	p12     string // PKCS12 key store (zkCli)
	dn      string
}

type tlsFiles struct {
	dir    string
	ca     *tlstest.CA
	server string // PKCS12 key store
	trust  string // PEM trust store
	certs  map[string]*tlsClientCert
}

func newTLSFiles(t *testing.T) *tlsFiles {
	t.Helper()
	f := &tlsFiles{dir: t.TempDir(), certs: map[string]*tlsClientCert{}}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f.ca, err = tlstest.NewCA("compat TLS CA")
	must(err)
	srv, err := f.ca.Issue(tlstest.Options{CN: "localhost"})
	must(err)
	f.server, err = srv.WritePKCS12KeyStore(f.dir, "server.p12", tlsStorePassword)
	must(err)
	f.trust, err = f.ca.WritePEM(f.dir, "ca.pem")
	must(err)
	utf8, printable, ia5 := asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String
	one := func(oid asn1.ObjectIdentifier, tag int, v string) []tlstest.AVA {
		return []tlstest.AVA{{OID: oid, Tag: tag, Value: v}}
	}
	subjects := []struct {
		name string
		rdns [][]tlstest.AVA
		dn   string
	}{
		{"alice", [][]tlstest.AVA{
			one(tlstest.OIDCountry, printable, "US"),
			one(tlstest.OIDOrganization, utf8, "Acme, Inc."),
			one(tlstest.OIDOrgUnit, utf8, "Platform"),
			one(tlstest.OIDOrgUnit, utf8, "ZK Team"),
			one(tlstest.OIDCommonName, utf8, "Älice Ünicode"),
		}, `CN=Älice Ünicode,OU=ZK Team,OU=Platform,O=Acme\, Inc.,C=US`},
		{"bob", [][]tlstest.AVA{
			one(tlstest.OIDCountry, printable, "DE"),
			one(tlstest.OIDCommonName, utf8, "bob"),
			one(tlstest.OIDEmail, ia5, "bob@example.com"),
		}, `1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d,CN=bob,C=DE`},
		{"carol", [][]tlstest.AVA{
			one(tlstest.OIDOrganization, utf8, `a+b=c;"d"<e>#f\`),
			one(tlstest.OIDCommonName, utf8, " carol "),
		}, `CN=\ carol\ ,O=a\+b\=c\;\"d\"\<e\>\#f\\`},
		{"admin", [][]tlstest.AVA{
			one(tlstest.OIDOrganization, utf8, "Ops"),
			one(tlstest.OIDCommonName, utf8, "admin"),
		}, `CN=admin,O=Ops`},
		// One RDN: zkCli's setAcl splits its argument at commas.
		{"dave", [][]tlstest.AVA{one(tlstest.OIDCommonName, utf8, "dave")}, `CN=dave`},
	}
	for _, s := range subjects {
		raw, err := tlstest.Name(s.rdns...)
		must(err)
		leaf, err := f.ca.Issue(tlstest.Options{RawSubject: raw})
		must(err)
		c := &tlsClientCert{name: s.name, leaf: leaf, dn: s.dn}
		c.pem, err = leaf.WritePEMKeyStore(f.dir, s.name+".pem")
		must(err)
		c.p12, err = leaf.WritePKCS12KeyStore(f.dir, s.name+".p12", tlsStorePassword)
		must(err)
		certOnly := &tlstest.Leaf{Cert: leaf.Cert, Key: leaf.Key}
		c.certPEM, c.keyPEM = splitPEMKeyStore(t, f.dir, s.name, certOnly)
		f.certs[s.name] = c
	}
	return f
}

// splitPEMKeyStore writes a leaf's certificate and key to two files.
func splitPEMKeyStore(t *testing.T, dir, name string, l *tlstest.Leaf) (certPath, keyPath string) {
	t.Helper()
	both, err := l.WritePEMKeyStore(dir, name+"-both.pem")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(both)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(raw), "-----BEGIN CERTIFICATE-----")
	certPath, keyPath = filepath.Join(dir, name+"-cert.pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(keyPath, raw[:i], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, raw[i:], 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// zooCfg is the TLS part of both servers' zoo.cfg.
func (f *tlsFiles) zooCfg(securePort int) string {
	return fmt.Sprintf(`secureClientPort=%d
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=%s
ssl.keyStore.password=%s
ssl.keyStore.type=PKCS12
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=want
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
X509AuthenticationProvider.superUser=CN=admin,O=Ops
client.portUnification=true
`, securePort, f.server, tlsStorePassword, f.trust)
}

// tlsPair is ZooKeeper and zkbridge started with the same TLS keys: their
// secure client ports and their client ports (TLS and plaintext unified).
type tlsPair struct {
	zkSecure, zbSecure   string
	zkUnified, zbUnified string
}

// startTLSPair starts ZooKeeper and zkbridge with f's zoo.cfg TLS keys.
func startTLSPair(t *testing.T, f *tlsFiles) tlsPair {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	zk, err := StartZooKeeperWith(ZooKeeperOptions{Env: []string{"ZK_TLS=1", "ZK_EXTRA_CFG=" + f.zooCfg(port)}})
	if err != nil {
		t.Fatalf("start ZooKeeper with TLS (%s): %v", installHint, err)
	}
	t.Cleanup(zk.Stop)
	// zkbridge reads the very same keys from a zoo.cfg.
	parsed, err := config.ParseZooCfg([]byte("clientPort=0\n"+f.zooCfg(0)), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range parsed.Warnings {
		if strings.Contains(w, "unknown key") {
			t.Errorf("zkbridge did not recognise a ZooKeeper TLS key: %s", w)
		}
	}
	peer, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := suiteConfig(t.TempDir(), fmt.Sprintf("127.0.0.1:%d", peer))
	cfg.TLS = parsed.TLS
	srv, err := server.New(cfg, suiteLogger(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return tlsPair{zkSecure: fmt.Sprintf("127.0.0.1:%d", port), zbSecure: srv.SecureClientAddr(),
		zkUnified: zk.Addr, zbUnified: srv.ClientAddr()}
}

func TestTLSAgainstZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	f := newTLSFiles(t)
	pair := startTLSPair(t, f)
	zkAddr, zbAddr := pair.zkSecure, pair.zbSecure

	t.Run("x509 identities and ACLs", func(t *testing.T) {
		zk, zb := both(zkAddr, zbAddr, func(addr string) []string { return tlsTranscript(f, addr) })
		if d := diff(zk, zb); d != "" {
			t.Fatalf("TLS transcripts differ (ZooKeeper vs zkbridge):\n%s", d)
		}
		for _, c := range f.certs {
			if got := tlsconf.JavaDN(c.leaf.Cert); got != c.dn {
				t.Errorf("tlsconf.JavaDN(%s) = %q, want %q", c.name, got, c.dn)
			}
			if want := fmt.Sprintf("%s whoAmI: [ip:127.0.0.1 x509:%s]", c.name, c.dn); c.name != "admin" && !containsLine(zk, want) {
				t.Errorf("ZooKeeper's transcript lacks %q: the expected Java DN is wrong", want)
			}
		}
		if testing.Verbose() {
			t.Logf("transcript (both):\n%s", strings.Join(zk, "\n"))
		}
	})
	t.Run("port unification", func(t *testing.T) {
		zk, zb := both(pair.zkUnified, pair.zbUnified, func(addr string) []string { return unifiedTranscript(f, addr) })
		if d := diff(zk, zb); d != "" {
			t.Fatalf("unified client port transcripts differ (ZooKeeper vs zkbridge):\n%s", d)
		}
		if testing.Verbose() {
			t.Logf("unified port (both):\n%s", strings.Join(zk, "\n"))
		}
	})
	t.Run("zkCli.sh on Netty", func(t *testing.T) {
		requireTool(t, zkCliPath)
		cmds := []string{"whoami", "create /zkcli-tls data", "setAcl /zkcli-tls x509:" + f.certs["dave"].dn + ":cdrwa", "getAcl /zkcli-tls", "get /zkcli-tls", "delete /zkcli-tls", "ls /"}
		type result struct {
			out string
			err error
		}
		zk, zb := both(zkAddr, zbAddr, func(addr string) result {
			out, err := zkCliTLSRun(addr, f, f.certs["alice"], cmds)
			return result{out, err}
		})
		norm := func(out string) []string {
			var keep []string
			for _, l := range strings.Split(out, "\n") {
				if zkCliLogLine.MatchString(l) || strings.TrimSpace(l) == "" || strings.HasPrefix(l, "WATCHER::") ||
					strings.HasPrefix(l, "WatchedEvent") || strings.HasPrefix(l, "Connecting to") || strings.HasPrefix(l, "Welcome to") ||
					strings.HasPrefix(l, "JLine support") || strings.HasPrefix(l, "[zk:") {
					continue
				}
				keep = append(keep, l)
			}
			return keep
		}
		for name, r := range map[string]result{"ZooKeeper": zk, "zkbridge": zb} {
			if r.err != nil || !strings.Contains(r.out, "x509:"+f.certs["alice"].dn) && !strings.Contains(r.out, f.certs["alice"].dn) {
				t.Errorf("zkCli over TLS against %s (%v):\n%s", name, r.err, r.out)
			}
		}
		if d := diff(norm(zk.out), norm(zb.out)); d != "" {
			t.Errorf("zkCli over TLS saw different results (ZooKeeper vs zkbridge):\n%s", d)
		}
		if testing.Verbose() {
			t.Logf("zkCli over TLS (both):\n%s", strings.Join(norm(zk.out), "\n"))
		}
	})
	t.Run("kazoo use_ssl", func(t *testing.T) {
		requireTool(t, python3Path)
		script := filepath.Join(RepoRoot(), "compat-tests", "clients", "kazoo_tls.py")
		c := f.certs["bob"]
		type result struct {
			out string
			err error
		}
		zk, zb := both(zkAddr, zbAddr, func(addr string) result {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, python3Path, script, addr, f.trust, c.certPEM, c.keyPEM, c.dn, "/kazoo-tls").CombinedOutput()
			return result{string(out), err}
		})
		for name, r := range map[string]result{"ZooKeeper": zk, "zkbridge": zb} {
			if r.err != nil || !strings.HasSuffix(r.out, "OK\n") {
				t.Errorf("kazoo over TLS against %s failed (%v):\n%s", name, r.err, r.out)
			}
		}
		if d := diff(strings.Split(zk.out, "\n"), strings.Split(zb.out, "\n")); d != "" {
			t.Errorf("kazoo over TLS saw different results (ZooKeeper vs zkbridge):\n%s", d)
		}
	})
}

// unifiedTranscript: on a client.portUnification port a TLS client (with
// its x509 identity), a plaintext client and a four-letter word are all
// served.
func unifiedTranscript(f *tlsFiles, addr string) []string {
	var out []string
	pool := x509.NewCertPool()
	pool.AddCert(f.ca.Cert)
	c := f.certs["alice"]
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{{Certificate: [][]byte{c.leaf.Cert.Raw}, PrivateKey: c.leaf.Key}}}
	whoAmI := func(name string, nc net.Conn, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("%s: no connection", name))
			return
		}
		cl, _, err := ConnectOver(nc, name, NewTranscript(), DialOptions{})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: no session", name))
			return
		}
		defer cl.Close()
		r, err := cl.Call(zkproto.OpWhoAmI, nil)
		if err != nil {
			out = append(out, fmt.Sprintf("%s whoAmI: %v", name, err))
			return
		}
		var ids []string
		for _, ci := range r.Body.(*zkproto.WhoAmIResponse).ClientInfo {
			ids = append(ids, ci.AuthScheme+":"+ci.User)
		}
		sort.Strings(ids)
		out = append(out, fmt.Sprintf("%s whoAmI: %v", name, ids))
	}
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", addr, cfg)
	whoAmI("TLS", nc, err)
	plain, err := net.DialTimeout("tcp", addr, ioTimeout)
	whoAmI("plaintext", plain, err)
	if nc, err := net.DialTimeout("tcp", addr, ioTimeout); err == nil {
		_, _ = nc.Write([]byte("ruok"))
		_ = nc.SetReadDeadline(time.Now().Add(ioTimeout))
		b, _ := io.ReadAll(nc)
		out = append(out, fmt.Sprintf("ruok: %q", b))
		nc.Close()
	}
	return out
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// tlsTranscript runs the raw-client TLS checks against one server.
func tlsTranscript(f *tlsFiles, addr string) []string {
	var out []string
	logf := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	pool := x509.NewCertPool()
	pool.AddCert(f.ca.Cert)
	cfgFor := func(c *tlsClientCert) *tls.Config {
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if c != nil {
			cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{c.leaf.Cert.Raw}, PrivateKey: c.leaf.Key}}
		}
		return cfg
	}
	connect := func(name string, cfg *tls.Config) *Client {
		// A refused client certificate fails the handshake under TLS 1.2
		// (ZooKeeper 3.8 speaks nothing else) and the first read under
		// TLS 1.3: either way the client gets no session.
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", addr, cfg)
		if err != nil {
			logf("%s: refused", name)
			return nil
		}
		c, _, err := ConnectOver(nc, name, NewTranscript(), DialOptions{})
		if err != nil {
			logf("%s: refused", name)
			return nil
		}
		return c
	}
	whoAmI := func(c *Client) {
		r, err := c.Call(zkproto.OpWhoAmI, nil)
		if err != nil {
			logf("%s whoAmI: %v", c.Name, err)
			return
		}
		var ids []string
		if who, ok := r.Body.(*zkproto.WhoAmIResponse); ok {
			for _, ci := range who.ClientInfo {
				ids = append(ids, ci.AuthScheme+":"+ci.User)
			}
		}
		sort.Strings(ids)
		logf("%s whoAmI: %v", c.Name, ids)
	}
	call := func(c *Client, what string, op zkproto.OpCode, req zkproto.Record) *Reply {
		r, err := c.Call(op, req)
		if err != nil {
			logf("%s %s: %v", c.Name, what, err)
			return nil
		}
		logf("%s %s: %v", c.Name, what, r.Header.Err)
		return r
	}
	clients := map[string]*Client{}
	for _, name := range []string{"alice", "bob", "carol", "admin", "dave"} {
		if c := connect(name, cfgFor(f.certs[name])); c != nil {
			clients[name] = c
			defer c.Close()
			whoAmI(c)
		}
	}
	anon := connect("anonymous", cfgFor(nil))
	if anon != nil {
		defer anon.Close()
		whoAmI(anon)
	}
	alice := clients["alice"]
	if alice == nil {
		return out
	}
	aliceACL := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "x509", ID: f.certs["alice"].dn}}}
	call(alice, "create /tls-x509 with alice's x509 ACL", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/tls-x509", Data: []byte("a"), ACL: aliceACL})
	call(alice, "create /tls-auth with the auth ACL", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/tls-auth", ACL: []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth"}}}})
	if r := call(alice, "getACL /tls-auth", zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/tls-auth"}); r != nil && r.Body != nil {
		for _, a := range r.Body.(*zkproto.GetACLResponse).ACL {
			logf("  acl %s:%s perms %d", a.ID.Scheme, a.ID.ID, a.Perms)
		}
	}
	for _, name := range []string{"alice", "bob", "carol", "admin", "dave"} {
		if c := clients[name]; c != nil {
			call(c, "getData /tls-x509", zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/tls-x509"})
		}
	}
	if anon != nil {
		call(anon, "getData /tls-x509", zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/tls-x509"})
	}
	if admin := clients["admin"]; admin != nil {
		call(admin, "delete /tls-x509 (super user)", zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/tls-x509", Version: -1})
	}
	call(alice, "delete /tls-auth", zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/tls-auth", Version: -1})

	// A certificate of another CA: refused in the handshake (or at once
	// after it, TLS 1.3 telling the client late).
	other, _ := tlstest.NewCA("another CA")
	stranger, _ := other.Issue(tlstest.Options{CN: "stranger"})
	strangerCfg := cfgFor(nil)
	strangerCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &tls.Certificate{Certificate: [][]byte{stranger.Cert.Raw}, PrivateKey: stranger.Key}, nil
	}
	if c := connect("stranger", strangerCfg); c != nil {
		whoAmI(c)
		c.Close()
	}
	// TLS 1.2, what ZooKeeper 3.8's Java client speaks.
	tls12 := cfgFor(f.certs["bob"])
	tls12.MaxVersion = tls.VersionTLS12
	if c := connect("bob over TLS 1.2", tls12); c != nil {
		whoAmI(c)
		c.Close()
	}
	// Plaintext on the secure port: closed at once, nothing written back.
	if nc, err := net.DialTimeout("tcp", addr, ioTimeout); err == nil {
		var e zkproto.Encoder
		off := e.StartFrame()
		(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}).Encode(&e)
		e.FinishFrame(off)
		_, _ = nc.Write(e.Bytes())
		_ = nc.SetReadDeadline(time.Now().Add(ioTimeout))
		n, err := io.Copy(io.Discard, nc)
		logf("plaintext ConnectRequest on the secure port: %d bytes back, closed=%v", n, err == nil || !isTimeout(err))
		nc.Close()
	}
	return out
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// zkCliTLSRun runs zkCli.sh over TLS (Netty, zookeeper.client.secure)
// with c's PKCS12 key store and the PEM trust store.
func zkCliTLSRun(addr string, f *tlsFiles, c *tlsClientCert, cmds []string) (string, error) {
	netty, err := exec.Command("bash", "-c", "source "+filepath.Join(ScriptsDir(), "zookeeper-lib.sh")+" && zk_netty_classpath").Output()
	if err != nil {
		return "", fmt.Errorf("netty classpath: %w", err)
	}
	flags := []string{
		"-XX:TieredStopAtLevel=1", "-Xss1m",
		"-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:" + strings.TrimSpace(string(netty)),
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location=" + c.p12,
		"-Dzookeeper.ssl.keyStore.password=" + tlsStorePassword,
		"-Dzookeeper.ssl.keyStore.type=PKCS12",
		"-Dzookeeper.ssl.trustStore.location=" + f.trust,
		"-Dzookeeper.ssl.trustStore.type=PEM",
	}
	var in strings.Builder
	for _, cmd := range cmds {
		in.WriteString(cmd + "\n")
	}
	in.WriteString("quit\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(flags, " "))
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	return string(out), err
}
