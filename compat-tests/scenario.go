package compattests

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Scenario is one behaviour, run with the same client code against a
// reference server (a real ZooKeeper) and a candidate (zkbridge, or any
// ZooKeeper-compatible server); the normalised transcripts must be equal.
// A scenario whose Differs is set is a deliberate difference: zkbridge is
// stricter or fixes a ZooKeeper bug. Its Check then judges the
// candidate's transcript on its own when the two differ, and the reason is
// listed in docs/compatibility.md.
//
// A scenario works on any server: it keeps to its own root (Root), which
// the run removes before and after it, and declares in Needs what it needs
// of the servers beyond that.
type Scenario struct {
	Area    string
	Name    string
	Differs string
	// Needs are the server settings and run conditions the scenario
	// depends on (see Need); a run whose servers lack one skips it.
	Needs Need
	// Words are the four-letter words the scenario sends (with Need4lw).
	Words []string
	// Serial scenarios read or change server-wide state other scenarios
	// touch (the trace mask, /zookeeper's stat): with --parallel they run
	// while no other scenario does.
	Serial bool
	// Unsafe, when set, says how the scenario can break a ZooKeeper
	// ensemble that has the bug it shows: it is not run against an
	// ensemble other than zkbridge's (a standalone ZooKeeper survives it).
	Unsafe string
	// Isolated, when set, says why the scenario needs servers of its own
	// (it changes them for good): only a go test that starts servers for
	// it runs it (TestCompatReconfig); a run on given servers skips it.
	Isolated string
	// StandaloneOnly, when set, says why the scenario is skipped in the
	// 3-node run (TestCompatCluster): behaviour only a standalone server
	// has, or a known zkbridge gap in cluster mode (the gap* reasons
	// below), until it is fixed.
	StandaloneOnly string
	Run            func(s *S)
	// Check is what zkbridge's transcript must show when it Differs
	// deliberately, and what both must show when they are to match.
	Check func(lines []string) error
}

// ID is the scenario's unique name.
func (sc *Scenario) ID() string { return sc.Area + "/" + sc.Name }

var unsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// Root is the scenario's own subtree, so scenarios can share a server.
func (sc *Scenario) Root() string {
	return "/" + unsafe.ReplaceAllString(sc.Area+"-"+sc.Name, "_")
}

// S is a scenario run against one server or one cluster.
type S struct {
	T *Transcript
	// Addrs are the client addresses of the server's nodes (one for a
	// standalone server). The k-th connection of a scenario goes to node
	// k mod len(Addrs), so a cluster run spreads clients across nodes.
	Addrs []string
	// Addr is the first node's address: four-letter words and raw dials.
	Addr    string
	Root    string
	Server  string // the target's name: "zookeeper", "zkbridge", "reference", "candidate"
	clients []*Client
	failed  []string
	nodes   *placement
	super   string        // the super user's "user:password"
	reaper  time.Duration // the slower server's container check interval
	used    Need          // needs the scenario was seen to use (an audit of Needs)
	words   []string      // four-letter words it sent
	extra   []string      // paths outside Root it owns (Own), removed after it
}

// Super is the super user's "user:password" (NeedSuper).
func (s *S) Super() string {
	s.used |= NeedSuper
	return s.super
}

// SuperUser is the super user's name.
func (s *S) SuperUser() string {
	u, _, _ := strings.Cut(s.Super(), ":")
	return u
}

// Reaper is the container check interval of the slower server (NeedReaper).
func (s *S) Reaper() time.Duration {
	s.used |= NeedReaper
	return s.reaper
}

// Own names a path outside the scenario's root that the scenario creates:
// a leftover of an earlier, interrupted run is removed now (outside the
// transcript), and the path again after the scenario.
func (s *S) Own(path string) {
	removeTree(s.Addr, path, s.super)
	s.extra = append(s.extra, path)
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
	node := s.nextNode()
	s.awaitZxid(node, o.LastZxidSeen)
	c, resp, err := Connect(s.Addrs[node], name, s.T, o)
	if err != nil {
		s.T.Logf("%s connect: %v", name, normErr(err))
		return nil
	}
	s.track(c, node, o.SessionID == 0)
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		s.T.SetClient(a.IP.String())
	}
	s.T.Logf("%s connected timeout=%d session=%s passwdLen=%d readOnlyByte=%v", name, resp.TimeOut,
		s.T.Session(resp.SessionID), len(resp.Passwd), resp.HasReadOnly)
	return c
}

// Client opens a session with default options.
func (s *S) Client(name string) *Client { return s.Connect(name, DialOptions{}) }

// Pipeline sends requests on c without waiting for their replies; Replies
// then records them in order, with the watch events that arrive among them.
func (s *S) Pipeline(c *Client) *Pipeline { return &Pipeline{s: s, c: c} }

