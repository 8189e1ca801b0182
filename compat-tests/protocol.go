package compattests

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// rawRequest encodes a request frame with any opcode and body bytes.
func rawRequest(xid int32, op int32, body []byte) []byte {
	var e zkproto.Encoder
	off := e.StartFrame()
	e.Int(xid)
	e.Int(op)
	e.Raw(body)
	e.FinishFrame(off)
	return e.Bytes()
}

// recordBytes is a record's encoding without a frame.
func recordBytes(r zkproto.Record) []byte { return zkproto.Marshal(r) }

// RawSend writes bytes as they are and records the first frame that comes
// back: its reply header and body size, or that the server closed the
// connection, or that nothing came within wait.
func (s *S) RawSend(c *Client, label string, b []byte, wait time.Duration) {
	if c == nil {
		s.Failf("raw %s on a client that did not connect", label)
		return
	}
	s.T.Logf("%s > raw %s", c.Name, label)
	if err := s.catchUp(c); err != nil {
		s.T.Logf("%s < closed", c.Name)
		return
	}
	defer s.nodes.did(s.nodeOf(c))
	if err := c.writeRaw(b); err != nil {
		s.T.Logf("%s < closed", c.Name)
		return
	}
	s.rawReceive(c, wait)
}

func (s *S) rawReceive(c *Client, wait time.Duration) {
	_ = c.nc.SetReadDeadline(time.Now().Add(wait))
	for {
		f, err := c.fr.Next()
		if err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				s.T.Logf("%s < nothing within %v", c.Name, wait)
			} else {
				s.T.Logf("%s < closed", c.Name)
			}
			return
		}
		d := zkproto.NewDecoder(f)
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			s.T.Logf("%s < short frame %d bytes", c.Name, len(f))
			return
		}
		if h.Xid == zkproto.XidNotification {
			var ev zkproto.WatcherEvent
			if ev.Decode(d) == nil {
				s.T.event(c.Name, h, ev)
			}
			continue
		}
		s.T.Logf("%s < xid=%d zxid=%s err=%s body=%d bytes", c.Name, h.Xid, s.T.ReadZxid(h.Zxid), h.Err.Name(), d.Remaining())
		return
	}
}

// CallXid sends a request with an explicit xid and records the reply.
func (s *S) CallXid(c *Client, xid int32, op zkproto.OpCode, req zkproto.Record) {
	s.T.Logf("%s > %s xid=%d", c.Name, op, xid)
	if err := s.catchUp(c); err != nil {
		s.T.Logf("%s < closed", c.Name)
		return
	}
	defer s.nodes.did(s.nodeOf(c))
	if err := c.SendXid(xid, op, req); err != nil {
		s.T.Logf("%s < closed", c.Name)
		return
	}
	s.rawReceive(c, 5*time.Second)
}

// lengthPrefix is a bare 4-byte frame length.
func lengthPrefix(n int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(n))
}

