package kdctest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestKDC: a realm, a principal, its keytab and a kinit with it.
func TestKDC(t *testing.T) {
	if m := Missing(); m != "" {
		t.Skipf("Kerberos KDC binaries absent (%s): run scripts/install-zookeeper.sh", m)
	}
	k, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
		c, _ := os.ReadFile(filepath.Join(k.Dir, "krb5kdc.out"))
		t.Logf("%s\n%s", b, c)
	})
	kt, err := k.AddPrincipal("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.AddPrincipal("alice"); err == nil {
		t.Fatal("adding alice twice succeeded")
	}
	if _, err := k.Rekey("nobody", "nobody.keytab"); err == nil {
		t.Fatal("exporting an unknown principal succeeded")
	}
	if err := k.Kinit("alice", kt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(k.Dir, "ccache")); err != nil {
		t.Fatalf("kinit left no credential cache: %v", err)
	}
	if err := k.Kinit("alice", filepath.Join(k.Dir, "missing.keytab")); err == nil {
		t.Fatal("kinit with a missing keytab succeeded")
	}
}

// TestKDCPortTaken: a port taken between its choice and krb5kdc's bind
// makes Start try another.
func TestKDCPortTaken(t *testing.T) {
	if m := Missing(); m != "" {
		t.Skipf("Kerberos KDC binaries absent (%s): run scripts/install-zookeeper.sh", m)
	}
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close()
	busy := blocker.Addr().(*net.TCPAddr).Port
	taken := true
	pickPort = func() (int, error) {
		if taken {
			taken = false
			return busy, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()
	k, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Stop()
	if k.Port == busy {
		t.Fatalf("the KDC claims the taken port %d", busy)
	}
	kt, err := k.AddPrincipal("bob")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Kinit("bob", kt); err != nil {
		t.Fatal(err)
	}
}
