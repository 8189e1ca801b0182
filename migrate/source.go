package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// A ZooKeeper ensemble read online, through its client port: the tree by a
// parallel walk (data, stat and ACL of every node) and the sessions by the
// four-letter words cons and dump of every server.

// SplitHosts splits a connection string "h1:p1,h2:p2[/chroot]" into
// addresses (a chroot is refused: name the subtree with --path instead).
func SplitHosts(hosts string) ([]string, error) {
	if strings.Contains(hosts, "/") {
		return nil, fmt.Errorf("%q: a chroot in the connection string is not supported; use --path for the subtree", hosts)
	}
	var out []string
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			if !strings.Contains(h, ":") {
				h += ":2181"
			}
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no address in %q", hosts)
	}
	return out, nil
}

// Dial connects a ZooKeeper client to hosts and authenticates with each of
// auth ("scheme:credential", e.g. "digest:super:pw"); it fails within
// timeout when no server answers.
func Dial(hosts []string, auth []string, timeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(hosts, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(hosts, ","), err)
	}
	deadline := time.After(timeout)
wait:
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				break wait
			}
			if ev.State == zk.StateAuthFailed {
				conn.Close()
				return nil, fmt.Errorf("connect to %s: authentication failed", strings.Join(hosts, ","))
			}
		case <-deadline:
			conn.Close()
			return nil, fmt.Errorf("connect to %s: no server answered within %s (is the address right and the server up?)", strings.Join(hosts, ","), timeout)
		}
	}
	go func() { // drain, so the client never blocks on its event channel
		for range events {
		}
	}()
	for _, a := range auth {
		scheme, cred, ok := strings.Cut(a, ":")
		if !ok || scheme == "" {
			conn.Close()
			return nil, fmt.Errorf("--auth %q: want scheme:credential, e.g. digest:user:password", a)
		}
		if err := conn.AddAuth(scheme, []byte(cred)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("authenticate as %s: %w", scheme, err)
		}
	}
	return conn, nil
}

// Reader of nodes: one ZooKeeper connection (concurrent requests are
// pipelined on it).
type TreeReader struct {
	Conn *zk.Conn
	// Workers bounds the requests in flight (default 64).
	Workers int
}

// errSkip: the node vanished while being read (deleted under the walk).
var errSkip = errors.New("vanished")

// ReadNode reads one node: data, ACL and a stat that agrees with both.
func (r *TreeReader) ReadNode(p string) (*Node, []string, error) {
	for attempt := 0; ; attempt++ {
		data, st, err := r.Conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil, errSkip
		}
		if err != nil {
			return nil, nil, fmt.Errorf("get %s: %w", p, err)
		}
		acl, ast, err := r.Conn.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil, errSkip
		}
		if err != nil {
			return nil, nil, fmt.Errorf("getACL %s: %w", p, err)
		}
		var kids []string
		cst := st
		if st.NumChildren > 0 { // a leaf's stat from getData is whole
			kids, cst, err = r.Conn.Children(p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil, nil, errSkip
			}
			if err != nil {
				return nil, nil, fmt.Errorf("getChildren %s: %w", p, err)
			}
		}
		// The three reads are not atomic: read again if the node changed
		// between them.
		if (ast.Mzxid != st.Mzxid || ast.Aversion != st.Aversion || cst.Mzxid != st.Mzxid || cst.Aversion != ast.Aversion) && attempt < 10 {
			continue
		}
		n := &Node{Path: p, Data: data, Czxid: cst.Czxid, Mzxid: cst.Mzxid, Pzxid: cst.Pzxid, Ctime: cst.Ctime, Mtime: cst.Mtime,
			Version: cst.Version, Cversion: cst.Cversion, Aversion: cst.Aversion, EphemeralOwner: cst.EphemeralOwner,
			NumChildren: cst.NumChildren}
		n.Creates = (n.Cversion + n.NumChildren) / 2
		for _, a := range acl {
			n.ACL = append(n.ACL, ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID})
		}
		sort.Strings(kids)
		return n, kids, nil
	}
}

// ReadStat reads a node's stat and children in one request
// (getChildren2), without its data and ACL: what a catch-up pass compares.
func (r *TreeReader) ReadStat(p string) (*Node, []string, error) {
	kids, st, err := r.Conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, errSkip
	}
	if err != nil {
		return nil, nil, fmt.Errorf("getChildren %s: %w", p, err)
	}
	sort.Strings(kids)
	return &Node{Path: p, Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner,
		NumChildren: st.NumChildren, Creates: (st.Cversion + st.NumChildren) / 2, dataLength: st.DataLength}, kids, nil
}

// sameStat says whether two stat-only reads agree: then data (mzxid,
// version) and ACL (aversion) agree too.
func sameStat(a, b *Node) bool {
	return a.Czxid == b.Czxid && a.Mzxid == b.Mzxid && a.Pzxid == b.Pzxid && a.Ctime == b.Ctime && a.Mtime == b.Mtime &&
		a.Version == b.Version && a.Cversion == b.Cversion && a.Aversion == b.Aversion && a.EphemeralOwner == b.EphemeralOwner &&
		a.NumChildren == b.NumChildren && a.dataLength == b.dataLength
}

// migratable says whether p belongs to a migration: everything but
// ZooKeeper's own /zookeeper, /zookeeper/config and /zookeeper/quota (the
// quota nodes below it do move).
func migratable(p string) bool {
	switch p {
	case "/zookeeper", "/zookeeper/config", "/zookeeper/quota":
		return false
	}
	return true
}

