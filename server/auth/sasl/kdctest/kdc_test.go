package kdctest

import (
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
