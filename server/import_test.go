package server

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/migrate"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// A session imported from ZooKeeper, with the password ZooKeeper derived
// for it, is resumed by its client on zkbridge with its old id and
// password, even with a lastZxidSeen from the old ensemble (zxidBase is
// raised above it); its imported ephemeral is still its own.
func TestImportedSessionResumesWithItsZooKeeperPassword(t *testing.T) {
	s := startTestServer(t, nil)
	n := s.Node()
	const sid = int64(0x0100017f0000abcd) // server 1's session, as ZooKeeper numbers them
	const oldZxid = int64(0x1000000a0)    // epoch 1 of the old ensemble
	pw := migrate.ZooKeeperPassword(sid)
	for _, op := range []sm.Op{
		&sm.SetZxidBase{Base: 2 << 32}, // (source epoch + 1) << 32
		&sm.ImportSessions{Sessions: []sm.ImportedSession{{ID: sid, Timeout: 10000, Password: pw}}},
		&sm.ImportNodes{Nodes: []sm.ImportedNode{
			{Path: "/app", Czxid: 0x100000002, Mzxid: 0x100000002, Pzxid: 0x100000003, Creates: 1},
			{Path: "/app/member", Data: []byte("host:1"), Czxid: 0x100000003, Mzxid: 0x100000003, Pzxid: 0x100000003, EphemeralOwner: sid},
		}},
	} {
		res, err := n.ProposeSync(&sm.Command{Header: sm.Header{Time: time.Now().UnixMilli()}, Op: op})
		if err != nil || res.Err != zkproto.ErrOK {
			t.Fatalf("%T: %+v %v", op, res, err)
		}
	}
	c, resp := dialSession(t, s, sid, pw, oldZxid)
	if resp.SessionID != sid || string(resp.Passwd) != string(pw) || resp.TimeOut == 0 {
		t.Fatalf("reconnect with the ZooKeeper session: %+v", resp)
	}
	c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/app/member"})
	h, d := c.reply()
	var got zkproto.GetDataResponse
	if h.Err != zkproto.ErrOK || got.Decode(d) != nil || string(got.Data) != "host:1" || got.Stat.EphemeralOwner != sid || got.Stat.Czxid != 0x100000003 {
		t.Fatalf("the imported ephemeral: %v %+v", h.Err, got)
	}
	if h.Zxid <= oldZxid {
		t.Fatalf("reply zxid %#x is not above the old ensemble's %#x", h.Zxid, oldZxid)
	}
	// A wrong password is refused, as ZooKeeper refuses it.
	_, bad := dialSession(t, s, sid, make([]byte, 16), 0)
	if bad.SessionID != 0 {
		t.Fatalf("a wrong password resumed the session: %+v", bad)
	}
	// The session ends as any other: its ephemeral goes with it.
	c2, _ := dialSession(t, s, sid, pw, 0)
	c2.send(zkproto.OpCloseSession, nil)
	if h, _ := c2.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("closeSession: %v", h.Err)
	}
	v, err := n.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Get("/app/member"); err != zkproto.ErrNoNode {
		t.Fatalf("the ephemeral after its session closed: %v", err)
	}
}