// descend says whether the walk enters p's children.
func descend(p string) bool { return p != "/zookeeper/config" }

// Walk visits root and every node below it, parents before children, a
// level at a time with Workers reads in flight. Nodes deleted while
// walking are skipped. fn is called from one goroutine.
func (r *TreeReader) Walk(ctx context.Context, root string, fn func(*Node) error) error {
	workers := r.Workers
	if workers <= 0 {
		workers = 64
	}
	level := []string{root}
	const chunk = 4096
	for len(level) > 0 {
		var next []string
		for start := 0; start < len(level); start += chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			part := level[start:min(start+chunk, len(level))]
			nodes := make([]*Node, len(part))
			kids := make([][]string, len(part))
			errs := make([]error, len(part))
			var wg sync.WaitGroup
			sem := make(chan struct{}, workers)
			for i, p := range part {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					nodes[i], kids[i], errs[i] = r.ReadNode(p)
				}()
			}
			wg.Wait()
			for i, p := range part {
				if errors.Is(errs[i], errSkip) {
					continue
				}
				if errs[i] != nil {
					return errs[i]
				}
				if migratable(p) {
					if err := fn(nodes[i]); err != nil {
						return err
					}
				}
				if descend(p) {
					for _, k := range kids[i] {
						next = append(next, joinPath(p, k))
					}
				}
			}
		}
		level = next
	}
	return nil
}

func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// Ancestors returns the nodes above p, root first (none for /).
func (r *TreeReader) Ancestors(p string) ([]*Node, error) {
	var out []*Node
	for q := parentPath(p); q != ""; q = parentPath(q) {
		n, _, err := r.ReadNode(q)
		if err != nil {
			return nil, fmt.Errorf("read %s, above the exported subtree: %w", q, err)
		}
		n.Ancestor = true
		out = append([]*Node{n}, out...)
	}
	return out, nil
}

// parentPath is p's parent ("" for /).
func parentPath(p string) string {
	if p == "/" {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// FourLetter sends a four-letter word to addr and returns the answer.
func FourLetter(addr, word string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	out := string(b)
	if strings.Contains(out, "is not executed because it is not in the whitelist") {
		return "", fmt.Errorf("%s refuses the four-letter word %s: add it to 4lw.commands.whitelist (e.g. 4lw.commands.whitelist=cons,dump,srvr)", addr, word)
	}
	return out, nil
}

var (
	consLine   = regexp.MustCompile(`sid=0x([0-9a-fA-F]+)[^)]*?\bto=(\d+)`)
	dumpID     = regexp.MustCompile(`(?m)^\s+0x([0-9a-fA-F]+)\s*$`)
	srvrZxid   = regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-fA-F]+)`)
	srvrLeader = regexp.MustCompile(`(?m)^Mode: (leader|standalone)`)
)

// SourceState is what the four-letter words tell about an ensemble.
type SourceState struct {
	// Sessions: every session a server holds a connection of (cons, with
	// its negotiated timeout) or the leader tracks (dump; the timeout is
	// DefaultTimeout when no server holds its connection).
	Sessions map[int64]int32
	// LastZxid is the highest zxid any server reported (srvr).
	LastZxid int64
}

// ReadSourceState asks every server. Each must answer srvr, cons and dump.
// The sessions in exclude (the tool's own) are left out.
func ReadSourceState(hosts []string, defaultTimeout int32, timeout time.Duration, exclude ...int64) (*SourceState, error) {
	st := &SourceState{Sessions: map[int64]int32{}}
	tracked := map[int64]bool{}
	for _, h := range hosts {
		srvr, err := FourLetter(h, "srvr", timeout)
		if err != nil {
			return nil, fmt.Errorf("srvr of %s: %w", h, err)
		}
		if m := srvrZxid.FindStringSubmatch(srvr); m != nil {
			z, _ := strconv.ParseUint(m[1], 16, 64)
			st.LastZxid = max(st.LastZxid, int64(z))
		}
		cons, err := FourLetter(h, "cons", timeout)
		if err != nil {
			return nil, fmt.Errorf("cons of %s: %w", h, err)
		}
		for id, to := range parseCons(cons) {
			st.Sessions[id] = to
		}
		if srvrLeader.MatchString(srvr) {
			dump, err := FourLetter(h, "dump", timeout)
			if err != nil {
				return nil, fmt.Errorf("dump of %s: %w", h, err)
			}
			for _, id := range parseDump(dump) {
				tracked[id] = true
			}
		}
	}
	for id := range tracked {
		if _, ok := st.Sessions[id]; !ok {
			st.Sessions[id] = defaultTimeout
		}
	}
	for _, id := range exclude {
		delete(st.Sessions, id)
	}
	return st, nil
}

// quiet drops the client library's connection chatter (errors are
// returned to the caller).
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// parseCons reads the sessions and negotiated timeouts of a cons answer.
func parseCons(out string) map[int64]int32 {
	m := map[int64]int32{}
	for _, x := range consLine.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.ParseUint(x[1], 16, 64)
		to, _ := strconv.ParseInt(x[2], 10, 32)
		if id != 0 && to > 0 {
			m[int64(id)] = int32(to)
		}
	}
	return m
}

// parseDump reads the session ids of a leader's dump answer (its session
// sets, before the ephemerals).
func parseDump(out string) []int64 {
	sets, _, _ := strings.Cut(out, "ephemeral nodes dump")
	var ids []int64
	for _, x := range dumpID.FindAllStringSubmatch(sets, -1) {
		id, _ := strconv.ParseUint(x[1], 16, 64)
		ids = append(ids, int64(id))
	}
	return ids
}
