package server

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// One write at a time must not allocate a fresh 512-entry log slice per
// write (about 50 KB): see server/node/raftmem.go.
func TestSequentialWritesAllocateLittle(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	create := func(i int) {
		c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: make([]byte, 100), ACL: zkproto.OpenACLUnsafe()})
		if h, _ := c.reply(); h.Err != zkproto.ErrOK {
			t.Fatalf("create %d: %v", i, h.Err)
		}
	}
	for i := 0; i < 50; i++ { // warm up caches and buffers
		create(i)
	}
	const n = 400
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 50; i < 50+n; i++ {
		create(i)
	}
	runtime.ReadMemStats(&after)
	perWrite := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated per create (server and client)", perWrite)
	if perWrite > 32<<10 {
		t.Fatalf("%d bytes allocated per sequential create, want under 32 KiB", perWrite)
	}
}
