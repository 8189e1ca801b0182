package compattests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/server/auth/sasl/kdctest"
)

// SASL GSSAPI (Kerberos), differentially: a throwaway MIT KDC, a real
// ZooKeeper 3.8 and zkbridge started with the same JAAS Krb5LoginModule
// and service keytab, driven by raw protocol exchanges (gokrb5 as the
// client), kazoo (pure-sasl with python3-kerberos, MIT's GSS-API) and
// zkCli.sh with a client JAAS Krb5LoginModule (Java's GSS-API).

const gssapiService = "zookeeper/localhost"

// gssapiRealm starts the KDC with the service, a second service and the
// client alice.
func gssapiRealm(t *testing.T, dir string) (k *kdctest.KDC, serviceKT, aliceKT string) {
	t.Helper()
	if m := kdctest.Missing(); m != "" {
		t.Skipf("Kerberos KDC binaries absent (%s): %s", m, installHint)
	}
	k, err := kdctest.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	if serviceKT, err = k.AddPrincipal(gssapiService); err != nil {
		t.Fatal(err)
	}
	if _, err = k.AddPrincipal("zookeeper/otherhost"); err != nil {
		t.Fatal(err)
	}
	if aliceKT, err = k.AddPrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	return k, serviceKT, aliceKT
}

