// Command recorder drives a scripted session against a real ZooKeeper
// (3.8) over raw TCP and records the exact bytes of every frame, so that
// zkproto's codec can be checked against real server output without a
// server (see zkproto/golden_test.go). It only dials loopback addresses.
//
//	go run ./zkproto/internal/recorder -addr 127.0.0.1:2181 -out zkproto/testdata/golden
//
// Output: one file per step, DIR/NNN-<conn>-<name>.txt, in a line format:
//
//	# text                 comment (the recorder's decoding, for humans)
//	conn <label>           the connection the step ran on (informational)
//	op <int>               opcode of the step's request; the key to decode
//	                       its request body and reply body
//	connect-client <hex>   one whole ConnectRequest frame, length prefix included
//	connect-server <hex>   one whole ConnectResponse frame
//	client <hex>           one whole client frame: len | RequestHeader | body
//	server <hex>           one whole server frame: len | ReplyHeader | body;
//	                       xid -1 frames are watch notifications
//	eof                    the server closed the connection at this point
//
// Frames appear in wire order. A step holds either a connect handshake, or
// one request with everything the server sent until its reply (events
// interleaved before it), or only server frames (events that another
// connection's write, or the container reaper, caused).
package main

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// replyTimeout bounds every wait for a frame; nothing in the script should
// take this long, so hitting it means the server did something unexpected.
const replyTimeout = 5 * time.Second

type conn struct {
	label string
	c     net.Conn
	fr    *zkproto.FrameReader
	xid   int32
}

type recorder struct {
	addr  string
	out   string
	step  int
	conns map[string]*conn
	files []string
}

// stepFile accumulates the lines of one step.
type stepFile struct {
	lines []string
}

func (s *stepFile) add(format string, args ...any) {
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
}

func (r *recorder) write(c *conn, name string, s *stepFile) {
	r.step++
	file := fmt.Sprintf("%03d-%s-%s.txt", r.step, c.label, name)
	body := strings.Join(s.lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(r.out, file), []byte(body), 0o644); err != nil {
		log.Fatal(err)
	}
	r.files = append(r.files, file)
	fmt.Println(filepath.Join(r.out, file))
}

// connect opens a connection and records its handshake.
func (r *recorder) connect(label, comment string, req zkproto.ConnectRequest) *conn {
	host, _, err := net.SplitHostPort(r.addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("refusing non-loopback address %q", r.addr)
	}
	nc, err := net.DialTimeout("tcp", r.addr, replyTimeout)
	if err != nil {
		log.Fatal(err)
	}
	c := &conn{label: label, c: nc, fr: zkproto.NewFrameReader(nc, 0)}
	r.conns[label] = c

	var e zkproto.Encoder
	off := e.StartFrame()
	req.Encode(&e)
	e.FinishFrame(off)
	s := &stepFile{}
	s.add("# %s", comment)
	s.add("conn %s", label)
	c.send(s, "connect-client", e.Bytes())
	frame, err := c.read()
	if err != nil {
		log.Fatalf("%s: connect: %v", label, err)
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame[4:], &resp); err != nil {
		log.Fatalf("%s: connect response: %v", label, err)
	}
	s.add("# ConnectResponse: %d-byte body, timeOut %d, sessionId 0x%x, readOnly byte present %v",
		len(frame)-4, resp.TimeOut, resp.SessionID, resp.HasReadOnly)
	s.add("connect-server %s", hex.EncodeToString(frame))
	r.write(c, "connect", s)
	return c
}

func (c *conn) send(s *stepFile, kind string, frame []byte) {
	s.add("%s %s", kind, hex.EncodeToString(frame))
	if _, err := c.c.Write(frame); err != nil {
		log.Fatalf("%s: write: %v", c.label, err)
	}
}

// read returns one whole server frame, length prefix included.
func (c *conn) read() ([]byte, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(replyTimeout))
	p, err := c.fr.Next()
	if err != nil {
		return nil, err
	}
	return zkproto.AppendFrame(nil, p), nil
}

// req describes one request of the script.
type req struct {
	name    string
	comment string
	op      zkproto.OpCode
	xid     *int32         // nil: the connection's next xid
	body    zkproto.Record // nil: no body
	raw     []byte         // body bytes when there is no record (unknown opcode)
	closes  bool           // the server is expected to close after its reply
}

func xid(v int32) *int32 { return &v }

