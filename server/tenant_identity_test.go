package server

import (
	"context"
	"crypto/tls"
	"encoding/asn1"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/zkproto"
)

// identityFixture is a TLS fixture whose server certificate also names the
// tenants' server names (a wildcard certificate in a real deployment).
func identityFixture(t *testing.T, names ...string) *tlsFixture {
	t.Helper()
	f := newTLSFixture(t)
	srv, err := f.ca.Issue(tlstest.Options{CN: "zkbridge server", DNSNames: append([]string{"localhost"}, names...),
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if f.keyStore, err = srv.WritePKCS12KeyStore(f.dir, "tenants.p12", "storepw"); err != nil {
		t.Fatal(err)
	}
	return f
}

// cnAVA is a subject of one common name.
func cnAVA(cn string) []tlstest.AVA {
	return []tlstest.AVA{{OID: tlstest.OIDCommonName, Tag: asn1.TagUTF8String, Value: cn}}
}

// createAs creates path with data over c and fails the test unless OK.
func createAs(t *testing.T, c *testClient, path, data string) {
	t.Helper()
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: []byte(data), ACL: zkproto.OpenACLUnsafe()})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create %s: %v", path, h.Err)
	}
}

// dataAt reads path through a plain client of addr ("" when absent).
func dataAt(t *testing.T, addr, path string) string {
	t.Helper()
	zc, _ := connectZK(t, addr)
	defer zc.Close()
	data, _, err := zc.Get(path)
	if err != nil {
		return ""
	}
	return string(data)
}

// Two tenants behind one secure port, one chosen by the TLS server name,
// the other by the client certificate's CN: each client writes in its own
// tenant. With --tenant-unknown-identity=refuse, a client whose names no
// tenant has is closed before its session.
func TestTenantSelectedByTLSIdentityOnTheSharedPort(t *testing.T) {
	f := identityFixture(t, "alpha.zk.test", "nobody.zk.test")
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("want")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
		c.TLS.TenantUnknownIdentity = config.UnknownIdentityRefuse
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alphaPort, betaPort := freeTenantPort(t, "127.0.0.1"), freeTenantPort(t, "127.0.0.1")
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "alpha", Port: alphaPort, Identities: []string{"Alpha.zk.test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "beta", Port: betaPort, Identities: []string{"beta-client"}}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "alpha", alphaPort)
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "beta", betaPort)
	shared := s.zk.SecureAddr()

	bySNI := f.clientConfig()
	bySNI.ServerName = "alpha.zk.test"
	a := dialTLS(t, shared, bySNI)
	createAs(t, a, "/who", "alpha")

	// An IP address as the server name sends no SNI: the certificate's CN
	// selects the tenant, and the session keeps its x509 identity.
	beta := f.clientCert(cnAVA("beta-client"))
	b := dialTLS(t, shared, f.clientConfig(beta))
	createAs(t, b, "/who", "beta")
	if ids := whoAmI(t, b); !slices.Contains(ids, "x509:CN=beta-client") {
		t.Fatalf("the beta client's identities: %v", ids)
	}

	if got := dataAt(t, s.TenantAddr("alpha"), "/who"); got != "alpha" {
		t.Fatalf("tenant alpha's /who: %q", got)
	}
	if got := dataAt(t, s.TenantAddr("beta"), "/who"); got != "beta" {
		t.Fatalf("tenant beta's /who: %q", got)
	}
	if got := dataAt(t, s.ClientAddr(), "/who"); got != "" {
		t.Fatalf("the default tenant has /who: %q", got)
	}

	// Unknown server name, no certificate: refused.
	unknown := f.clientConfig()
	unknown.ServerName = "nobody.zk.test"
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", shared, unknown)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if !c.closed(10 * time.Second) {
		t.Fatal("a client of an unknown identity was served under --tenant-unknown-identity=refuse")
	}
	// The limits of the selected tenant hold: its sessions are its own.
	if n := s.Tenant("alpha").SessionCount(); n != 1 {
		t.Fatalf("tenant alpha has %d sessions, want the SNI client's", n)
	}
}

// On a node that does not host the tenant its server name selects, the
// connection is forwarded unread to a hosting node's secure port: the
// handshake is end to end (the hosting node sees the client certificate).
// With the default policy an unknown server name is the default tenant's.
func TestTenantSelectedBySNIThroughANonHostingNode(t *testing.T) {
	f := identityFixture(t, "far.zk.test", "nobody.zk.test")
	hosts := tenantHosts(3)
	servers, home, away := startFarTenantCluster(t, f, hosts, "far.zk.test", nil)
	cfg := f.clientConfig(f.clientCert(cnAVA("far-user")))
	cfg.ServerName = "far.zk.test"
	c := dialTLS(t, servers[away].zk.SecureAddr(), cfg)
	createAs(t, c, "/x", "through")
	if ids := whoAmI(t, c); !slices.Contains(ids, "x509:CN=far-user") {
		t.Fatalf("the forwarded client's identities (end-to-end TLS keeps its certificate): %v", ids)
	}
	if got := dataAt(t, servers[home].TenantAddr("far"), "/x"); got != "through" {
		t.Fatalf("tenant far's /x on its node: %q", got)
	}
	if got := dataAt(t, servers[away].ClientAddr(), "/x"); got != "" {
		t.Fatalf("the forwarding node's default tenant has /x: %q", got)
	}

	unknown := f.clientConfig()
	unknown.ServerName = "nobody.zk.test"
	d := dialTLS(t, servers[away].zk.SecureAddr(), unknown)
	createAs(t, d, "/unknown", "default")
	if got := dataAt(t, servers[away].ClientAddr(), "/unknown"); got != "default" {
		t.Fatalf("an unknown server name under the default policy: the default tenant's /unknown is %q", got)
	}
}