// Pipeline is a run of requests in flight on one client.
type Pipeline struct {
	s    *S
	c    *Client
	xids []int32
	ops  []zkproto.OpCode
}

// Send writes one request.
func (p *Pipeline) Send(op zkproto.OpCode, r zkproto.Record) {
	x, err := p.c.Send(op, r)
	if err != nil {
		p.s.Failf("send: %v", err)
	}
	p.xids = append(p.xids, x)
	p.ops = append(p.ops, op)
}

// Replies reads and records every reply, stopping at the first failure.
func (p *Pipeline) Replies() {
	for i, x := range p.xids {
		r, err := p.c.Receive(x, p.ops[i])
		if err != nil {
			p.s.T.Logf("%s < %v", p.c.Name, normErr(err))
			return
		}
		p.s.T.reply(p.c.Name, r)
	}
}

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
	return s.do(c, op, req, nil)
}

// do is Do with the reply rewritten by norm (if set) before it is recorded.
func (s *S) do(c *Client, op zkproto.OpCode, req zkproto.Record, norm func(*Reply)) *Reply {
	if c == nil {
		s.Failf("request %v on a client that did not connect", op)
		return nil
	}
	s.T.request(c.Name, op, req)
	if createsTTL(op, req) {
		s.used |= NeedTTL
	}
	if a, ok := req.(*zkproto.AuthPacket); ok && s.super != "" && string(a.Auth) == s.super {
		s.used |= NeedSuper
	}
	if op == zkproto.OpReconfig {
		s.used |= NeedReconfig
	}
	if err := s.catchUp(c); err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	r, err := c.Call(op, req)
	s.nodes.did(s.nodeOf(c))
	if err != nil {
		s.T.Logf("%s < %s", c.Name, normErr(err))
		return nil
	}
	if norm != nil {
		norm(r)
	}
	s.T.reply(c.Name, r)
	return r
}

// createsTTL reports whether a request may create a TTL node.
func createsTTL(op zkproto.OpCode, req zkproto.Record) bool {
	if m, ok := req.(*zkproto.MultiRequest); ok && op == zkproto.OpMulti {
		for _, o := range m.Ops {
			if o.Type == zkproto.OpCreateTTL {
				return true
			}
		}
	}
	return op == zkproto.OpCreateTTL
}

// ConfigNode is ZooKeeper's dynamic configuration node.
const ConfigNode = "/zookeeper/config"

var portRe = regexp.MustCompile(`:[0-9]+`)

// GetConfig reads the config node (getData, or getACL when acl is set)
// and records it with the members' ports as P, a non-zero mtime as T and
// a getACL's non-zero dataLength as -1 (the getData shows the content):
// an ensemble's config names its own ports and each node writes it when
// it starts, before the scenario's window. A standalone server's config
// node is empty and recorded as is.
func (s *S) GetConfig(c *Client, acl bool) *Reply {
	norm := func(r *Reply) {
		switch v := r.Body.(type) {
		case *zkproto.GetDataResponse:
			v.Data = portRe.ReplaceAll(v.Data, []byte(":P"))
			normConfigStat(&v.Stat)
			v.Stat.DataLength = int32(len(v.Data))
		case *zkproto.GetACLResponse:
			normConfigStat(&v.Stat)
			if v.Stat.DataLength != 0 {
				v.Stat.DataLength = -1
			}
		}
	}
	if acl {
		return s.do(c, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: ConfigNode}, norm)
	}
	r := s.do(c, zkproto.OpGetData, &zkproto.GetDataRequest{Path: ConfigNode}, norm)
	if r == nil {
		return nil
	}
	if v, ok := r.Body.(*zkproto.GetDataResponse); ok && len(v.Data) > 0 {
		// The reply line shows long data as a hash; a differing config is
		// easier to read as text.
		s.T.Logf("%s config %q", c.Name, v.Data)
	}
	return r
}

func normConfigStat(st *zkproto.Stat) {
	if st.Mtime != 0 {
		st.Mtime = time.Now().UnixMilli()
	}
}

