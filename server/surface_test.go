package server

import (
	"crypto/rand"
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A second front door needs the node's surface alone: a session opened and
// an ephemeral created through it are what a ZooKeeper client sees, and
// closing that session deletes the ephemeral and fires the client's watch.
func TestNodeSurfaceAloneServesASecondDoor(t *testing.T) {
	s := startTestServer(t, nil)
	n := s.Node()

	passwd := make([]byte, zkproto.PasswordLength)
	if _, err := rand.Read(passwd); err != nil {
		t.Fatal(err)
	}
	sid, err := n.CreateSession(0, n.NegotiateTimeout(10000), passwd)
	if err != nil {
		t.Fatalf("create session through the node: %v", err)
	}
	create := &sm.Command{
		Header: sm.Header{Session: sid, Seq: 1, Time: time.Now().UnixMilli()}, // the first write of the session
		Op:     &sm.Create{OpCode: zkproto.OpCreate, Path: "/member", Data: []byte("native"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeEphemeral)},
	}
	res, err := n.ProposeSync(create)
	if err != nil || res.Err != zkproto.ErrOK {
		t.Fatalf("create ephemeral through the node: %v %v", res, err)
	}

	conn, _, err := gozk.Connect([]string{s.ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, stat, watch, err := conn.GetW("/member")
	if err != nil {
		t.Fatalf("ZooKeeper client reads the node's ephemeral: %v", err)
	}
	if string(data) != "native" || stat.EphemeralOwner != sid {
		t.Fatalf("ZooKeeper client sees %q owned by 0x%x, want %q owned by 0x%x", data, stat.EphemeralOwner, "native", sid)
	}
	eph, _, err := conn.Children("/")
	if err != nil || !slices.Contains(eph, "member") {
		t.Fatalf("children of /: %v %v", eph, err)
	}

	if err := n.CloseSession(sid, 0, 2); err != nil {
		t.Fatalf("close session through the node: %v", err)
	}
	select {
	case ev := <-watch:
		if ev.Type != gozk.EventNodeDeleted || ev.Path != "/member" {
			t.Fatalf("watch event %+v, want NodeDeleted /member", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ZooKeeper client's watch did not fire when the node closed the session")
	}
	if ok, _, err := conn.Exists("/member"); err != nil || ok {
		t.Fatalf("ephemeral still there after its session closed: %v %v", ok, err)
	}
}

// The rooms and their doors (doc.go): the core imports no front door and
// nothing of sockets or HTTP; front doors never import each other; the
// admin endpoint reaches a door only through an interface.
func TestPackageBoundaries(t *testing.T) {
	const mod = "github.com/zkbridge/zkbridge/"
	imports := func(dir string) []string {
		pkg, err := build.ImportDir(filepath.Join(".", dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		return pkg.Imports
	}
	forbidden := map[string][]string{
		"node":   {mod + "server/zk", mod + "server/admin", mod + "server", "net/http", "google.golang.org/grpc"},
		"zk":     {mod + "server/admin", mod + "server/native", mod + "server", "net/http"},
		"admin":  {mod + "server/zk", mod + "server/native"},
		"native": {mod + "server/zk", mod + "server/admin", mod + "server"},
		"config": {mod + "server/node", mod + "server/zk", mod + "server/admin"},
	}
	for dir, bad := range forbidden {
		for _, imp := range imports(dir) {
			if slices.Contains(bad, imp) || (dir == "node" && strings.HasPrefix(imp, "net") && imp != "net") {
				t.Errorf("server/%s imports %s", dir, imp)
			}
		}
	}
}