// kazooSelect writes /who=data through kazoo over TLS with a client
// certificate, connecting to addr.
const kazooSelect = `
import sys
from kazoo.client import KazooClient
host, ca, certkey, data = sys.argv[1:5]
zk = KazooClient(hosts=host, use_ssl=True, ca=ca, certfile=certkey, keyfile=certkey, verify_certs=True, timeout=15)
zk.start(timeout=30)
try:
    zk.create("/who", data.encode())
    print("OK")
finally:
    zk.stop()
    zk.close()
`

// kazoo (Debian's 2.8 sends no server name: it wraps its socket without
// server_hostname) reaches its tenant on the shared secure port by its
// client certificate.
func TestTenantSelectedByCertificateWithKazoo(t *testing.T) {
	const python = "/usr/bin/python3" // where Debian's kazoo is installed
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Skipf("kazoo is not installed for %s (scripts/install-zookeeper.sh installs it): %v", python, err)
	}
	f := identityFixture(t)
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("want")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, "127.0.0.1")
	// The whole subject DN, as the x509 scheme writes it.
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "py", Port: port, Identities: []string{"CN=kazoo-app,O=Example"}}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "py", port)
	subject, err := tlstest.Name([]tlstest.AVA{{OID: tlstest.OIDOrganization, Tag: asn1.TagUTF8String, Value: "Example"}}, cnAVA("kazoo-app"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := f.ca.Issue(tlstest.Options{RawSubject: subject})
	if err != nil {
		t.Fatal(err)
	}
	certKey, err := leaf.WritePEMKeyStore(f.dir, "kazoo-app.pem")
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithTimeout(ctx, 50*time.Second)
	defer stop()
	out, err := exec.CommandContext(run, python, "-c", kazooSelect, s.zk.SecureAddr(), f.trust, certKey, "kazoo").CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "OK\n") {
		t.Fatalf("kazoo over TLS: %v\n%s", err, out)
	}
	if got := dataAt(t, s.TenantAddr("py"), "/who"); got != "kazoo" {
		t.Fatalf("tenant py's /who: %q", got)
	}
	if got := dataAt(t, s.ClientAddr(), "/who"); got != "" {
		t.Fatalf("the default tenant has kazoo's /who: %q", got)
	}
}

// The Java client (zkCli.sh on Netty, zookeeper.client.secure=true) sends
// the host name it connects to as the TLS server name: connected to
// alpha.zk.test (mapped to 127.0.0.1 by a hosts file of the JVM's own), it
// is served by the tenant with that identity.
func TestTenantSelectedBySNIWithTheJavaClient(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	netty, err := exec.Command("bash", "-c", "source ../scripts/zookeeper-lib.sh && zk_netty_classpath").Output()
	if _, serr := os.Stat(zkCli); serr != nil || err != nil {
		t.Skipf("zkCli.sh or the netty jars are missing (scripts/install-zookeeper.sh installs them): %v %v", serr, err)
	}
	f := identityFixture(t, "alpha.zk.test")
	s := startTestServer(t, func(c *Config) {
		c.TLS.Client = f.settings("want")
		c.TLS.SecureClientAddr = "127.0.0.1:0"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := freeTenantPort(t, "127.0.0.1")
	if _, err := s.CreateTenant(ctx, TenantRequest{Name: "alpha", Port: port, Identities: []string{"alpha.zk.test"}}); err != nil {
		t.Fatal(err)
	}
	waitTenantServing(t, []*Server{s}, []string{"127.0.0.1"}, "alpha", port)
	hosts := filepath.Join(f.dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 alpha.zk.test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, securePort, _ := net.SplitHostPort(s.zk.SecureAddr())
	flags := []string{
		"-XX:TieredStopAtLevel=1", "-Xss1m",
		"-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:" + strings.TrimSpace(string(netty)),
		"-Djdk.net.hosts.file=" + hosts,
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.trustStore.location=" + f.trust,
		"-Dzookeeper.ssl.trustStore.type=PEM",
	}
	run, stop := context.WithTimeout(ctx, 90*time.Second)
	defer stop()
	cmd := exec.CommandContext(run, zkCli, "-server", "alpha.zk.test:"+securePort)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(flags, " "))
	cmd.Stdin = strings.NewReader("create /who java\nquit\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Created /who") {
		t.Fatalf("zkCli.sh over TLS to alpha.zk.test: %v\n%s", err, out)
	}
	if got := dataAt(t, s.TenantAddr("alpha"), "/who"); got != "java" {
		t.Fatalf("tenant alpha's /who: %q\n%s", got, out)
	}
	if got := dataAt(t, s.ClientAddr(), "/who"); got != "" {
		t.Fatalf("the default tenant has the Java client's /who: %q", got)
	}
}
