package compattests

import (
	"bytes"
	"testing"

	"github.com/zkbridge/zkbridge/migrate"
)

// A ZooKeeper session's password is derived from its id
// (java.util.Random(id ^ 0xB3415C00).nextBytes(16)): what migration gives
// imported sessions, checked against the passwords a real ZooKeeper 3.8
// hands out.
func TestZooKeeperSessionPasswordIsDerivedFromItsID(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper")
	}
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer zk.Stop()
	for i := 0; i < 5; i++ {
		c, resp, err := Connect(zk.Addr, "pw", NewTranscript(), DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := migrate.ZooKeeperPassword(resp.SessionID)
		c.Close()
		if !bytes.Equal(resp.Passwd, want) {
			t.Fatalf("session 0x%x: ZooKeeper's password %x, derived %x", resp.SessionID, resp.Passwd, want)
		}
	}
}
