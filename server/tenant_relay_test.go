package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/zkproto"
)

// peerStores issues a node certificate (naming the test cluster's loopback
// hosts) from a peer CA of its own, apart from the clients' CA: the
// ssl.quorum.* settings of every node.
func peerStores(t *testing.T, hosts []string) (tlsconf.Settings, *tlstest.CA) {
	t.Helper()
	ca, err := tlstest.NewCA("zkbridge peer CA")
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{}
	for _, h := range hosts {
		ips = append(ips, net.ParseIP(h))
	}
	leaf, err := ca.Issue(tlstest.Options{CN: "zkbridge node", DNSNames: []string{"localhost"}, IPs: ips})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ks, err := leaf.WritePEMKeyStore(dir, "node.pem")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := ca.WritePEM(dir, "peer-ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	return tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks}, TrustStore: tlsconf.Store{Location: ts}}, ca
}

// A client chosen by its certificate alone (no SNI) that connects to a
// node not hosting its tenant is relayed to a hosting node over the
// peers' TLS: its session lives in the tenant on the hosting node, with
// its x509 identity (whoami, an ACL only it passes), its watches and
// pings; a preamble from anything but a node (a client certificate
// offering the relay protocol, plaintext) is refused with no session.
func TestTenantCertificateClientRelayedThroughANonHostingNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	f := identityFixture(t)
	hosts := tenantHosts(3)
	peer, peerCA := peerStores(t, hosts)
	logs := []*lockedBuffer{{}, {}, {}}
	clusterLogOutput = func(i int) io.Writer { return logs[i-1] }
	t.Cleanup(func() { clusterLogOutput = nil })
	servers, home, away := startFarTenantCluster(t, f, hosts, "far-user", &peer)

	// ServerName is an IP address: crypto/tls sends no SNI, as kazoo 2.8.
	user := f.clientCert(cnAVA("far-user"))
	c, session := relayedSession(t, servers[away].zk.SecureAddr(), f.clientConfig(user), zkproto.ConnectRequest{})
	if n := servers[home].Tenant("far").SessionCount(); n != 1 {
		t.Fatalf("tenant far holds %d sessions on its node, want the relayed client's", n)
	}
	if ids := whoAmI(t, c); !slices.Contains(ids, "x509:CN=far-user") {
		t.Fatalf("the relayed client's identities: %v", ids)
	}
	mine := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "x509", ID: "CN=far-user"}}}
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/mine", Data: []byte("secret"), ACL: mine})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create /mine with an x509 ACL: %v", h.Err)
	}
	c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/mine"})
	h, d := c.reply()
	var got zkproto.GetDataResponse
	if h.Err != zkproto.ErrOK || got.Decode(d) != nil || string(got.Data) != "secret" {
		t.Fatalf("the relayed client reads /mine: %v %q", h.Err, got.Data)
	}
	createAs(t, c, "/open", "v1")

	// Another client of the tenant, on its own port of the hosting node:
	// the ACL keeps it out, and its write fires the relayed client's watch.
	nc, err := net.DialTimeout("tcp", servers[home].TenantAddr("far"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := sessionOver(t, nc)
	other.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/mine"})
	if h, _ := other.reply(); h.Err != zkproto.ErrNoAuth {
		t.Fatalf("a client without the x509 identity reads /mine: %v, want NoAuth", h.Err)
	}
	c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/open", Watch: true})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("getData /open with a watch: %v", h.Err)
	}
	other.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/open", Data: []byte("v2"), Version: -1})
	if h, _ := other.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("setData /open: %v", h.Err)
	}
	ev := nextEvent(t, c)
	if ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/open" {
		t.Fatalf("the relayed client's watch: %+v", ev)
	}

	// The session lives on pings alone past its timeout (at most 2 s with
	// this tick), as on a local connection.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		c.send(zkproto.OpPing, nil)
		if h, _ := c.reply(); h.Err != zkproto.ErrOK {
			t.Fatalf("ping through the relay: %v", h.Err)
		}
	}
	c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/open"})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("exists /open after pinging past the session timeout: %v", h.Err)
	}
	// A four-letter word from a certificate client is answered by the
	// hosting node's tenant door: cons lists the relayed session.
	fw, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", servers[away].zk.SecureAddr(), f.clientConfig(user))
	if err != nil {
		t.Fatal(err)
	}
	_ = fw.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = fw.Write([]byte("cons"))
	cons, _ := io.ReadAll(fw)
	fw.Close()
	if !strings.Contains(string(cons), fmt.Sprintf("sid=0x%x", uint64(c.sid))) {
		t.Fatalf("cons through the relay does not list the relayed session 0x%x:\n%s", uint64(c.sid), cons)
	}
	// The session moves to a connection through the other non-hosting
	// node, as between ZooKeeper servers, x509 identity included.
	c.nc.Close()
	third := (home + 2) % 3
	moved, resp := relayedSession(t, servers[third].zk.SecureAddr(), f.clientConfig(user),
		zkproto.ConnectRequest{SessionID: session.SessionID, Passwd: session.Passwd, LastZxidSeen: servers[home].Tenant("far").LastZxid()})
	if resp.SessionID != session.SessionID {
		t.Fatalf("reconnecting through node %d: session 0x%x, want 0x%x", third+1, resp.SessionID, session.SessionID)
	}
	moved.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/mine"})
	if h, _ := moved.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("the moved session reads /mine: %v", h.Err)
	}
	if got := dataAt(t, servers[away].ClientAddr(), "/open"); got != "" {
		t.Fatalf("the relaying node's default tenant has /open: %q", got)
	}

	// kazoo (Debian's 2.8 sends no server name) is relayed the same way.
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Logf("kazoo part skipped: kazoo is not installed for %s (scripts/install-zookeeper.sh installs it): %v", python, err)
	} else {
		leaf, err := f.ca.Issue(tlstest.Options{CN: "far-user"})
		if err != nil {
			t.Fatal(err)
		}
		certKey, err := leaf.WritePEMKeyStore(f.dir, "far-user.pem")
		if err != nil {
			t.Fatal(err)
		}
		run, stop := context.WithTimeout(context.Background(), 40*time.Second)
		out, err := exec.CommandContext(run, python, "-c", kazooSelect, servers[away].zk.SecureAddr(), f.trust, certKey, "kazoo").CombinedOutput()
		stop()
		if err != nil || !strings.HasSuffix(string(out), "OK\n") {
			t.Fatalf("kazoo over TLS through the non-hosting node: %v\n%s", err, out)
		}
		if got := dataAt(t, servers[home].TenantAddr("far"), "/who"); got != "kazoo" {
			t.Fatalf("tenant far's /who on its node: %q", got)
		}
	}

	// Forged preambles at the hosting node's secure port: a client
	// certificate offering the relay protocol, and plaintext.
	homeSecure := servers[home].zk.SecureAddr()
	before := servers[home].Tenant("far").SessionCount()
	preamble := &bytes.Buffer{}
	if err := zk.WriteRelayPreamble(preamble, zk.RelayPreamble{Tenant: "far", ClientAddr: "127.0.0.9:1", Chain: [][]byte{user.Leaf.Raw}}); err != nil {
		t.Fatal(err)
	}
	connect := zkproto.AppendFrame(nil, zkproto.Marshal(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}))
	forge := func(nc net.Conn) {
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = nc.Write(append(preamble.Bytes(), connect...))
		if b, _ := io.ReadAll(nc); len(b) > 0 && b[0] == 0 {
			t.Errorf("a forged relay preamble was accepted (answer %x)", b)
		}
	}
	forged := f.clientConfig(user)
	forged.NextProtos = []string{zk.NodeRelayALPN}
	forged.InsecureSkipVerify = true // the attacker trusts anything
	// and presents its client certificate whatever CAs the server names.
	forged.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &user, nil }
	if tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", homeSecure, forged); err == nil {
		forge(tc)
	}
	eventually(t, 10*time.Second, "the forged TLS preamble's refusal in the hosting node's log", func() bool {
		return strings.Contains(logs[home].String(), "refusing a relayed client: the relay protocol")
	})
	plain, err := net.DialTimeout("tcp", homeSecure, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	forge(plain)
	eventually(t, 10*time.Second, "the plaintext preamble's refusal in the hosting node's log", func() bool {
		return strings.Contains(logs[home].String(), "refusing a relayed client: a relay preamble arrived in plaintext")
	})
	// A node's own certificate: a preamble for a tenant the node it goes
	// to does not serve, or that the certificate does not select, is
	// answered with the reason (a relayed client is never relayed again).
	nodeTLS, err := tlsconf.NewSource(peer, "ssl.quorum", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr, tenant, refusal string
	}{
		{servers[away].zk.SecureAddr(), "far", "does not serve tenant \"far\""},
		{homeSecure, "elsewhere", "selects tenant \"far\" here, not \"elsewhere\""},
	} {
		_, err := relayDial(tc.addr, "", zk.RelayPreamble{Tenant: tc.tenant, ClientAddr: "127.0.0.9:1", Chain: [][]byte{user.Leaf.Raw}}, nodeTLS)
		if err == nil || !strings.Contains(err.Error(), tc.refusal) {
			t.Fatalf("a node's preamble for %q to %s: %v, want a refusal saying %q", tc.tenant, tc.addr, err, tc.refusal)
		}
	}

	// A certificate of the peer CA that names no member's host is not a
	// node's.
	intruder, err := peerCA.Issue(tlstest.Options{CN: "intruder", DNSNames: []string{"intruder.example"}, IPs: []net.IP{net.IPv4(10, 9, 9, 9)}})
	if err != nil {
		t.Fatal(err)
	}
	intruderStore, err := intruder.WritePEMKeyStore(t.TempDir(), "intruder.pem")
	if err != nil {
		t.Fatal(err)
	}
	intruderSettings := peer
	intruderSettings.KeyStore = tlsconf.Store{Location: intruderStore}
	intruderTLS, err := tlsconf.NewSource(intruderSettings, "ssl.quorum", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if up, err := relayDial(homeSecure, "", zk.RelayPreamble{Tenant: "far", ClientAddr: "127.0.0.9:1", Chain: [][]byte{user.Leaf.Raw}}, intruderTLS); err == nil {
		up.Close()
		t.Fatal("a peer-CA certificate naming no member's host relayed a client")
	}
	eventually(t, 10*time.Second, "the intruder's refusal in the hosting node's log", func() bool {
		// (the log is JSON: the quotes around the DN are escaped)
		return strings.Contains(logs[home].String(), `not a cluster member: its certificate \"CN=intruder\" names none of the members' hosts`)
	})

	// A session outlives its connection until it times out: one opened
	// by a forged preamble would still count here.
	if n := servers[home].Tenant("far").SessionCount(); n > before {
		t.Fatalf("tenant far has %d sessions after the forged preambles, %d before", n, before)
	}
}

// relayedSession opens a session (req's, or a new one) over TLS at addr
// and returns the client and the server's answer.
func relayedSession(t *testing.T, addr string, cfg *tls.Config, req zkproto.ConnectRequest) (*testClient, zkproto.ConnectResponse) {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	req.TimeOut = 30000
	c.write(&req)
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(c.next(), &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("session through %s: %+v %v", addr, resp, err)
	}
	c.sid = resp.SessionID
	return c, resp
}

// nextEvent reads frames until a watch notification and returns it.
func nextEvent(t *testing.T, c *testClient) zkproto.WatcherEvent {
	t.Helper()
	for {
		d := zkproto.NewDecoder(c.next())
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			t.Fatal(err)
		}
		if h.Xid != zkproto.XidNotification {
			continue
		}
		var ev zkproto.WatcherEvent
		if err := ev.Decode(d); err != nil {
			t.Fatal(err)
		}
		return ev
	}
}

