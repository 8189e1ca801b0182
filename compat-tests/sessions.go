package compattests

import (
	"bytes"
	"fmt"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Helpers of the sessions area.

// ssExpiryWait bounds waiting for a 4000 ms session to expire: ZooKeeper
// expires in tickTime buckets, so up to timeout + 2 ticks.
const ssExpiryWait = 12 * time.Second

// ssLogConnect records what a handshake answered beyond what S.Connect logs:
// whether the password is all zeros (the expired-style answer).
func ssLogConnect(s *S, c *Client) {
	if c == nil {
		return
	}
	s.T.Logf("%s passwdZero=%v", c.Name, bytes.Equal(c.Passwd, make([]byte, zkproto.PasswordLength)))
}

// ssClosed records whether the server closed c within wait.
func ssClosed(s *S, c *Client, wait time.Duration) {
	if c == nil {
		return
	}
	s.T.Logf("%s closed=%v", c.Name, c.Closed(wait))
}

// ssReconnect opens a new connection to c's session.
func ssReconnect(s *S, c *Client, name string, passwd []byte) *Client {
	if c == nil {
		s.Failf("reconnect of a client that did not connect")
		return nil
	}
	if passwd == nil {
		passwd = c.Passwd
	}
	return s.Connect(name, DialOptions{SessionID: c.SessionID, Passwd: passwd, Timeout: c.Timeout, LastZxidSeen: c.LastZxid})
}

// ssConnectPipelined writes the ConnectRequest and the given requests in one
// write, before any answer, then reads the ConnectResponse and the replies.
func ssConnectPipelined(s *S, name string, ops []zkproto.OpCode, reqs []zkproto.Record) *Client {
	node := s.nextNode()
	nc, err := dialRaw(s.Addrs[node])
	if err != nil {
		s.Failf("dial: %v", err)
		return nil
	}
	c := &Client{Name: name, nc: nc, fr: zkproto.NewFrameReader(nc, 4<<20), rec: s.T}
	var e zkproto.Encoder
	off := e.StartFrame()
	cr := zkproto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, zkproto.PasswordLength), HasReadOnly: true}
	cr.Encode(&e)
	e.FinishFrame(off)
	for i, op := range ops {
		off := e.StartFrame()
		h := zkproto.RequestHeader{Xid: int32(i + 1), Type: op}
		h.Encode(&e)
		reqs[i].Encode(&e)
		e.FinishFrame(off)
		s.T.request(name, op, reqs[i])
	}
	c.xid = int32(len(ops))
	if err := c.writeRaw(e.Bytes()); err != nil {
		s.T.Logf("%s < %s", name, normErr(err))
		nc.Close()
		return nil
	}
	frame, err := c.readFrame()
	if err != nil {
		s.T.Logf("%s < %s", name, normErr(err))
		nc.Close()
		return nil
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame, &resp); err != nil {
		s.Failf("connect response: %v", err)
		nc.Close()
		return nil
	}
	c.SessionID, c.Passwd, c.Timeout = resp.SessionID, resp.Passwd, resp.TimeOut
	s.track(c, node, true)
	s.T.Logf("%s connected timeout=%d session=%s", name, resp.TimeOut, s.T.Session(resp.SessionID))
	for i, op := range ops {
		r, err := c.Receive(int32(i+1), op)
		if err != nil {
			s.T.Logf("%s < %s", name, normErr(err))
			return c
		}
		s.T.reply(name, r)
	}
	return c
}

