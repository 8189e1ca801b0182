package compattests

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Scenario is one behaviour, run against a real ZooKeeper and against
// zkbridge with the same client code; the normalised transcripts must be
// equal. A scenario whose Differs is set is a deliberate difference: zkbridge
// is stricter or fixes a ZooKeeper bug. Its Check then judges zkbridge's
// transcript on its own, and the reason is listed in the README.
type Scenario struct {
	Area    string
	Name    string
	Differs string
	// Fresh scenarios look at server-wide state (the root's stat, node
	// counts) and need a server no other scenario has touched.
	Fresh bool
	Run   func(s *S)
	Check func(lines []string) error
}

// ID is the scenario's unique name.
func (sc *Scenario) ID() string { return sc.Area + "/" + sc.Name }

var unsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// Root is the scenario's own subtree, so scenarios can share a server.
func (sc *Scenario) Root() string {
	return "/" + unsafe.ReplaceAllString(sc.Area+"-"+sc.Name, "_")
}

// S is a scenario run against one server.
type S struct {
	T       *Transcript
	Addr    string
	Root    string
	Server  string // "zookeeper" or "zkbridge"
	clients []*Client
	failed  []string
}

// P joins the scenario root and a relative path ("" is the root itself).
func (s *S) P(rel string) string {
	if rel == "" {
		return s.Root
	}
	return s.Root + "/" + strings.TrimPrefix(rel, "/")
}

// Failf notes a harness failure (not a server behaviour): the scenario fails.
func (s *S) Failf(format string, args ...any) {
	s.failed = append(s.failed, fmt.Sprintf(format, args...))
}

// Connect opens a session and records the handshake's normalised outcome.
func (s *S) Connect(name string, o DialOptions) *Client {
	c, resp, err := Connect(s.Addr, name, s.T, o)
	if err != nil {
		s.T.Logf("%s connect: %v", name, normErr(err))
		return nil
	}
	s.clients = append(s.clients, c)
	s.T.Logf("%s connected timeout=%d session=%s passwdLen=%d readOnlyByte=%v", name, resp.TimeOut,
		s.T.Session(resp.SessionID), len(resp.Passwd), resp.HasReadOnly)
	return c
}

// Client opens a session with default options.
func (s *S) Client(name string) *Client { return s.Connect(name, DialOptions{}) }

// normErr names a failed exchange. A server that drops the connection may
// be seen mid-write (broken pipe) or mid-read: both are "closed".
func normErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err.Error()
	}
	if strings.HasPrefix(err.Error(), "no answer within") {
		return err.Error()
	}
	return "closed"
}

// Do sends a request, records it and its reply (or that the server closed
// the connection) and returns the reply.
func (s *S) Do(c *Client, op zkproto.OpCode, req zkproto.Record) *Reply {
	if c == nil {
		s.Failf("request %v on a client that did not connect", op)
		return nil
	}
	s.T.request(c.Name, op, req)
	r, err := c.Call(op, req)
	if err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	s.T.reply(c.Name, r)
	return r
}

// Flush makes sure every event the server queued for c so far has arrived:
// a ping's reply is queued after them.
func (s *S) Flush(c *Client) {
	if c == nil {
		return
	}
	r, err := c.Call(zkproto.OpPing, nil)
	if err != nil {
		s.T.Logf("%s < ping: %s", c.Name, normErr(err))
		return
	}
	if r.Header.Xid != zkproto.XidPing || r.Header.Err != zkproto.ErrOK {
		s.T.Logf("%s < ping reply xid=%d err=%s", c.Name, r.Header.Xid, r.Header.Err.Name())
	}
}

// Await waits up to d for n watch events on c (reaping, expiry), recording them.
func (s *S) Await(c *Client, n int, d time.Duration) {
	if got := c.WaitEvents(n, d); got != n {
		s.T.Logf("%s awaited %d events, got %d", c.Name, n, got)
	}
}

// Close ends every session the scenario opened (closeSession), so none
// expires later in another scenario's window.
func (s *S) closeAll() {
	for _, c := range s.clients {
		_, _ = c.Send(zkproto.OpCloseSession, nil)
		c.Closed(2 * time.Second)
		c.Close()
	}
	s.clients = nil
}

// Shorthands for the common requests.

// Create is create (op 1) with an open ACL.
func (s *S) Create(c *Client, path string, data []byte, flags int32) *Reply {
	return s.Do(c, zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags})
}

// Create2 is create2 (op 15) with an open ACL.
func (s *S) Create2(c *Client, path string, data []byte, flags int32) *Reply {
	return s.Do(c, zkproto.OpCreate2, &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags})
}

// Delete is delete (op 2).
func (s *S) Delete(c *Client, path string, version int32) *Reply {
	return s.Do(c, zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: version})
}

// Get is getData (op 4).
func (s *S) Get(c *Client, path string, watch bool) *Reply {
	return s.Do(c, zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: watch})
}

// Set is setData (op 5).
func (s *S) Set(c *Client, path string, data []byte, version int32) *Reply {
	return s.Do(c, zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: data, Version: version})
}

// Exists is exists (op 3).
func (s *S) Exists(c *Client, path string, watch bool) *Reply {
	return s.Do(c, zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: watch})
}

// Children is getChildren2 (op 12).
func (s *S) Children(c *Client, path string, watch bool) *Reply {
	return s.Do(c, zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: path, Watch: watch})
}

// Multi is multi (op 14).
func (s *S) Multi(c *Client, ops ...zkproto.MultiOp) *Reply {
	return s.Do(c, zkproto.OpMulti, &zkproto.MultiRequest{Ops: ops})
}

// Auth adds a digest identity "user:password".
func (s *S) Auth(c *Client, userPassword string) *Reply {
	return s.Do(c, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte(userPassword)})
}

// Op helpers build multi ops.
func OpCreate(path string, data []byte, flags int32) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe(), Flags: flags}}
}

// OpDelete builds a multi delete.
func OpDelete(path string, version int32) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: path, Version: version}}
}

// OpSet builds a multi setData.
func OpSet(path string, data []byte, version int32) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpSetData, Request: &zkproto.SetDataRequest{Path: path, Data: data, Version: version}}
}

// OpCheck builds a multi check.
func OpCheck(path string, version int32) zkproto.MultiOp {
	return zkproto.MultiOp{Type: zkproto.OpCheck, Request: &zkproto.CheckVersionRequest{Path: path, Version: version}}
}