// Without peer TLS there is no authenticated channel to relay a client's
// identity on: a client selected by its certificate alone is refused by a
// node that does not host its tenant, with a log line saying what to do.
func TestTenantCertificateClientRefusedWithoutPeerTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	f := identityFixture(t)
	hosts := tenantHosts(3)
	logs := []*lockedBuffer{{}, {}, {}}
	clusterLogOutput = func(i int) io.Writer { return logs[i-1] }
	t.Cleanup(func() { clusterLogOutput = nil })
	servers, home, away := startFarTenantCluster(t, f, hosts, "far-user", nil)
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", servers[away].zk.SecureAddr(), f.clientConfig(f.clientCert(cnAVA("far-user"))))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &testClient{t: t, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20)}
	c.write(&zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if !c.closed(10 * time.Second) {
		t.Fatal("a certificate-selected client of a tenant hosted elsewhere was served without peer TLS")
	}
	eventually(t, 10*time.Second, "the refusal in the non-hosting node's log", func() bool {
		return strings.Contains(logs[away].String(), "without peer TLS (sslQuorum)")
	})
	if n := servers[home].Tenant("far").SessionCount(); n != 0 {
		t.Fatalf("tenant far has %d sessions", n)
	}
}

// TestTenantRelayBench measures what the relay costs a certificate client
// (ZKBRIDGE_RELAY_BENCH=1): connection set-up (TLS and session) and
// getData round trips, direct to the hosting node's secure port against
// through a non-hosting node, alternated over rounds.
func TestTenantRelayBench(t *testing.T) {
	if os.Getenv("ZKBRIDGE_RELAY_BENCH") == "" {
		t.Skip("a benchmark: ZKBRIDGE_RELAY_BENCH=1")
	}
	f := identityFixture(t)
	hosts := tenantHosts(3)
	peer, _ := peerStores(t, hosts)
	servers, home, away := startFarTenantCluster(t, f, hosts, "far-user", &peer)
	user := f.clientCert(cnAVA("far-user"))
	const rounds, reads = 5, 3000
	type figures struct{ connect, rtt []time.Duration }
	results := map[string]*figures{"direct": {}, "relayed": {}}
	addrs := map[string]string{"direct": servers[home].zk.SecureAddr(), "relayed": servers[away].zk.SecureAddr()}
	createAs(t, dialTLS(t, addrs["direct"], f.clientConfig(user)), "/bench", "x")
	for range rounds {
		for _, mode := range []string{"direct", "relayed"} {
			start := time.Now()
			c := dialTLS(t, addrs[mode], f.clientConfig(user))
			results[mode].connect = append(results[mode].connect, time.Since(start))
			for range reads {
				s := time.Now()
				c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/bench"})
				if h, _ := c.reply(); h.Err != zkproto.ErrOK {
					t.Fatalf("%s getData: %v", mode, h.Err)
				}
				results[mode].rtt = append(results[mode].rtt, time.Since(s))
			}
			c.nc.Close()
		}
	}
	pct := func(d []time.Duration, p int) time.Duration {
		slices.Sort(d)
		return d[(len(d)-1)*p/100]
	}
	for _, mode := range []string{"direct", "relayed"} {
		r := results[mode]
		t.Logf("%-7s connect+session p50 %v; getData p50 %v p99 %v (%d rounds of %d)", mode,
			pct(r.connect, 50).Round(10*time.Microsecond), pct(r.rtt, 50).Round(time.Microsecond), pct(r.rtt, 99).Round(time.Microsecond), rounds, reads)
	}
}

