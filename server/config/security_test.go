package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_bob="bobsecret";
};
`

func TestZooCfgSecurityKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jaas.conf"), []byte(testJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ParseZooCfg([]byte(`dataDir=data
clientPort=2181
java.security.auth.login.config=jaas.conf
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
authProvider.2=com.example.NoSuchProvider
sessionRequireClientSASLAuth=true
zookeeper.superUser=admin
kerberos.removeHostFromPrincipal=true
zookeeper.kerberos.removeRealmFromPrincipal=true
zookeeper.connection_throttle_tokens=100
connection_throttle_fill_time=10
connection_throttle_fill_count=5
request_throttle_max_requests=50
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	a, l := c.Auth, c.Limits
	if a.JAASFile != filepath.Join(dir, "jaas.conf") || !a.SASLScheme() || !a.SASLRequired ||
		len(a.SASLSuperUsers) != 1 || a.SASLSuperUsers[0] != "admin" || !a.RemoveHostFromPrincipal || !a.RemoveRealmFromPrincipal {
		t.Fatalf("auth %+v", a)
	}
	if l.ConnectionThrottleTokens != 100 || l.ConnectionThrottleFillTime != 10*time.Millisecond || l.ConnectionThrottleFillCount != 5 || l.RequestThrottleMaxRequests != 50 {
		t.Fatalf("limits %+v", l)
	}
	if c.MaxClientCnxns != DefaultZooCfgMaxClientCnxns {
		t.Fatalf("maxClientCnxns %d, want ZooKeeper's default 60 when zoo.cfg does not set it", c.MaxClientCnxns)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "NoSuchProvider") {
		t.Fatalf("an unknown provider must be a warning: %q", c.Warnings)
	}
	c.Normalize()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	users, err := c.Auth.SASLUsers()
	if err != nil || users["bob"] != "bobsecret" {
		t.Fatalf("users %v, %v", users, err)
	}
	if s := c.Auth.EnforcedSchemes(); len(s) != 1 || s[0] != "sasl" {
		t.Fatalf("enforced %v", s)
	}

	c2, err := ParseZooCfg([]byte("clientPort=2181\nmaxClientCnxns=0\n"), dir)
	if err != nil || c2.MaxClientCnxns != 0 {
		t.Fatalf("maxClientCnxns=0 (no limit) read as %d, %v", c2.MaxClientCnxns, err)
	}
}

func TestAuthValidation(t *testing.T) {
	dir := t.TempDir()
	for name, mod := range map[string]func(*Config){
		"enforce without schemes": func(c *Config) { c.Auth.EnforceAuth = true },
		"sasl without provider":   func(c *Config) { c.Auth.SASLRequired = true },
		"unknown scheme":          func(c *Config) { c.Auth.EnforceAuth, c.Auth.EnforceAuthSchemes = true, []string{"kerberos"} },
		"missing JAAS file":       func(c *Config) { c.Auth.JAASFile = filepath.Join(dir, "nope.conf") },
		"JAAS without its section": func(c *Config) {
			c.Auth.JAASFile = writeFile(t, dir, "client.conf", "Client { m required username=\"a\"; };")
		},
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJVMFlagsAndYAML(t *testing.T) {
	dir := t.TempDir()
	jaas := writeFile(t, dir, "jaas.conf", testJAAS)
	c := DefaultConfig()
	if err := c.ApplyJVMFlags("-Xmx1g -Djava.security.auth.login.config=" + jaas + " -Dzookeeper.authProvider.sasl=" + SASLProvider + " -Dzookeeper.allowSaslFailedClients=true"); err != nil {
		t.Fatal(err)
	}
	if c.Auth.JAASFile != jaas || !c.Auth.SASLScheme() || !c.Auth.AllowSASLFailedClients {
		t.Fatalf("%+v", c.Auth)
	}
	if err := c.ApplyJVMFlags("-Dzookeeper.connection_throttle_tokens=x"); err == nil {
		t.Fatal("a bad value must fail")
	}
	y, err := ParseYAMLConfig([]byte("jaas_file: " + jaas + "\nsasl_required: true\nauth_providers: [" + SASLProvider + "]\nrequest_throttle_max_requests: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if y.Auth.JAASFile != jaas || !y.Auth.SASLRequired || y.Limits.RequestThrottleMaxRequests != 7 {
		t.Fatalf("yaml: %+v %+v", y.Auth, y.Limits)
	}
}
