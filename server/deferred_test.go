package server

import (
	"fmt"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// frameKind is one frame of a connection's output as the tests see it.
type frameKind struct {
	xid  int32
	err  zkproto.ErrCode
	zxid int64
	ev   string // a watch event's "type path"
}

func (c *testClient) frame() frameKind {
	c.t.Helper()
	d := zkproto.NewDecoder(c.next())
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		c.t.Fatal(err)
	}
	f := frameKind{xid: h.Xid, err: h.Err, zxid: h.Zxid}
	if h.Xid == zkproto.XidNotification {
		var ev zkproto.WatcherEvent
		if err := ev.Decode(d); err != nil {
			c.t.Fatal(err)
		}
		f.ev = fmt.Sprintf("%d %s", ev.Type, ev.Path)
	}
	return f
}

// createWithZero creates each path with data "0", one at a time.
func (c *testClient) createWithZero(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: p, Data: []byte("0"), ACL: zkproto.OpenACLUnsafe()})
		if h, _ := c.reply(); h.Err != zkproto.ErrOK {
			t.Fatalf("create %s: %v", p, h.Err)
		}
	}
}

// A read pipelined between two writes of its connection sees the first and
// not the second, whatever path they touch, and its watch event comes after
// its reply and before the reply of the write that fires it. Many rounds in
// one burst put both writes in one applied batch, so the batch must be split
// at the read's place.
func TestDeferredReadsAnswerAtTheirPlaceInTheSessionOrder(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	c.createWithZero(t, "/a", "/b")
	const rounds = 400
	type round struct{ setA, getB, setB int32 }
	rs := make([]round, rounds)
	for i := range rs {
		v := []byte(fmt.Sprint(i + 1))
		rs[i].setA = c.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: v, Version: -1})
		rs[i].getB = c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/b", Watch: true})
		rs[i].setB = c.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/b", Data: v, Version: -1})
	}
	changed := fmt.Sprintf("%d /b", zkproto.EventNodeDataChanged)
	for i, r := range rs {
		setA := c.frame()
		if setA.xid != r.setA || setA.err != zkproto.ErrOK {
			t.Fatalf("round %d: got %+v, want the reply of setData /a (xid %d)", i, setA, r.setA)
		}
		f := c.frame()
		if f.xid != r.getB || f.err != zkproto.ErrOK {
			t.Fatalf("round %d: got %+v, want the reply of getData /b (xid %d)", i, f, r.getB)
		}
		ev := c.frame()
		if ev.ev != changed {
			t.Fatalf("round %d: got %+v after getData's reply, want the event %q", i, ev, changed)
		}
		setB := c.frame()
		if setB.xid != r.setB || setB.err != zkproto.ErrOK {
			t.Fatalf("round %d: got %+v, want the reply of setData /b (xid %d)", i, setB, r.setB)
		}
		if f.zxid < setA.zxid || f.zxid >= setB.zxid {
			t.Fatalf("round %d: getData answered at zxid %d, want it between its neighbours %d and %d", i, f.zxid, setA.zxid, setB.zxid)
		}
	}
}

// The value a deferred read returns is the one before its connection's next
// write, in every round of a burst.
func TestDeferredReadsNeverSeeTheirConnectionsLaterWrites(t *testing.T) {
	s := startTestServer(t, nil)
	c := dial(t, s)
	c.createWithZero(t, "/a", "/b")
	const rounds = 400
	var xids []int32
	for i := 1; i <= rounds; i++ {
		v := []byte(fmt.Sprint(i))
		xids = append(xids,
			c.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: v, Version: -1}),
			c.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/b"}),
			c.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/b"}),
			c.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/b", Data: v, Version: -1}))
	}
	for i, want := range xids {
		h, d := c.reply()
		if h.Xid != want || h.Err != zkproto.ErrOK {
			t.Fatalf("reply %d: xid %d err %v, want xid %d", i, h.Xid, h.Err, want)
		}
		round := i/4 + 1
		switch i % 4 {
		case 1:
			var r zkproto.GetDataResponse
			if err := r.Decode(d); err != nil || string(r.Data) != fmt.Sprint(round-1) || r.Stat.Version != int32(round-1) {
				t.Fatalf("round %d: getData /b saw %q v%d (%v), want %q v%d", round, r.Data, r.Stat.Version, err, fmt.Sprint(round-1), round-1)
			}
		case 2:
			var r zkproto.ExistsResponse
			if err := r.Decode(d); err != nil || r.Stat.Version != int32(round-1) {
				t.Fatalf("round %d: exists /b saw v%d (%v), want v%d", round, r.Stat.Version, err, round-1)
			}
		}
	}
}