// do sends one request and records every frame up to and including its
// reply (the first frame whose xid is not -1).
func (r *recorder) do(label string, q req) zkproto.ReplyHeader {
	c := r.conns[label]
	var h zkproto.RequestHeader
	h.Type = q.op
	if q.xid != nil {
		h.Xid = *q.xid
	} else {
		c.xid++
		h.Xid = c.xid
	}
	var e zkproto.Encoder
	off := e.StartFrame()
	h.Encode(&e)
	if q.body != nil {
		q.body.Encode(&e)
	}
	e.Raw(q.raw)
	e.FinishFrame(off)

	s := &stepFile{}
	if q.comment != "" {
		s.add("# %s", q.comment)
	}
	s.add("conn %s", label)
	s.add("op %d", int32(q.op))
	c.send(s, "client", e.Bytes())

	var reply zkproto.ReplyHeader
	got := false
	for !got {
		frame, err := c.read()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				s.add("# server closed the connection without a reply")
				s.add("eof")
				r.write(c, q.name, s)
				return zkproto.ReplyHeader{Err: zkproto.ErrConnectionLoss}
			}
			log.Fatalf("%s: %s: %v", label, q.name, err)
		}
		rh := describe(s, frame)
		s.add("server %s", hex.EncodeToString(frame))
		if rh.Xid != zkproto.XidNotification {
			reply, got = rh, true
		}
	}
	if q.closes {
		// The close should follow the reply promptly.
		if _, err := c.read(); errors.Is(err, io.EOF) {
			s.add("# server closed the connection after the reply")
			s.add("eof")
		} else {
			log.Fatalf("%s: %s: expected the server to close, got %v", label, q.name, err)
		}
	}
	r.write(c, q.name, s)
	return reply
}

// events records n frames (notifications) that arrive on a connection
// without a request of its own, waiting up to wait for them.
func (r *recorder) events(label, name, comment string, n int, wait time.Duration) {
	c := r.conns[label]
	s := &stepFile{}
	s.add("# %s", comment)
	s.add("conn %s", label)
	deadline := time.Now().Add(wait)
	for i := 0; i < n; i++ {
		_ = c.c.SetReadDeadline(deadline)
		p, err := c.fr.Next()
		if err != nil {
			log.Fatalf("%s: %s: event %d of %d: %v", label, name, i+1, n, err)
		}
		frame := zkproto.AppendFrame(nil, p)
		describe(s, frame)
		s.add("server %s", hex.EncodeToString(frame))
	}
	r.write(c, name, s)
}

// describe adds a comment line with the decoded reply header (and event).
func describe(s *stepFile, frame []byte) zkproto.ReplyHeader {
	d := zkproto.NewDecoder(frame[4:])
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		log.Fatalf("bad reply header %x: %v", frame, err)
	}
	if h.Xid == zkproto.XidNotification {
		var ev zkproto.WatcherEvent
		_ = ev.Decode(d)
		s.add("# event %s state %d path %s (zxid %d)", ev.Type, ev.State, ev.Path, h.Zxid)
		return h
	}
	s.add("# reply xid %d zxid %d err %d %s, %d body bytes", h.Xid, h.Zxid, h.Err, h.Err.Name(), d.Remaining())
	return h
}

func (r *recorder) closeAll() {
	for _, c := range r.conns {
		c.c.Close()
	}
}