func init() {
	register(
		&Scenario{Area: "sessions", Name: "connect with and without the readOnly byte", Run: func(s *S) {
			a := s.Connect("a", DialOptions{})
			b := s.Connect("b", DialOptions{NoReadOnly: true})
			s.Create(a, s.P("x"), []byte("a"), 0)
			s.Get(b, s.P("x"), false)
			s.Do(b, zkproto.OpPing, nil)
		}},
		&Scenario{Area: "sessions", Name: "timeout negotiation bounds", Needs: NeedTimeouts, Run: func(s *S) {
			for i, t := range []int32{1, 3999, 4000, 10000, 40000, 40001, 1000000000} {
				s.Connect(fmt.Sprintf("c%d", i), DialOptions{Timeout: t})
			}
		}},
		&Scenario{Area: "sessions", Name: "negative requested timeout", Needs: NeedTimeouts, Run: func(s *S) {
			s.Connect("neg", DialOptions{Timeout: -5})
		}},
		&Scenario{Area: "sessions", Name: "reconnect with the right password keeps the session", Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 10000})
			s.Create(a, s.P("e"), []byte("x"), int32(zkproto.ModeEphemeral))
			a2 := ssReconnect(s, a, "a2", nil)
			ssLogConnect(s, a2)
			// The server closes the session's previous connection.
			ssClosed(s, a, 2*time.Second)
			s.Exists(a2, s.P("e"), false)
			s.Do(a2, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
			s.Create(a2, s.P("e2"), nil, int32(zkproto.ModeEphemeral))
			s.Delete(a2, s.P("e"), -1)
		}},
		&Scenario{Area: "sessions", Name: "reconnect renegotiates the timeout", Needs: NeedTimeouts, Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 10000})
			a2 := s.Connect("a2", DialOptions{SessionID: a.SessionID, Passwd: a.Passwd, Timeout: 20000})
			s.Do(a2, zkproto.OpPing, nil)
			a3 := s.Connect("a3", DialOptions{SessionID: a.SessionID, Passwd: a.Passwd, Timeout: 100})
			s.Do(a3, zkproto.OpPing, nil)
		}},
		&Scenario{Area: "sessions", Name: "reconnect with a wrong password", Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 10000})
			s.Create(a, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			bad := append([]byte(nil), a.Passwd...)
			bad[0] ^= 0xff
			x := s.Connect("x", DialOptions{SessionID: a.SessionID, Passwd: bad})
			ssLogConnect(s, x)
			ssClosed(s, x, 2*time.Second)
			// The live connection was kicked all the same; the session lives.
			ssClosed(s, a, 2*time.Second)
			a2 := ssReconnect(s, a, "a2", nil)
			s.Exists(a2, s.P("e"), false)
		}},
		&Scenario{Area: "sessions", Name: "reconnect to an unknown session", Run: func(s *S) {
			x := s.Connect("x", DialOptions{SessionID: 0x0123456789abcdef, Passwd: bytes.Repeat([]byte{7}, 16)})
			ssLogConnect(s, x)
			ssClosed(s, x, 2*time.Second)
			y := s.Connect("y", DialOptions{SessionID: 0x0123456789abcdef, NoReadOnly: true})
			ssLogConnect(s, y)
			ssClosed(s, y, 2*time.Second)
		}},
		&Scenario{Area: "sessions", Name: "reconnect with a short password", Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 10000})
			x := s.Connect("x", DialOptions{SessionID: a.SessionID, Passwd: a.Passwd[:8]})
			ssLogConnect(s, x)
			ssClosed(s, x, 2*time.Second)
		}},
		&Scenario{Area: "sessions", Name: "closeSession removes ephemerals and fires watches", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("p/e"), []byte("x"), int32(zkproto.ModeEphemeral))
			s.Create(a, s.P("keep"), nil, 0)
			s.Exists(b, s.P("p/e"), true)
			s.Children(b, s.P("p"), true)
			s.Do(a, zkproto.OpCloseSession, nil)
			ssClosed(s, a, 2*time.Second)
			s.Flush(b)
			s.Children(b, s.P("p"), false)
			s.Exists(b, s.P("keep"), false)
			// The closed session cannot be resumed.
			x := ssReconnect(s, a, "x", nil)
			ssLogConnect(s, x)
		}},
		&Scenario{Area: "sessions", Name: "closeSession deletes many ephemerals in ZooKeeper's order", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("p"), nil, 0)
			wtAdd(s, b, s.P("p"), zkproto.AddWatchPersistentRecursive)
			for _, n := range []string{"alpha", "b", "c-1", "zeta", "0", "member", "leader"} {
				s.Create(a, s.P("p/"+n), nil, int32(zkproto.ModeEphemeral))
			}
			for i := 0; i < 3; i++ {
				s.Create(a, s.P("p/lock-"), nil, int32(zkproto.ModeEphemeralSequential))
			}
			s.Create(a, s.P("q"), nil, int32(zkproto.ModeEphemeral))
			s.Do(a, zkproto.OpCloseSession, nil)
			s.Flush(b)
		}},
		&Scenario{Area: "sessions", Name: "expiry deletes ephemerals and fires watches", Needs: NeedTimeouts, Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 4000})
			b := s.Client("b")
			s.Create(a, s.P("e"), []byte("x"), int32(zkproto.ModeEphemeral))
			s.Exists(b, s.P("e"), true)
			s.Children(b, s.P(""), true)
			// The client goes quiet without closing its session.
			a.Close()
			s.Await(b, 2, ssExpiryWait)
			s.Exists(b, s.P("e"), false)
			x := ssReconnect(s, a, "x", nil)
			ssLogConnect(s, x)
		}},
		&Scenario{Area: "sessions", Name: "pings keep a session alive", Needs: NeedTimeouts, Run: func(s *S) {
			a := s.Connect("a", DialOptions{Timeout: 4000})
			b := s.Client("b")
			s.Create(a, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			s.Exists(b, s.P("e"), true)
			// 6 s of pings every second: well past the 4 s timeout.
			deadline := time.Now().Add(6 * time.Second)
			for time.Now().Before(deadline) {
				s.Flush(a)
				time.Sleep(time.Second)
			}
			s.Flush(b)
			// A write, not a read: a read's reply zxid would show unrelated
			// server-wide transactions of the 6 s window.
			s.Set(a, s.P("e"), []byte("alive"), -1)
		}},
		&Scenario{Area: "sessions", Name: "lastZxidSeen ahead of the server", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			s.Connect("new", DialOptions{LastZxidSeen: 1 << 40})
			// The same refusal for the live session leaves its connection alone.
			s.Connect("again", DialOptions{SessionID: a.SessionID, Passwd: a.Passwd, LastZxidSeen: 1 << 40})
			s.Exists(a, s.P("x"), false)
		}},
		&Scenario{Area: "sessions", Name: "lastZxidSeen equal to the server's is accepted", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			a2 := ssReconnect(s, a, "a2", nil)
			s.Exists(a2, s.P("x"), false)
		}},
		&Scenario{Area: "sessions", Name: "requests pipelined right after the ConnectRequest", Run: func(s *S) {
			c := ssConnectPipelined(s, "c",
				[]zkproto.OpCode{zkproto.OpCreate, zkproto.OpGetData, zkproto.OpSetData, zkproto.OpExists},
				[]zkproto.Record{
					&zkproto.CreateRequest{Path: s.P("x"), Data: []byte("1"), ACL: zkproto.OpenACLUnsafe()},
					&zkproto.GetDataRequest{Path: s.P("x")},
					&zkproto.SetDataRequest{Path: s.P("x"), Data: []byte("2"), Version: -1},
					&zkproto.ExistsRequest{Path: s.P("x")},
				})
			s.Get(c, s.P("x"), false)
		}},
		&Scenario{Area: "sessions", Name: "ping replies with xid -2 whatever xid it carried", Run: func(s *S) {
			c := s.Client("c")
			for _, xid := range []int32{-2, 5, 0, -100} {
				s.T.Logf("c > ping xid=%d", xid)
				if err := c.SendXid(xid, zkproto.OpPing, nil); err != nil {
					s.Failf("send: %v", err)
					return
				}
				r, err := c.Receive(zkproto.XidPing, zkproto.OpPing)
				if err != nil {
					s.T.Logf("c < %s", normErr(err))
					return
				}
				s.T.Logf("c < reply xid=%d", r.Header.Xid)
				s.T.reply(c.Name, r)
			}
			s.Create(c, s.P("x"), nil, 0)
		}},
		&Scenario{Area: "sessions", Name: "auth reply echoes the xid", Run: func(s *S) {
			c := s.Client("c")
			wtDoXid(s, c, zkproto.XidAuth, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("alice:pw")})
			wtDoXid(s, c, 77, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")})
			s.Do(c, zkproto.OpWhoAmI, nil)
		}},
		&Scenario{Area: "sessions", Name: "whoAmI before and after auth", Needs: NeedSuper, Run: func(s *S) {
			c := s.Client("c")
			s.Do(c, zkproto.OpWhoAmI, nil)
			s.Auth(c, "alice:secret")
			s.Do(c, zkproto.OpWhoAmI, nil)
			s.Auth(c, "alice:secret")
			s.Do(c, zkproto.OpWhoAmI, nil)
			s.Auth(c, s.Super())
			s.Do(c, zkproto.OpWhoAmI, nil)
			s.Do(c, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "ip", Auth: []byte("10.0.0.1")})
			s.Do(c, zkproto.OpWhoAmI, nil)
		}},
		&Scenario{Area: "sessions", Name: "auth belongs to the connection, not the session", Run: func(s *S) {
			a := s.Client("a")
			s.Auth(a, "alice:secret")
			s.Do(a, zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("d"), Data: []byte("x"), ACL: zkproto.CreatorAllACL()})
			a2 := ssReconnect(s, a, "a2", nil)
			s.Do(a2, zkproto.OpWhoAmI, nil)
			s.Get(a2, s.P("d"), false)
			s.Auth(a2, "alice:secret")
			s.Get(a2, s.P("d"), false)
		}},
		&Scenario{Area: "sessions", Name: "getEphemerals lists only the own session", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("a1"), nil, int32(zkproto.ModeEphemeral))
			s.Create(a, s.P("ab"), nil, int32(zkproto.ModeEphemeral))
			s.Create(a, s.P("p"), nil, 0)
			s.Create(a, s.P("p/a2"), nil, int32(zkproto.ModeEphemeral))
			s.Create(b, s.P("b1"), nil, int32(zkproto.ModeEphemeral))
			s.Do(a, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
			s.Do(a, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("a")})
			s.Do(a, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("p/")})
			s.Do(b, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
			s.Do(b, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("a")})
			c := s.Client("c")
			s.Do(c, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
		}},
		&Scenario{Area: "sessions", Name: "another session sees the ephemeral owner", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create2(a, s.P("e"), []byte("x"), int32(zkproto.ModeEphemeral))
			s.Exists(b, s.P("e"), false)
			s.Get(b, s.P("e"), false)
			s.Create(b, s.P("e2"), nil, int32(zkproto.ModeEphemeralSequential))
			s.Exists(a, s.P("e20000000001"), false)
			// Another session may delete someone else's ephemeral.
			s.Delete(b, s.P("e"), -1)
			s.Do(a, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: s.P("")})
		}},
		&Scenario{Area: "sessions", Name: "closing one session leaves another's ephemerals", Run: func(s *S) {
			a, b := s.Client("a"), s.Client("b")
			s.Create(a, s.P("ea"), nil, int32(zkproto.ModeEphemeral))
			s.Create(b, s.P("eb"), nil, int32(zkproto.ModeEphemeral))
			s.Do(a, zkproto.OpCloseSession, nil)
			s.Children(b, s.P(""), false)
		}},
		&Scenario{Area: "sessions", Name: "each session creation consumes a zxid", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			s.Client("b")
			s.Client("c")
			s.Create(a, s.P("y"), nil, 0)
			s.Exists(a, s.P("x"), false)
		}},
		&Scenario{Area: "sessions", Name: "reconnect does not consume a zxid", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			a2 := ssReconnect(s, a, "a2", nil)
			s.Create(a2, s.P("y"), nil, 0)
		}},
		&Scenario{Area: "sessions", Name: "requests after closeSession are not answered", Run: func(s *S) {
			a := s.Client("a")
			s.Create(a, s.P("x"), nil, 0)
			// The create goes out once the close is answered: sent in the same
			// TCP write, ZooKeeper itself sometimes still answers it
			// (SessionExpired) and sometimes not, a race inside its NIO loop.
			xid1, _ := a.Send(zkproto.OpCloseSession, nil)
			r, err := a.Receive(xid1, zkproto.OpCloseSession)
			if err != nil {
				s.T.Logf("a < %s", normErr(err))
			} else {
				s.T.reply("a", r)
			}
			_, _ = a.Send(zkproto.OpCreate, &zkproto.CreateRequest{Path: s.P("y"), ACL: zkproto.OpenACLUnsafe()})
			ssClosed(s, a, 2*time.Second)
			b := s.Client("b")
			s.Exists(b, s.P("y"), false)
		}},
	)
}
