package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestPickIsBelowTheEphemeralRangeFreeAndNeverRepeated(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 20; i++ {
		port, err := Pick("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < lowest || port >= ephemeralStart() {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, ephemeralStart())
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
	}
}