func digestID(userPass string) string {
	sum := sha1.Sum([]byte(userPass))
	user, _, _ := strings.Cut(userPass, ":")
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func main() {
	addr := flag.String("addr", "127.0.0.1:2181", "ZooKeeper address (loopback only)")
	out := flag.String("out", "zkproto/testdata/golden", "directory for the step files")
	flag.Parse()

	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	// Drop the previous recording so renumbered steps leave no stale files.
	old, _ := filepath.Glob(filepath.Join(*out, "[0-9][0-9][0-9]-*.txt"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			log.Fatal(err)
		}
	}
	r := &recorder{addr: *addr, out: *out, conns: map[string]*conn{}}
	defer r.closeAll()
	script(r)
	fmt.Printf("recorder: wrote %d step files to %s\n", len(r.files), *out)
}

var open = zkproto.OpenACLUnsafe()

func create(path string, data []byte, flags zkproto.CreateMode) *zkproto.CreateRequest {
	return &zkproto.CreateRequest{Path: path, Data: data, ACL: open, Flags: int32(flags)}
}

func multi(ops ...zkproto.MultiOp) *zkproto.MultiRequest { return &zkproto.MultiRequest{Ops: ops} }

func mop(t zkproto.OpCode, rec zkproto.Record) zkproto.MultiOp {
	return zkproto.MultiOp{Type: t, Request: rec}
}

// script is the recorded session. Connections: a (45-byte handshake,
// the main client), b (44-byte handshake, a second watcher), c (reconnect
// style: setWatches), e (closeSession with an ephemeral), and one-shot
// connections for requests after which the server closes the socket.
func script(r *recorder) {
	passwd := make([]byte, zkproto.PasswordLength)
	r.connect("a", "new session, 45-byte ConnectRequest (readOnly byte present) -> 37-byte ConnectResponse",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.connect("b", "new session, 44-byte ConnectRequest (no readOnly byte, go-zookeeper style) -> 36-byte ConnectResponse; timeOut 100000 is clamped to 20*tickTime",
		zkproto.ConnectRequest{TimeOut: 100000, Passwd: passwd})

	// Special nodes of a fresh server.
	r.do("a", req{name: "exists-root", comment: "exists / : cversion -1, numChildren 1, all zxids 0",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/"}})
	r.do("a", req{name: "exists-zookeeper", comment: "exists /zookeeper : cversion -2, numChildren 2",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/zookeeper"}})
	r.do("a", req{name: "getdata-config", comment: "getData /zookeeper/config : empty data in standalone, aversion -1",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/zookeeper/config"}})
	r.do("a", req{name: "getacl-config", comment: "getACL /zookeeper/config : [1 world:anyone]",
		op: zkproto.OpGetACL, body: &zkproto.GetACLRequest{Path: "/zookeeper/config"}})
	r.do("a", req{name: "getchildren-root", comment: "getChildren / : [zookeeper]",
		op: zkproto.OpGetChildren, body: &zkproto.GetChildrenRequest{Path: "/"}})
	r.do("a", req{name: "getallchildrennumber-root", comment: "getAllChildrenNumber / : 3 on a fresh server",
		op: zkproto.OpGetAllChildrenNumber, body: &zkproto.GetAllChildrenNumberRequest{Path: "/"}})
	r.do("a", req{name: "exists-missing-watch", comment: "exists with watch on a missing node: NoNode, no body, and the watch is set (fires NodeCreated later)",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/golden", Watch: true}})

	// create (op 1) and its errors; the exists watch above fires before the reply.
	r.do("a", req{name: "create", comment: "create /golden data \"hi\": NodeCreated(/golden) for our own exists watch arrives before the reply",
		op: zkproto.OpCreate, body: create("/golden", []byte("hi"), zkproto.ModePersistent)})
	r.do("a", req{name: "create-nodeexists", comment: "create an existing node: -110 NodeExists, no body, consumes a zxid",
		op: zkproto.OpCreate, body: create("/golden", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "create-nonode", comment: "create under a missing parent: -101 NoNode",
		op: zkproto.OpCreate, body: create("/nope/x", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "create-badarguments", comment: "create \"/golden/\" non-sequential: -8 BadArguments",
		op: zkproto.OpCreate, body: create("/golden/", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "create-sequential", comment: "create /golden/seq- PERSISTENT_SEQUENTIAL: path gets %010d of the parent's child-create count",
		op: zkproto.OpCreate, body: create("/golden/seq-", []byte("s"), zkproto.ModePersistentSequential)})
	r.do("a", req{name: "create-badflags", comment: "create with flags 7: -8 BadArguments",
		op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: "/golden/bad", ACL: open, Flags: 7}})
	r.do("a", req{name: "create-invalidacl", comment: "create with an empty ACL: -114 InvalidACL",
		op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: "/golden/bad", ACL: []zkproto.ACL{}}})

	// create2 (op 15) with null and empty data, then getData tells them apart.
	r.do("a", req{name: "create2-null-data", comment: "create2 /golden/null with null data (length -1)",
		op: zkproto.OpCreate2, body: create("/golden/null", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "create2-empty-data", comment: "create2 /golden/empty with empty data (length 0)",
		op: zkproto.OpCreate2, body: create("/golden/empty", []byte{}, zkproto.ModePersistent)})
	r.do("a", req{name: "getdata-null", comment: "getData of a null-data node: data length -1, dataLength 0",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden/null"}})
	r.do("a", req{name: "getdata-empty", comment: "getData of an empty-data node: data length 0",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden/empty"}})
	r.do("a", req{name: "getdata-nonode", comment: "getData of a missing node: -101, no body",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden/missing", Watch: true}})

	// setData (op 5).
	r.do("a", req{name: "setdata", comment: "setData /golden version 0: stat version 1",
		op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/golden", Data: []byte("hello"), Version: 0}})
	r.do("a", req{name: "setdata-badversion", comment: "setData with a wrong version: -103 BadVersion",
		op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/golden", Data: []byte("x"), Version: 7}})
	r.do("a", req{name: "setdata-noauth-config", comment: "setData /zookeeper/config (ACL world:anyone:r): -102 NoAuth",
		op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/zookeeper/config", Data: []byte("x"), Version: -1}})

	// Watches across connections: a watches children, b watches existence and data.
	r.do("a", req{name: "getchildren2-watch", comment: "getChildren2 /golden with a child watch",
		op: zkproto.OpGetChildren2, body: &zkproto.GetChildren2Request{Path: "/golden", Watch: true}})
	r.do("b", req{name: "exists-missing-watch", comment: "exists /golden/w with watch: -101, exists watch set",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/golden/w", Watch: true}})
	r.do("b", req{name: "getdata-watch", comment: "getData /golden with a data watch",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden", Watch: true}})
	r.do("a", req{name: "create-fires-child-watch", comment: "create /golden/w: our NodeChildrenChanged(/golden) arrives before the reply",
		op: zkproto.OpCreate, body: create("/golden/w", nil, zkproto.ModePersistent)})
	r.events("b", "event-nodecreated", "b's exists watch: NodeCreated(/golden/w)", 1, replyTimeout)
	r.do("a", req{name: "setdata-fires-data-watch", comment: "setData /golden version -1 (any)",
		op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/golden", Data: []byte("again"), Version: -1}})
	r.events("b", "event-nodedatachanged", "b's data watch: NodeDataChanged(/golden)", 1, replyTimeout)

	// delete (op 2) and its errors.
	r.do("a", req{name: "delete-badversion", comment: "delete with a wrong version: -103",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden/w", Version: 5}})
	r.do("a", req{name: "delete", comment: "delete /golden/w: no body",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden/w", Version: 0}})
	r.do("a", req{name: "delete-nonode", comment: "delete a missing node: -101",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden/w", Version: -1}})
	r.do("a", req{name: "delete-notempty", comment: "delete a node with children: -111 NotEmpty",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden", Version: -1}})
	r.do("a", req{name: "delete-root", comment: "delete /: -8 BadArguments",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/", Version: -1}})

	// sync (op 9) and ping (op 11).
	r.do("a", req{name: "sync", comment: "sync echoes the path",
		op: zkproto.OpSync, body: &zkproto.SyncRequest{Path: "/golden"}})
	r.do("a", req{name: "ping", comment: "ping xid -2: reply (-2, lastZxid, 0), no body",
		op: zkproto.OpPing, xid: xid(zkproto.XidPing)})
	r.do("b", req{name: "ping-xid5", comment: "ping sent with xid 5: the reply still carries xid -2",
		op: zkproto.OpPing, xid: xid(5)})

	// auth (op 100), whoAmI (107), ACLs (ops 6, 7).
	r.do("a", req{name: "auth-digest", comment: "auth digest alice:secret with xid -4: reply (-4, zxid 0, err 0)",
		op: zkproto.OpAuth, xid: xid(zkproto.XidAuth), body: &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("alice:secret")}})
	r.do("a", req{name: "whoami", comment: "whoAmI after digest auth: [digest alice, ip 127.0.0.1]",
		op: zkproto.OpWhoAmI})
	alice := digestID("alice:secret")
	aclNode := []zkproto.ACL{
		{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}},
		{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "digest", ID: alice}},
	}
	r.do("a", req{name: "create-digest-acl", comment: "create /golden/acl with [1 world:anyone, 31 digest:" + alice + "]",
		op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: "/golden/acl", Data: []byte("secret"), ACL: aclNode}})
	r.do("a", req{name: "getacl-admin", comment: "getACL with ADMIN: the digest id is returned in full",
		op: zkproto.OpGetACL, body: &zkproto.GetACLRequest{Path: "/golden/acl"}})
	r.do("b", req{name: "getacl-masked", comment: "getACL with READ but no ADMIN: the digest id is masked to alice:x",
		op: zkproto.OpGetACL, body: &zkproto.GetACLRequest{Path: "/golden/acl"}})
	r.do("b", req{name: "setacl-noauth", comment: "setACL without ADMIN: -102 NoAuth",
		op: zkproto.OpSetACL, body: &zkproto.SetACLRequest{Path: "/golden/acl", ACL: open, Version: -1}})
	r.do("a", req{name: "setacl", comment: "setACL version 0 (compared with aversion): stat aversion 1, version/mzxid unchanged",
		op: zkproto.OpSetACL, body: &zkproto.SetACLRequest{Path: "/golden/acl", ACL: aclNode, Version: 0}})
	r.do("a", req{name: "setacl-badversion", comment: "setACL with a stale aversion: -103",
		op: zkproto.OpSetACL, body: &zkproto.SetACLRequest{Path: "/golden/acl", ACL: aclNode, Version: 0}})
	r.do("a", req{name: "create-auth-acl", comment: "create with ACL [31 auth:]: expanded to the connection's digest id",
		op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: "/golden/authacl", ACL: zkproto.CreatorAllACL()}})
	r.do("a", req{name: "getacl-auth-expanded", comment: "getACL of the auth: node",
		op: zkproto.OpGetACL, body: &zkproto.GetACLRequest{Path: "/golden/authacl"}})
	r.do("b", req{name: "create-auth-acl-invalid", comment: "ACL [31 auth:] on a connection without digest auth: -114 InvalidACL",
		op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: "/golden/authacl2", ACL: zkproto.CreatorAllACL()}})
	r.do("b", req{name: "getdata-noauth", comment: "getData of an [31 auth:] node without the identity: -102 NoAuth",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden/authacl"}})
	r.do("b", req{name: "auth-digest-normal-xid", comment: "auth with a normal xid (go-zookeeper style): the reply echoes it",
		op: zkproto.OpAuth, body: &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("bob:pw")}})
	r.do("b", req{name: "whoami", comment: "whoAmI: [digest bob, ip 127.0.0.1] (order as the server keeps them)",
		op: zkproto.OpWhoAmI})

	// multi (op 14): success, failure, empty, and a read/write mix.
	r.do("a", req{name: "multi-ok", comment: "multi [create, create2, setData, check, delete]: results typed 1, 1 (3.8 reports create2 as a plain create, path only), 5, 13, 2",
		op: zkproto.OpMulti, body: multi(
			mop(zkproto.OpCreate, create("/golden/m1", []byte("1"), zkproto.ModePersistent)),
			mop(zkproto.OpCreate2, create("/golden/m2", nil, zkproto.ModePersistent)),
			mop(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/golden/m1", Data: []byte("11"), Version: 0}),
			mop(zkproto.OpCheck, &zkproto.CheckVersionRequest{Path: "/golden/m1", Version: 1}),
			mop(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/golden/m2", Version: -1}),
		)})
	r.do("a", req{name: "multi-container-ttl", comment: "multi [createContainer, createTTL, two sequential creates]: container and TTL results are typed 15",
		op: zkproto.OpMulti, body: multi(
			mop(zkproto.OpCreateContainer, create("/golden/mc", nil, zkproto.ModeContainer)),
			mop(zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: "/golden/mt", ACL: open, Flags: int32(zkproto.ModePersistentWithTTL), TTL: 3600000}),
			mop(zkproto.OpCreate, create("/golden/n-", nil, zkproto.ModePersistentSequential)),
			mop(zkproto.OpCreate, create("/golden/n-", nil, zkproto.ModePersistentSequential)),
		)})
	r.do("a", req{name: "multi-failed", comment: "multi [create, check bad version, delete]: ReplyHeader.err 0; results all type -1 with errs 0, -103, -2",
		op: zkproto.OpMulti, body: multi(
			mop(zkproto.OpCreate, create("/golden/m3", nil, zkproto.ModePersistent)),
			mop(zkproto.OpCheck, &zkproto.CheckVersionRequest{Path: "/golden/m1", Version: 99}),
			mop(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/golden/m1", Version: -1}),
		)})
	r.do("a", req{name: "multi-empty", comment: "empty multi: the body is just the done header ffffffff 01 ffffffff; it still consumes a zxid",
		op: zkproto.OpMulti, body: multi()})
	r.do("a", req{name: "multi-mixed", comment: "multi mixing a write and a read: -5 MarshallingError, no body, consumes a zxid, connection kept",
		op: zkproto.OpMulti, body: multi(
			mop(zkproto.OpCreate, create("/golden/m4", nil, zkproto.ModePersistent)),
			mop(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/golden"}),
		)})

	// multiRead (op 22) with a partial failure.
	r.do("a", req{name: "multiread-partial", comment: "multiRead [getData, getChildren, getData missing]: err 0; third result (-1, -101)",
		op: zkproto.OpMultiRead, body: multi(
			mop(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/golden/m1"}),
			mop(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/golden/acl"}),
			mop(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/golden/missing"}),
		)})

	// Containers (ops 19, 20) and TTL nodes (op 21).
	r.do("a", req{name: "createcontainer-empty", comment: "createContainer /golden/ctr-empty: Create2Response, ephemeralOwner 0",
		op: zkproto.OpCreateContainer, body: create("/golden/ctr-empty", nil, zkproto.ModeContainer)})
	r.do("a", req{name: "deletecontainer", comment: "deleteContainer on an empty container: 3.8 reads the path as new String(request.array()), i.e. header and length prefix included, so from a client it is always -8 BadArguments (and consumes a zxid)",
		op: zkproto.OpDeleteContainer, body: &zkproto.DeleteContainerRequest{Path: "/golden/ctr-empty"}})
	r.do("a", req{name: "createcontainer", comment: "createContainer /golden/ctr",
		op: zkproto.OpCreateContainer, body: create("/golden/ctr", nil, zkproto.ModeContainer)})
	r.do("a", req{name: "create-container-child", comment: "create /golden/ctr/c",
		op: zkproto.OpCreate, body: create("/golden/ctr/c", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "exists-container-watch", comment: "exists /golden/ctr with watch",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/golden/ctr", Watch: true}})
	r.do("a", req{name: "createttl", comment: "createTTL /golden/ttl ttl 1000 ms: Create2Response, ephemeralOwner 0",
		op: zkproto.OpCreateTTL, body: &zkproto.CreateTTLRequest{Path: "/golden/ttl", Data: []byte("t"), ACL: open, Flags: int32(zkproto.ModePersistentWithTTL), TTL: 1000}})
	r.do("a", req{name: "createttl-zero", comment: "createTTL with ttl 0: -8",
		op: zkproto.OpCreateTTL, body: &zkproto.CreateTTLRequest{Path: "/golden/ttl0", ACL: open, Flags: int32(zkproto.ModePersistentWithTTL), TTL: 0}})
	r.do("a", req{name: "createttl-nonttl-flag", comment: "createTTL with flag 0: -8",
		op: zkproto.OpCreateTTL, body: &zkproto.CreateTTLRequest{Path: "/golden/ttl1", ACL: open, Flags: 0, TTL: 1000}})
	r.do("a", req{name: "create-ttl-flag-op1", comment: "op 1 with TTL flag 5: -8 (ttl -1)",
		op: zkproto.OpCreate, body: create("/golden/ttl2", nil, zkproto.ModePersistentWithTTL)})
	r.do("a", req{name: "exists-ttl-watch", comment: "exists /golden/ttl with watch",
		op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/golden/ttl", Watch: true}})
	r.do("a", req{name: "delete-container-child", comment: "delete /golden/ctr/c: the container becomes a reaping candidate",
		op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden/ctr/c", Version: -1}})
	r.events("a", "event-reaped", "the container manager deletes /golden/ctr and the expired /golden/ttl: two NodeDeleted (either order)", 2, 15*time.Second)

	// Ephemerals and getEphemerals (op 103).
	r.do("a", req{name: "create-ephemeral", comment: "create /golden/eph EPHEMERAL",
		op: zkproto.OpCreate, body: create("/golden/eph", nil, zkproto.ModeEphemeral)})
	r.do("a", req{name: "create-child-of-ephemeral", comment: "child of an ephemeral: -108 NoChildrenForEphemerals",
		op: zkproto.OpCreate, body: create("/golden/eph/c", nil, zkproto.ModePersistent)})
	r.do("a", req{name: "create2-ephemeral-sequential", comment: "create2 /golden/eseq- EPHEMERAL_SEQUENTIAL: stat ephemeralOwner = session id",
		op: zkproto.OpCreate2, body: create("/golden/eseq-", nil, zkproto.ModeEphemeralSequential)})
	r.do("a", req{name: "getephemerals-all", comment: "getEphemerals /: this session's ephemerals",
		op: zkproto.OpGetEphemerals, body: &zkproto.GetEphemeralsRequest{PrefixPath: "/"}})
	r.do("a", req{name: "getephemerals-prefix", comment: "getEphemerals /golden/es: string-prefix match",
		op: zkproto.OpGetEphemerals, body: &zkproto.GetEphemeralsRequest{PrefixPath: "/golden/es"}})
	r.do("b", req{name: "getephemerals-none", comment: "getEphemerals on a session without ephemerals: empty vector",
		op: zkproto.OpGetEphemerals, body: &zkproto.GetEphemeralsRequest{PrefixPath: "/"}})
	r.do("a", req{name: "getallchildrennumber", comment: "getAllChildrenNumber /golden: all descendants",
		op: zkproto.OpGetAllChildrenNumber, body: &zkproto.GetAllChildrenNumberRequest{Path: "/golden"}})

	// checkWatches (17) and removeWatches (18).
	r.do("a", req{name: "getdata-watch", comment: "getData /golden/null with a data watch",
		op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: "/golden/null", Watch: true}})
	r.do("a", req{name: "checkwatches", comment: "checkWatches /golden/null Data: 0",
		op: zkproto.OpCheckWatches, body: &zkproto.CheckWatchesRequest{Path: "/golden/null", Type: zkproto.WatcherData}})
	r.do("a", req{name: "removewatches", comment: "removeWatches /golden/null Data: 0 (no event from the server)",
		op: zkproto.OpRemoveWatches, body: &zkproto.RemoveWatchesRequest{Path: "/golden/null", Type: zkproto.WatcherData}})
	r.do("a", req{name: "removewatches-nowatcher", comment: "removeWatches again: -121 NoWatcher",
		op: zkproto.OpRemoveWatches, body: &zkproto.RemoveWatchesRequest{Path: "/golden/null", Type: zkproto.WatcherData}})
	r.do("a", req{name: "checkwatches-nowatcher", comment: "checkWatches where no connection watches: -121",
		op: zkproto.OpCheckWatches, body: &zkproto.CheckWatchesRequest{Path: "/golden/empty", Type: zkproto.WatcherAny}})
	r.do("a", req{name: "removewatches-persistent-type", comment: "removeWatches type 4 (Persistent, 3.9 only) on 3.8",
		op: zkproto.OpRemoveWatches, body: &zkproto.RemoveWatchesRequest{Path: "/golden/null", Type: zkproto.WatcherPersistent}})

	// addWatch (106): persistent recursive on a path b then populates.
	r.do("a", req{name: "addwatch-recursive", comment: "addWatch /golden/rec PERSISTENT_RECURSIVE: reply body ErrorResponse{0} = 00000000",
		op: zkproto.OpAddWatch, body: &zkproto.AddWatchRequest{Path: "/golden/rec", Mode: zkproto.AddWatchPersistentRecursive}})
	r.do("a", req{name: "addwatch-persistent", comment: "addWatch /golden/pers PERSISTENT",
		op: zkproto.OpAddWatch, body: &zkproto.AddWatchRequest{Path: "/golden/pers", Mode: zkproto.AddWatchPersistent}})
	r.do("a", req{name: "addwatch-badmode", comment: "addWatch mode 7: -5 MarshallingError",
		op: zkproto.OpAddWatch, body: &zkproto.AddWatchRequest{Path: "/golden/rec", Mode: 7}})
	r.do("b", req{name: "create-rec", op: zkproto.OpCreate, body: create("/golden/rec", nil, zkproto.ModePersistent)})
	r.do("b", req{name: "create-rec-child", op: zkproto.OpCreate, body: create("/golden/rec/x", nil, zkproto.ModePersistent)})
	r.do("b", req{name: "setdata-rec-child", op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/golden/rec/x", Data: []byte("d"), Version: -1}})
	r.do("b", req{name: "delete-rec-child", op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: "/golden/rec/x", Version: -1}})
	r.events("a", "events-recursive", "recursive watch: NodeCreated /golden/rec, NodeCreated /golden/rec/x, NodeDataChanged /golden/rec/x, NodeDeleted /golden/rec/x (never NodeChildrenChanged)", 4, replyTimeout)
	r.do("b", req{name: "create-pers", op: zkproto.OpCreate, body: create("/golden/pers", nil, zkproto.ModePersistent)})
	r.do("b", req{name: "create-pers-child", op: zkproto.OpCreate, body: create("/golden/pers/y", nil, zkproto.ModePersistent)})
	r.events("a", "events-persistent", "persistent watch: NodeCreated /golden/pers, NodeChildrenChanged /golden/pers", 2, replyTimeout)

	// setWatches (101, xid -8) and setWatches2 (105) as a reconnecting
	// client sends them; catch-up events come before the reply.
	r.connect("c", "third session for setWatches, 45-byte handshake",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("c", req{name: "setwatches", comment: "setWatches relativeZxid 1: NodeDataChanged(/golden) [data, mzxid>1], NodeDeleted(/golden/gone) [data, missing], NodeCreated(/golden/null) [exist, exists], NodeChildrenChanged(/golden) [child, pzxid>1], NodeDeleted(/golden/gone2) [child, missing]; /zookeeper and /golden/later register silently",
		op: zkproto.OpSetWatches, xid: xid(zkproto.XidSetWatches), body: &zkproto.SetWatches{
			RelativeZxid: 1,
			DataWatches:  []string{"/golden", "/golden/gone", "/zookeeper"},
			ExistWatches: []string{"/golden/null", "/golden/later"},
			ChildWatches: []string{"/golden", "/golden/gone2"},
		}})
	r.do("c", req{name: "setwatches2", comment: "setWatches2: persistent and recursive watches get no catch-up events; a missing data watch gets NodeDeleted",
		op: zkproto.OpSetWatches2, xid: xid(zkproto.XidSetWatches), body: &zkproto.SetWatches2{
			RelativeZxid:               1,
			DataWatches:                []string{"/golden/gone3"},
			ExistWatches:               []string{},
			ChildWatches:               []string{},
			PersistentWatches:          []string{"/golden/m1"},
			PersistentRecursiveWatches: []string{"/golden/acl"},
		}})
	r.do("c", req{name: "setdata-watched", comment: "setData /golden/m1 where c has a persistent watch: the event comes before the reply",
		op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: "/golden/m1", Data: []byte("111"), Version: -1}})
	r.do("c", req{name: "auth-super", comment: "auth digest super:superpw (the server's superDigest)",
		op: zkproto.OpAuth, xid: xid(zkproto.XidAuth), body: &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:superpw")}})
	r.do("c", req{name: "whoami-super", comment: "whoAmI after super auth",
		op: zkproto.OpWhoAmI})

	// closeSession (-11): the server deletes the session's ephemerals.
	r.connect("e", "fourth session, owns an ephemeral, then closes",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("e", req{name: "create-ephemeral", op: zkproto.OpCreate, body: create("/golden/eph-e", nil, zkproto.ModeEphemeral)})
	r.do("b", req{name: "exists-ephemeral-watch", op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: "/golden/eph-e", Watch: true}})
	r.do("e", req{name: "closesession", comment: "closeSession: reply err 0, then the server closes the socket",
		op: zkproto.OpCloseSession, closes: true})
	r.events("b", "event-ephemeral-deleted", "b's watch: NodeDeleted(/golden/eph-e) from e's closeSession", 1, replyTimeout)

	// Requests after which the server closes the connection, each on its own.
	r.connect("r", "session for reconfig",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("r", req{name: "reconfig", comment: "reconfig on a standalone server without reconfigEnabled: -123 ReconfigDisabled, consumes a zxid",
		op: zkproto.OpReconfig, body: &zkproto.ReconfigRequest{JoiningServers: "server.2=127.0.0.1:2888:3888;2182", CurConfigID: -1}})
	r.do("r", req{name: "closesession", op: zkproto.OpCloseSession, closes: true})

	r.connect("u", "session for an unknown opcode",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("u", req{name: "unknown-opcode", comment: "opcode 999: ReplyHeader(xid, -1, -6 Unimplemented), then the server closes",
		op: 999, closes: true})

	r.connect("f", "session for an auth with an unknown scheme",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("f", req{name: "auth-unknown-scheme", comment: "auth scheme nosuch: -115 AuthFailed, then the server closes",
		op: zkproto.OpAuth, xid: xid(zkproto.XidAuth), body: &zkproto.AuthPacket{Scheme: "nosuch", Auth: []byte("x")}, closes: true})

	// Tidy up the long-lived sessions.
	r.do("b", req{name: "closesession", op: zkproto.OpCloseSession, closes: true})
	r.do("c", req{name: "closesession", op: zkproto.OpCloseSession, closes: true})
	r.do("a", req{name: "closesession", comment: "closeSession of a: its ephemerals are deleted",
		op: zkproto.OpCloseSession, closes: true})

	// sasl (102) last, on its own connection, in case a server without SASL
	// configured closes the connection (3.8.0 does not).
	r.connect("s", "session for sasl",
		zkproto.ConnectRequest{TimeOut: 30000, Passwd: passwd, HasReadOnly: true})
	r.do("s", req{name: "sasl", comment: "sasl with an empty token on a server without SASL configured: 3.8 answers err 0, zxid 0, null token, and keeps the connection",
		op: zkproto.OpSASL, body: &zkproto.GetSASLRequest{Token: []byte{}}})
}