func init() {
	register(
		&Scenario{Area: "protocol", Name: "unknown opcode is Unimplemented then close", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.RawSend(c, "op 999", rawRequest(1, 999, nil), 5*time.Second)
			s.RawSend(c, "exists after", rawRequest(2, int32(zkproto.OpExists), recordBytes(&zkproto.ExistsRequest{Path: s.P("a")})), 5*time.Second)
			d := s.Client("c2")
			s.RawSend(d, "op 50 with a body", rawRequest(7, 50, []byte{1, 2, 3, 4}), 5*time.Second)
		}},
		&Scenario{Area: "protocol", Name: "oversize and negative frame lengths close without a reply", Run: func(s *S) {
			for i, n := range []int32{zkproto.DefaultMaxBuffer + 1, math.MaxInt32, -1, math.MinInt32} {
				c := s.Client("c" + string(rune('1'+i)))
				s.RawSend(c, fmt.Sprintf("length %d", n), append(lengthPrefix(n), make([]byte, 64)...), 5*time.Second)
			}
		}},
		&Scenario{Area: "protocol", Name: "frame shorter than a request header", Run: func(s *S) {
			c := s.Client("c1")
			s.RawSend(c, "4-byte frame", append(lengthPrefix(4), 0, 0, 0, 1), 5*time.Second)
			d := s.Client("c2")
			s.RawSend(d, "empty frame", lengthPrefix(0), 5*time.Second)
		}},
		&Scenario{Area: "protocol", Name: "truncated create record", Run: func(s *S) {
			c := s.Client("c1")
			body := recordBytes(&zkproto.CreateRequest{Path: s.P("a"), Data: []byte("xyz"), ACL: zkproto.OpenACLUnsafe()})
			s.RawSend(c, "create cut short", rawRequest(1, int32(zkproto.OpCreate), body[:len(body)-10]), 5*time.Second)
			s.Exists(c, s.P(""), false)
			d := s.Client("c2")
			s.Exists(d, s.P("a"), false)
			m := recordBytes(&zkproto.MultiRequest{Ops: []zkproto.MultiOp{OpCreate(s.P("m"), nil, 0)}})
			s.RawSend(d, "multi cut short", rawRequest(5, int32(zkproto.OpMulti), m[:len(m)-9]), 5*time.Second)
			s.Exists(d, s.P("m"), false)
			e := s.Client("c3")
			sd := recordBytes(&zkproto.SetDataRequest{Path: s.P("a"), Data: []byte("x"), Version: -1})
			s.RawSend(e, "setData cut short", rawRequest(6, int32(zkproto.OpSetData), sd[:len(sd)-2]), 5*time.Second)
			s.Exists(e, s.P(""), false)
		}},
		&Scenario{Area: "protocol", Name: "truncated read record", Run: func(s *S) {
			c := s.Client("c1")
			body := recordBytes(&zkproto.GetDataRequest{Path: s.P("")})
			s.RawSend(c, "getData cut short", rawRequest(1, int32(zkproto.OpGetData), body[:len(body)-3]), 5*time.Second)
			s.Exists(c, s.P(""), false)
			d := s.Client("c2")
			s.RawSend(d, "exists without its watch flag", rawRequest(2, int32(zkproto.OpExists), body[:len(body)-1]), 5*time.Second)
			s.Exists(d, s.P(""), false)
			e := s.Client("c3")
			a := recordBytes(&zkproto.AuthPacket{Scheme: "digest", Auth: []byte("a:b")})
			s.RawSend(e, "auth cut short", rawRequest(-4, int32(zkproto.OpAuth), a[:len(a)-2]), 5*time.Second)
			s.Exists(e, s.P(""), false)
			f := s.Client("c4")
			w := recordBytes(&zkproto.SetWatches{RelativeZxid: 1, DataWatches: []string{s.P("")}, ExistWatches: []string{}, ChildWatches: []string{}})
			s.RawSend(f, "setWatches cut short", rawRequest(-8, int32(zkproto.OpSetWatches), w[:len(w)-3]), 5*time.Second)
			s.Exists(f, s.P(""), false)
		}},
		&Scenario{Area: "protocol", Name: "string length beyond the frame", Run: func(s *S) {
			c := s.Client("c1")
			s.RawSend(c, "getData path length 1000 in a short frame", rawRequest(1, int32(zkproto.OpGetData), append(lengthPrefix(1000), 'x', 0)), 5*time.Second)
			s.Exists(c, s.P(""), false)
			d := s.Client("c2")
			s.RawSend(d, "getData path length -5", rawRequest(1, int32(zkproto.OpGetData), append(lengthPrefix(-5), 'x', 0)), 5*time.Second)
			s.Exists(d, s.P(""), false)
		}},
		&Scenario{Area: "protocol", Name: "check outside a multi", Differs: "ZooKeeper 3.8.0 never answers a bare check (ZOOKEEPER-2623: the request is dropped and the client hangs); zkbridge answers Unimplemented and closes, as ZooKeeper 3.8.5+/3.9.3+ do",
			Unsafe: "a bare check stops a ZooKeeper 3.8.0 ensemble's request processing (ZOOKEEPER-2623): two of three nodes stopped serving when it was tried",
			Run: func(s *S) {
				c := s.Client("c1")
				s.Create(c, s.P("a"), nil, 0)
				s.RawSend(c, "check", rawRequest(2, int32(zkproto.OpCheck), recordBytes(&zkproto.CheckVersionRequest{Path: s.P("a"), Version: 0})), 5*time.Second)
				s.Flush(c)
			},
			Check: contains("c1 > raw check", "c1 < xid=2 zxid=z1 err=UNIMPLEMENTED body=0 bytes", "c1 < ping: closed")},
		// A server without a JAAS Server section has no SASL server: OK,
		// zxid 0, a null token, the connection stays (sasl_test.go covers a
		// server with one).
		&Scenario{Area: "protocol", Name: "sasl without a JAAS file",
			Run: func(s *S) {
				c := s.Client("c1")
				s.RawSend(c, "sasl", rawRequest(3, int32(zkproto.OpSASL), recordBytes(&zkproto.GetSASLRequest{Token: []byte("token")})), 5*time.Second)
				s.Flush(c)
			}},
		&Scenario{Area: "protocol", Name: "reconfig is disabled and consumes a zxid", Needs: NeedNoReconfig, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Do(c, zkproto.OpReconfig, &zkproto.ReconfigRequest{JoiningServers: "server.9=127.0.0.1:1:2;3", CurConfigID: -1})
			s.Create(c, s.P("b"), nil, 0)
			s.GetConfig(c, false)
		}},
		&Scenario{Area: "protocol", Name: "deleteContainer from a client", Run: func(s *S) {
			c := s.Client("c1")
			s.Do(c, zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: s.P("k"), ACL: zkproto.OpenACLUnsafe(), Flags: int32(zkproto.ModeContainer)})
			s.Do(c, zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{Path: s.P("k")})
			s.Do(c, zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{Path: s.P("missing")})
			s.Create(c, s.P("b"), nil, 0)
			s.Exists(c, s.P("k"), false)
		}},
		&Scenario{Area: "protocol", Name: "closeSession replies then closes", Run: func(s *S) {
			c := s.Client("c1")
			w := s.Client("watcher")
			s.Create(c, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			s.Exists(w, s.P("e"), true)
			s.Do(c, zkproto.OpCloseSession, nil)
			// Waited for, not probed with a request: a ZooKeeper follower
			// that has not closed the socket yet still answers one sent
			// right after the reply (seen once in a 3-node run).
			ssClosed(s, c, 3*time.Second)
			s.Await(w, 1, 3*time.Second)
			s.Exists(w, s.P("e"), false)
		}, Check: contains("c1 > closeSession", "c1 < OK", "c1 closed=true", "watcher ! NodeDeleted")},
		&Scenario{Area: "protocol", Name: "a request pipelined after closeSession is not applied", Run: func(s *S) {
			c := s.Client("c1")
			var b []byte
			b = append(b, rawRequest(1, int32(zkproto.OpCloseSession), nil)...)
			b = append(b, rawRequest(2, int32(zkproto.OpCreate), recordBytes(&zkproto.CreateRequest{Path: s.P("late"), ACL: zkproto.OpenACLUnsafe()}))...)
			s.RawSend(c, "closeSession then create", b, 5*time.Second)
			// ZooKeeper usually closes at once; when it had already queued
			// the create it answers it SessionExpired first (a race inside
			// ZooKeeper), so only the close and the create's absence count.
			s.T.Logf("c1 closed=%v", c.Closed(3*time.Second) || c.Closed(3*time.Second))
			d := s.Client("c2")
			if r, err := d.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: s.P("late")}); err != nil {
				s.T.Logf("c2 exists late: %s", normErr(err))
			} else {
				s.T.Logf("c2 exists late: %s", r.Header.Err.Name())
			}
		}},
		&Scenario{Area: "protocol", Name: "odd xids are echoed", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), []byte("x"), 0)
			for _, xid := range []int32{0, math.MaxInt32, -100, -3, math.MinInt32} {
				s.CallXid(c, xid, zkproto.OpGetData, &zkproto.GetDataRequest{Path: s.P("a")})
			}
			s.CallXid(c, -2, zkproto.OpExists, &zkproto.ExistsRequest{Path: s.P("a")})
			s.CallXid(c, -8, zkproto.OpExists, &zkproto.ExistsRequest{Path: s.P("a")})
			s.CallXid(c, 12345, zkproto.OpSetData, &zkproto.SetDataRequest{Path: s.P("a"), Data: []byte("y"), Version: -1})
			s.CallXid(c, 12345, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("a"), ACL: zkproto.OpenACLUnsafe()})
		}},
		&Scenario{Area: "protocol", Name: "trailing bytes after a record are ignored", Run: func(s *S) {
			c := s.Client("c1")
			junk := []byte{9, 9, 9, 9, 9, 9, 9}
			s.RawSend(c, "create + junk", rawRequest(1, int32(zkproto.OpCreate), append(recordBytes(&zkproto.CreateRequest{Path: s.P("a"), Data: []byte("d"), ACL: zkproto.OpenACLUnsafe()}), junk...)), 5*time.Second)
			s.RawSend(c, "getData + junk", rawRequest(2, int32(zkproto.OpGetData), append(recordBytes(&zkproto.GetDataRequest{Path: s.P("a")}), junk...)), 5*time.Second)
			s.RawSend(c, "ping + junk", rawRequest(-2, int32(zkproto.OpPing), junk), 5*time.Second)
			s.RawSend(c, "whoAmI + junk", rawRequest(3, int32(zkproto.OpWhoAmI), junk), 5*time.Second)
			s.Get(c, s.P("a"), false)
		}},
		&Scenario{Area: "protocol", Name: "ping replies carry xid -2 and the last zxid", Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			for _, xid := range []int32{-2, 5, 0, math.MaxInt32} {
				s.CallXid(c, xid, zkproto.OpPing, nil)
			}
			o := s.Client("other")
			s.Create(o, s.P("b"), nil, 0)
			s.CallXid(c, -2, zkproto.OpPing, nil)
		}},
		&Scenario{Area: "protocol", Name: "read replies carry the last zxid", Run: func(s *S) {
			a := s.Client("a")
			b := s.Client("b")
			s.Create(a, s.P("x"), nil, 0)
			s.Exists(b, s.P("x"), false)
			s.Create(a, s.P("x"), nil, 0) // fails, still a zxid
			s.Get(b, s.P("x"), false)
			s.Children(b, s.P(""), false)
			s.Do(b, zkproto.OpWhoAmI, nil)
			s.Do(b, zkproto.OpSync, &zkproto.SyncRequest{Path: s.P("x")})
			s.Do(b, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/"})
			s.Do(b, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: s.P("")})
			s.Exists(b, s.P("nothere"), false)
		}},
		&Scenario{Area: "protocol", Name: "getEphemerals prefix rules", Run: func(s *S) {
			c := s.Client("c1")
			o := s.Client("other")
			s.Create(c, s.P("a"), nil, int32(zkproto.ModeEphemeral))
			s.Create(c, s.P("ab"), nil, int32(zkproto.ModeEphemeral))
			s.Create(c, s.P("p"), nil, 0)
			s.Create(c, s.P("p/e"), nil, int32(zkproto.ModeEphemeral))
			s.Create(o, s.P("theirs"), nil, int32(zkproto.ModeEphemeral))
			for _, prefix := range []string{s.P("a"), s.P("a/"), s.P("p"), s.P("p/e"), s.P("zzz"), s.P("")} {
				s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: prefix})
			}
			// prefixes that mean "all": compare only our ephemerals' presence
			for _, prefix := range []string{"", "/", "  ", "a"} {
				s.Do(o, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: prefix})
			}
			s.T.Logf("other > getEphemerals null")
			if err := o.writeRaw(rawRequest(77, int32(zkproto.OpGetEphemerals), lengthPrefix(-1))); err != nil {
				s.Failf("send: %v", err)
				return
			}
			if r, err := o.Receive(77, zkproto.OpGetEphemerals); err != nil {
				s.T.Logf("other < %s", normErr(err))
			} else {
				s.T.reply(o.Name, r)
			}
		}},
		&Scenario{Area: "protocol", Name: "four-letter word after the handshake is a length", Run: func(s *S) {
			c := s.Client("c1")
			s.RawSend(c, "ruok", []byte("ruok"), 5*time.Second)
		}},
		&Scenario{Area: "protocol", Name: "two requests in one write", Run: func(s *S) {
			c := s.Client("c1")
			b := rawRequest(1, int32(zkproto.OpCreate), recordBytes(&zkproto.CreateRequest{Path: s.P("a"), ACL: zkproto.OpenACLUnsafe()}))
			b = append(b, rawRequest(2, int32(zkproto.OpExists), recordBytes(&zkproto.ExistsRequest{Path: s.P("a")}))...)
			s.RawSend(c, "create+exists", b, 5*time.Second)
			s.rawReceive(c, 5*time.Second)
		}},
		&Scenario{Area: "protocol", Name: "reserved opcodes after the handshake", Run: func(s *S) {
			for i, op := range []int32{int32(zkproto.OpNotify), int32(zkproto.OpError), 10, 1000} {
				c := s.Client("c" + string(rune('1'+i)))
				s.RawSend(c, "op", rawRequest(5, op, nil), 5*time.Second)
				s.rawReceive(c, 2*time.Second)
			}
		}},
	)
}
