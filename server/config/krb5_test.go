package config

import "testing"

// TestKrb5ConfKey: java.security.krb5.conf from SERVER_JVMFLAGS names the
// krb5.conf whose default realm the principal rule uses.
func TestKrb5ConfKey(t *testing.T) {
	var c Config
	if err := c.ApplyJVMFlags("-Xmx1g -Djava.security.krb5.conf=/etc/zk/krb5.conf"); err != nil {
		t.Fatal(err)
	}
	if c.Auth.Krb5Conf != "/etc/zk/krb5.conf" {
		t.Fatalf("Krb5Conf = %q", c.Auth.Krb5Conf)
	}
	if got := c.Auth.DefaultKerberosRealm(); got != "" {
		t.Fatalf("default realm of a missing krb5.conf = %q", got)
	}
}