// startFarTenantCluster starts three nodes sharing a secure client port,
// with peer TLS when peer is not nil, and the tenant "far" (selected by
// identity) placed on one of them, home; away is a node that does not
// host it.
func startFarTenantCluster(t *testing.T, f *tlsFixture, hosts []string, identity string, peer *tlsconf.Settings) (servers []*Server, home, away int) {
	t.Helper()
	securePort := freeTenantPort(t, hosts...)
	servers = startClusterWith(t, 3, 100*time.Millisecond, func(c *Config) {
		host := hosts[c.ReplicaID-1]
		c.ClientAddr = host + ":0"
		c.TLS.Client = f.settings("want")
		c.TLS.SecureClientAddr = net.JoinHostPort(host, strconv.Itoa(securePort))
		if peer != nil {
			c.TLS.QuorumEnabled = true
			c.TLS.Quorum = *peer
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freeTenantPort(t, hosts...)
	info, err := servers[0].CreateTenant(ctx, TenantRequest{Name: "far", Port: port, Replicas: 1, Identities: []string{identity}})
	if err != nil {
		t.Fatal(err)
	}
	home = int(info.Replicas[0]) - 1
	away = (home + 1) % 3
	eventually(t, 30*time.Second, "the tenant served on its node", func() bool {
		return servers[home].Tenant("far") != nil && servers[home].Tenant("far").Serving() && servers[away].TenantAddr("far") != ""
	})
	return servers, home, away
}