// gssapiTicket logs alice in (gokrb5) and returns a client for spn.
func gssapiTicket(t *testing.T, k *kdctest.KDC, aliceKT, spn string) func() *sasl.GSSAPIClient {
	t.Helper()
	cfg, err := krbconfig.Load(k.Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(aliceKT)
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
	return func() *sasl.GSSAPIClient {
		return &sasl.GSSAPIClient{CName: types.NewPrincipalName(1, "alice"), Realm: kdctest.Realm, Ticket: tkt, SessionKey: key}
	}
}

// gssapiSteps is a probe's steps for one fresh client: its AP-REQ, then
// its answers, each passed through tamper (step, token) when set.
func gssapiSteps(newClient func() *sasl.GSSAPIClient, authz string, n int, tamper func(int, []byte) []byte) []func([]byte) []byte {
	c := newClient()
	c.AuthzID = authz
	steps := make([]func([]byte) []byte, n)
	for i := range steps {
		steps[i] = func(prev []byte) []byte {
			var tok []byte
			var err error
			if i == 0 {
				tok, err = c.InitialToken()
			} else {
				tok, err = c.Respond(prev)
			}
			if err != nil {
				return []byte("client error: " + err.Error())
			}
			if tamper != nil {
				tok = tamper(i, tok)
			}
			return tok
		}
	}
	return steps
}

func TestGSSAPIDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	dir := t.TempDir()
	k, serviceKT, aliceKT := gssapiRealm(t, dir)
	jaas := fmt.Sprintf(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="%s"
  storeKey=true
  useTicketCache=false
  principal="%s@%s";
};
`, serviceKT, gssapiService, kdctest.Realm)
	zkAddr, zbAddr, _ := startSASLPairJAAS(t, dir, jaas, "-Djava.security.krb5.conf="+k.Conf,
		func(c *server.Config) { c.Auth.Krb5Conf = k.Conf })

	good := gssapiTicket(t, k, aliceKT, gssapiService)
	other := gssapiTicket(t, k, aliceKT, "zookeeper/otherhost")
	flip := func(step, at int) func(int, []byte) []byte {
		return func(i int, b []byte) []byte {
			if i != step || len(b) == 0 {
				return b
			}
			b = append([]byte{}, b...)
			if at < 0 {
				at += len(b)
			}
			b[at] ^= 0x40
			return b
		}
	}
	probes := []struct {
		name  string
		steps func() []func([]byte) []byte
	}{
		{"good", func() []func([]byte) []byte { return gssapiSteps(good, "", 3, nil) }},
		{"authzid of another user", func() []func([]byte) []byte { return gssapiSteps(good, "bob", 3, nil) }},
		{"ticket for another service", func() []func([]byte) []byte { return gssapiSteps(other, "", 1, nil) }},
		{"truncated AP-REQ", func() []func([]byte) []byte {
			return gssapiSteps(good, "", 1, func(_ int, b []byte) []byte { return b[:len(b)/2] })
		}},
		{"flipped authenticator byte", func() []func([]byte) []byte { return gssapiSteps(good, "", 1, flip(0, -20)) }},
		{"flipped wrap checksum", func() []func([]byte) []byte { return gssapiSteps(good, "", 3, flip(2, -1)) }},
		{"empty initial token (DIGEST-MD5's start)", func() []func([]byte) []byte { return []func([]byte) []byte{constToken([]byte{})} }},
		{"null token", func() []func([]byte) []byte { return []func([]byte) []byte{constToken(nil)} }},
	}
	for _, p := range probes {
		zk, zb := both(zkAddr, zbAddr, func(addr string) []string {
			return runSASLProbeTokens(addr, saslProbe{p.name, p.steps()}, true)
		})
		if d := diff(zk, zb); d != "" {
			t.Errorf("%s: ZooKeeper and zkbridge differ:\n%s", p.name, d)
		} else if testing.Verbose() {
			t.Logf("%s: %s", p.name, strings.Join(zk, " | "))
		}
	}
	zkHost := strings.Replace(zkAddr, "127.0.0.1", "localhost", 1)
	zbHost := strings.Replace(zbAddr, "127.0.0.1", "localhost", 1)

	// kazoo through pure-sasl and MIT's GSS-API, with tickets from kinit.
	requireTool(t, python3Path)
	if err := k.Kinit("alice", aliceKT); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(RepoRoot(), "compat-tests", "clients", "kazoo_gssapi.py")
	type result struct {
		out string
		err error
	}
	zkR, zbR := both(zkHost, zbHost, func(addr string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, python3Path, script, addr, "/kazoo-gssapi")
		cmd.Env = k.Env()
		out, err := cmd.CombinedOutput()
		return result{string(out), err}
	})
	for name, r := range map[string]result{"ZooKeeper": zkR, "zkbridge": zbR} {
		if r.err != nil || !strings.HasSuffix(r.out, "OK\n") {
			t.Errorf("kazoo GSSAPI against %s failed (%v):\n%s", name, r.err, r.out)
		}
	}
	if d := diff(strings.Split(zkR.out, "\n"), strings.Split(zbR.out, "\n")); d != "" {
		t.Errorf("kazoo GSSAPI observed different results:\n%s", d)
	} else if testing.Verbose() {
		t.Logf("kazoo:\n%s", zkR.out)
	}

	// zkCli.sh with a client JAAS Krb5LoginModule: alice's keytab, then a
	// keytab of the wrong principal's key (alice re-keyed after export).
	requireTool(t, zkCliPath)
	staleKT := filepath.Join(dir, "alice-stale.keytab")
	raw, err := os.ReadFile(aliceKT)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staleKT, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, keytab string }{{"good", aliceKT}, {"stale keytab", staleKT}} {
		if c.name == "stale keytab" {
			if aliceKT, err = k.Rekey("alice", "alice-new.keytab"); err != nil {
				t.Fatal(err)
			}
		}
		clientJAAS := filepath.Join(dir, "client-"+strings.ReplaceAll(c.name, " ", "-")+".jaas")
		text := fmt.Sprintf("Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=\"%s\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"alice@%s\";\n};\n", c.keytab, kdctest.Realm)
		if err := os.WriteFile(clientJAAS, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		node := "/zkcli-gssapi-" + strings.ReplaceAll(c.name, " ", "-")
		cmds := []string{"whoami", "create " + node + " data auth::cdrwa", "getAcl " + node, "get " + node}
		zkOut, zbOut := both(zkHost, zbHost, func(addr string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
			cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -Xss1m -Djava.security.auth.login.config="+clientJAAS+
				" -Djava.security.krb5.conf="+k.Conf+" -Dzookeeper.sasl.client.canonicalize.hostname=false")
			cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\nquit\n")
			out, _ := cmd.CombinedOutput()
			return string(out)
		})
		zkLines, zbLines := zkCliSASLLines(zkOut, zkHost), zkCliSASLLines(zbOut, zbHost)
		if d := diff(zkLines, zbLines); d != "" {
			t.Errorf("zkCli.sh GSSAPI (%s): ZooKeeper and zkbridge differ:\n%s", c.name, d)
		} else if testing.Verbose() {
			t.Logf("zkCli.sh GSSAPI (%s):\n%s", c.name, strings.Join(zkLines, "\n"))
		}
		if c.name == "good" && !strings.Contains(strings.Join(zbLines, "\n"), "sasl: alice@"+kdctest.Realm) {
			t.Errorf("zkCli.sh GSSAPI against zkbridge shows no sasl identity:\n%s", strings.Join(zbLines, "\n"))
		}
	}

	// The servers' keytab goes stale (the service re-keyed at the KDC):
	// a fresh ticket no longer decrypts, on both alike.
	if _, err := k.Rekey(gssapiService, "service-new.keytab"); err != nil {
		t.Fatal(err)
	}
	fresh := gssapiTicket(t, k, aliceKT, gssapiService)
	zk, zb := both(zkAddr, zbAddr, func(addr string) []string {
		return runSASLProbeTokens(addr, saslProbe{"stale service keytab", gssapiSteps(fresh, "", 3, nil)}, true)
	})
	if d := diff(zk, zb); d != "" {
		t.Errorf("stale service keytab: ZooKeeper and zkbridge differ:\n%s", d)
	} else if !strings.Contains(strings.Join(zb, " "), "err=-115") {
		t.Errorf("stale service keytab: authenticated anyway: %s", strings.Join(zb, " | "))
	} else if testing.Verbose() {
		t.Logf("stale service keytab: %s", strings.Join(zk, " | "))
	}
}

// TestGSSAPIForeignRealm: with a krb5.conf whose default realm is not the
// client's, ZooKeeper's default auth_to_local rule maps no name and the id
// stays the whole principal even with kerberos.removeRealmFromPrincipal;
// zkbridge reads the same krb5.conf. (ZooKeeper then also grants any
// authorization id the client asks for; zkbridge does not.)
func TestGSSAPIForeignRealm(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	dir := t.TempDir()
	k, serviceKT, aliceKT := gssapiRealm(t, dir)
	other := filepath.Join(dir, "other-default.conf")
	conf, err := os.ReadFile(k.Conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte(strings.Replace(string(conf), "default_realm = "+kdctest.Realm, "default_realm = OTHER.TEST", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	jaas := fmt.Sprintf("Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=\"%s\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"%s@%s\";\n};\n", serviceKT, gssapiService, kdctest.Realm)
	zkAddr, zbAddr, _ := startSASLPairJAAS(t, dir, jaas, "-Djava.security.krb5.conf="+other+" -Dzookeeper.kerberos.removeRealmFromPrincipal=true",
		func(c *server.Config) { c.Auth.Krb5Conf = other; c.Auth.RemoveRealmFromPrincipal = true })
	good := gssapiTicket(t, k, aliceKT, gssapiService)
	for _, authz := range []string{"", "alice@" + kdctest.Realm} {
		zk, zb := both(zkAddr, zbAddr, func(addr string) []string {
			return runSASLProbeTokens(addr, saslProbe{"authzid " + authz, gssapiSteps(good, authz, 3, nil)}, true)
		})
		if d := diff(zk, zb); d != "" {
			t.Errorf("authzid %q: ZooKeeper and zkbridge differ:\n%s", authz, d)
		} else if !strings.Contains(strings.Join(zb, " "), "sasl:alice@"+kdctest.Realm+"]") {
			t.Errorf("authzid %q: want the unstripped principal: %s", authz, strings.Join(zb, " | "))
		} else if testing.Verbose() {
			t.Logf("authzid %q: %s", authz, strings.Join(zk, " | "))
		}
	}
	// The ZooKeeper bug not copied: another authorization id becomes the
	// identity there, unchecked; zkbridge keeps the principal.
	zk, zb := both(zkAddr, zbAddr, func(addr string) []string {
		return runSASLProbeTokens(addr, saslProbe{"authzid super", gssapiSteps(good, "super", 3, nil)}, true)
	})
	if !strings.Contains(strings.Join(zk, " "), "sasl:super]") {
		t.Logf("ZooKeeper no longer grants a foreign-realm client the authorization id it asks for: %s", strings.Join(zk, " | "))
	}
	if !strings.Contains(strings.Join(zb, " "), "sasl:alice@"+kdctest.Realm+"]") {
		t.Errorf("authzid super: zkbridge granted %s, want the principal", strings.Join(zb, " | "))
	} else if testing.Verbose() {
		t.Logf("authzid super: ZooKeeper %s; zkbridge %s", strings.Join(zk, " | "), strings.Join(zb, " | "))
	}
}

// TestShellGSSAPI: zkCli.sh with a client JAAS Krb5LoginModule against a
// GSSAPI ZooKeeper, and zkbridge shell with the same CLIENT_JVMFLAGS
// against that ZooKeeper and a GSSAPI zkbridge: the same identities, ACLs
// and events. A stale client keytab ends the session on all three.
func TestShellGSSAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	requireTool(t, zkCliPath)
	dir := t.TempDir()
	k, serviceKT, aliceKT := gssapiRealm(t, dir)
	jaas := fmt.Sprintf("Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=\"%s\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"%s@%s\";\n};\n", serviceKT, gssapiService, kdctest.Realm)
	zkAddr, zbAddr, _ := startSASLPairJAAS(t, dir, jaas, "-Djava.security.krb5.conf="+k.Conf,
		func(c *server.Config) { c.Auth.Krb5Conf = k.Conf })
	zkHost := strings.Replace(zkAddr, "127.0.0.1", "localhost", 1)
	zbHost := strings.Replace(zbAddr, "127.0.0.1", "localhost", 1)
	cmds := []string{
		"whoami",
		"create /gssshell x sasl:alice@" + kdctest.Realm + ":cdrwa",
		"getAcl /gssshell",
		"get /gssshell",
		"delete /gssshell",
		"ls /gssshell",
	}
	staleKT := filepath.Join(dir, "alice-stale.keytab")
	raw, err := os.ReadFile(aliceKT)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staleKT, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.Kinit("alice", aliceKT); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, keytab, principal string }{
		{"good", aliceKT, "alice"},
		{"ticket cache", "", ""},
		{"unknown principal", aliceKT, "mallory"},
		{"stale keytab", staleKT, "alice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "stale keytab" {
				if _, err := k.Rekey("alice", "alice-new.keytab"); err != nil {
					t.Fatal(err)
				}
			}
			clientJAAS := filepath.Join(dir, "shell-"+strings.ReplaceAll(c.name, " ", "-")+".jaas")
			text := fmt.Sprintf("Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  keyTab=\"%s\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"%s@%s\";\n};\n", c.keytab, c.principal, kdctest.Realm)
			if c.keytab == "" {
				// Tickets from kinit, in the realm directory's cache.
				text = fmt.Sprintf("Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useTicketCache=true\n  ticketCache=\"%s\";\n};\n", filepath.Join(dir, "ccache"))
			}
			if err := os.WriteFile(clientJAAS, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			flags := "-Djava.security.auth.login.config=" + clientJAAS + " -Djava.security.krb5.conf=" + k.Conf + " -Dzookeeper.sasl.client.canonicalize.hostname=false"
			start := time.Now()
			raw, err := zkCliRunFlags(zkHost, cmds, flags)
			if err != nil {
				t.Fatalf("zkCli.sh: %v\n%s", err, raw)
			}
			stale := c.name == "stale keytab" || c.name == "unknown principal"
			want := fromCreate(shellNormalise(raw, zkHost, cmds, start), stale)
			t.Setenv("CLIENT_JVMFLAGS", flags)
			for name, addr := range map[string]string{"ZooKeeper": zkHost, "zkbridge": zbHost} {
				start = time.Now()
				out, _ := shellRun(addr, cmds)
				got := fromCreate(shellNormalise(out, addr, cmds, start), stale)
				if d := diff(want, got); d != "" {
					t.Errorf("zkbridge shell against %s differs from zkCli.sh against ZooKeeper:\n%s", name, d)
				}
			}
			if testing.Verbose() {
				t.Logf("zkCli.sh:\n%s", strings.Join(want, "\n"))
			}
		})
	}
}