// Flush makes sure every event the server queued for c so far has arrived:
// a ping's reply is queued after them.
func (s *S) Flush(c *Client) {
	if c == nil {
		return
	}
	if err := s.catchUp(c); err != nil {
		s.T.Logf("%s < ping: %s", c.Name, normErr(err))
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
	if c == nil {
		s.Failf("await on a client that did not connect")
		return
	}
	if got := c.WaitEvents(n, d); got != n {
		s.T.Logf("%s awaited %d events, got %d", c.Name, n, got)
	}
	// What c saw (a reap, an expiry) may not have reached other nodes yet.
	s.nodes.did(s.nodeOf(c))
}

// placement spreads a scenario's connections over a cluster's nodes and
// tracks which node may lag behind what clients did through other nodes:
// ZooKeeper is only sequentially consistent across nodes, so a node may
// not have applied another node's acknowledged write yet.
type placement struct {
	conns  int             // connections made so far
	of     map[*Client]int // each client's node
	seq    int             // operations so far
	last   []int           // per node: seq of its latest operation
	synced []int           // per node: seq it has surely caught up with
}

func newPlacement(nodes int) *placement {
	return &placement{of: map[*Client]int{}, last: make([]int, nodes), synced: make([]int, nodes)}
}

// did records an operation through node n.
func (p *placement) did(n int) { p.seq++; p.last[n] = p.seq }

// caughtUp records that node n has applied everything done so far.
func (p *placement) caughtUp(n int) { p.synced[n] = p.seq }

// behind reports whether another node saw an operation node n may lack.
func (p *placement) behind(n int) bool {
	for m, l := range p.last {
		if m != n && l > p.synced[n] {
			return true
		}
	}
	return false
}

// nextNode is the node of the scenario's next connection.
func (s *S) nextNode() int {
	n := s.nodes.conns % len(s.Addrs)
	s.nodes.conns++
	return n
}

// track adds a connected client on node n. A new session is a
// transaction the node applied before answering, after everything before it.
func (s *S) track(c *Client, n int, newSession bool) {
	s.clients = append(s.clients, c)
	s.nodes.of[c] = n
	s.nodes.did(n)
	if newSession {
		s.nodes.caughtUp(n)
	}
}

func (s *S) nodeOf(c *Client) int { return s.nodes.of[c] }

// catchUp makes c's node apply what other nodes acknowledged before c's
// next request, with a sync outside the transcript (events it brings are
// recorded, as they would arrive before that request's reply on one
// server). It does nothing on a standalone server.
func (s *S) catchUp(c *Client) error {
	n := s.nodeOf(c)
	if !s.nodes.behind(n) {
		return nil
	}
	seen := c.LastZxid
	_, err := c.Call(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	c.LastZxid = seen
	if err != nil {
		return err
	}
	s.nodes.caughtUp(n)
	return nil
}

// awaitZxid waits until node n has applied zxid, when a client of the
// scenario has seen it: a reconnect to a lagging node that carries that
// lastZxidSeen is refused by ZooKeeper, a timing accident. A lastZxidSeen
// no client saw (a scenario's deliberately wrong one) is not waited for.
func (s *S) awaitZxid(n int, zxid int64) {
	if len(s.Addrs) == 1 || zxid <= 0 {
		return
	}
	var seen int64
	for _, c := range s.clients {
		seen = max(seen, c.LastZxid)
	}
	if zxid > seen {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		z, err := nodeZxid(s.Addrs[n])
		if err == nil && z >= zxid {
			return
		}
		if time.Now().After(deadline) {
			s.Failf("node %d did not reach zxid %#x within 5 s (at %#x, %v)", n+1, zxid, z, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Settle waits, outside the transcript, until every node has applied what
// c has seen. A ZooKeeper leader checks a request against its pending
// change records, and the one setACL leaves keeps the old ACL
// (PrepRequestProcessor duplicates the node's record and updates only the
// aversion), so on an ensemble a request right behind a setACL can be
// checked against the ACL before it: a timing accident zkbridge does not
// have. It does nothing on a standalone server.
func (s *S) Settle(c *Client) {
	for n := range s.Addrs {
		s.awaitZxid(n, c.LastZxid)
	}
}

// nodeZxid is the last zxid a node applied, from its srvr output.
func nodeZxid(addr string) (int64, error) {
	out, _, err := fourLetter(addr, []byte("srvr"))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Zxid: 0x"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("srvr without a Zxid line: %q", out)
}

// Close ends every session the scenario opened (closeSession), so none
// expires later in another scenario's window.
func (s *S) closeAll() {
	ended := map[int64]bool{}
	var orphans []*Client
	for _, c := range s.clients {
		if c.EndSession(2 * time.Second) {
			ended[c.SessionID] = true
		} else {
			orphans = append(orphans, c)
		}
		c.Close()
	}
	// A session whose connection the server closed (a protocol error, a
	// drained node) would expire a timeout later: a transaction in a later
	// scenario's window, which moves the zxid its reads answer with. End
	// it now through a new connection to it.
	for _, c := range orphans {
		if c.SessionID == 0 || ended[c.SessionID] {
			continue
		}
		ended[c.SessionID] = true
		if e, resp, err := Connect(s.Addrs[s.nodeOf(c)], "teardown", NewTranscript(),
			DialOptions{SessionID: c.SessionID, Passwd: c.Passwd, Timeout: c.Timeout}); err == nil {
			if resp.TimeOut > 0 {
				e.EndSession(2 * time.Second)
			}
			e.Close()
		}
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
