package compattests

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Probing finds out what a server offers the scenarios, so that a run
// against servers it did not start skips what they cannot do instead of
// reporting it as a difference. Every probe works through the client
// port and leaves nothing behind.

// ProbeReadOnly probes what can be learnt without creating nodes: whether
// the server is fresh, its four-letter words and version, the session
// timeouts it grants, whether reconfig is enabled, and whether it is on
// this machine. It runs before scenarios that need a fresh server, so
// it writes nothing (a reconfig probe with arguments ZooKeeper refuses is
// an error transaction, no change; the timeout probe opens two sessions;
// srst and crst, probed by sending them, reset the server's statistics).
func ProbeReadOnly(addrs []string) (Settings, error) {
	var st Settings
	addr := addrs[0]
	st.Loopback = true
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return st, fmt.Errorf("%s: %v", a, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback() || ip.To4() == nil) {
			st.Loopback = false
		}
	}
	c, resp, err := Connect(addr, "probe", NewTranscript(), DialOptions{Timeout: 1})
	if err != nil {
		return st, fmt.Errorf("%s: %v", addr, err)
	}
	defer c.Close()
	if resp.TimeOut <= 0 {
		return st, fmt.Errorf("%s refused a session (timeout %d): is it serving?", addr, resp.TimeOut)
	}
	st.MinTimeout = resp.TimeOut
	if hi, resp, err := Connect(addr, "probe", NewTranscript(), DialOptions{Timeout: 1_000_000_000}); err == nil {
		st.MaxTimeout = resp.TimeOut
		hi.EndSession(2 * time.Second)
		hi.Close()
	}
	st.Fresh = probeFresh(c)
	st.Reconfig = probeReconfig(c)
	c.EndSession(2 * time.Second)
	st.Words, st.Version = probeWords(addr)
	return st, nil
}

// probeFresh: the root holds /zookeeper alone and no node was ever
// created or deleted under it, nor under /zookeeper or /zookeeper/quota
// (their pzxid is 0).
func probeFresh(c *Client) bool {
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota"} {
		r, err := c.Call(zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: p})
		if err != nil || r.Header.Err != zkproto.ErrOK {
			return false
		}
		ch, ok := r.Body.(*zkproto.GetChildren2Response)
		if !ok || ch.Stat.Pzxid != 0 || (p == "/" && !slices.Equal(ch.Children, []string{"zookeeper"})) {
			return false
		}
	}
	return true
}

// probeReconfig sends a reconfig whose member ZooKeeper refuses for its
// arguments when reconfig is enabled (BadArguments, before any ACL) and
// answers ReconfigDisabled when it is not.
func probeReconfig(c *Client) bool {
	r, err := c.Call(zkproto.OpReconfig, &zkproto.ReconfigRequest{JoiningServers: "server.5=host", CurConfigID: -1})
	return err == nil && r.Header.Err == zkproto.ErrBadArguments
}

// notWhitelisted is how ZooKeeper (and zkbridge) refuse a word.
const notWhitelisted = "is not executed because it is not in the whitelist"

// probeWords sends every word the scenarios use and keeps those the
// server answers; stmk is sent with the mask gtmk reports, changing
// nothing.
func probeWords(addr string) (words []string, version string) {
	answers := func(raw []byte) (string, bool) {
		out, _, err := fourLetter(addr, raw)
		return out, err == nil && !strings.Contains(out, notWhitelisted)
	}
	mask := ""
	for _, w := range AllWords {
		if w == "stmk" {
			continue
		}
		out, ok := answers([]byte(w))
		if !ok {
			continue
		}
		words = append(words, w)
		switch w {
		case "gtmk":
			mask = strings.TrimSpace(out)
		case "srvr":
			version, _, _ = strings.Cut(out, "\n")
			version = strings.TrimPrefix(version, "Zookeeper version: ")
		}
	}
	if m, err := strconv.ParseUint(mask, 10, 64); err == nil {
		raw := []byte("stmk")
		for i := 56; i >= 0; i -= 8 {
			raw = append(raw, byte(m>>i))
		}
		if _, ok := answers(raw); ok {
			words = append(words, "stmk")
			slices.Sort(words)
		}
	}
	return words, version
}

// ProbeWrites probes what needs a node of its own, under a probe node at
// the root that it removes: whether createTTL works, and whether super
// ("user:password", "" to skip) reads a node whose ACL grants nobody
// anything.
func ProbeWrites(addrs []string, st *Settings, super string) error {
	c, _, err := Connect(addrs[0], "probe", NewTranscript(), DialOptions{})
	if err != nil {
		return fmt.Errorf("%s: %v", addrs[0], err)
	}
	defer c.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	root := "/zkbridge-compat-probe-" + hex.EncodeToString(b[:])
	r, err := c.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: root, ACL: zkproto.OpenACLUnsafe()})
	if err != nil {
		return fmt.Errorf("%s: create %s: %v", addrs[0], root, err)
	}
	if r.Header.Err != zkproto.ErrOK {
		return fmt.Errorf("%s: create %s: %s", addrs[0], root, r.Header.Err.Name())
	}
	defer func() {
		deleteTree(c, root)
		c.EndSession(2 * time.Second)
	}()
	r, err = c.Call(zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: root + "/ttl", ACL: zkproto.OpenACLUnsafe(),
		Flags: int32(zkproto.ModePersistentWithTTL), TTL: 60000})
	st.TTL = err == nil && r.Header.Err == zkproto.ErrOK
	st.Super = ""
	if super == "" {
		return nil
	}
	r, err = c.Call(zkproto.OpCreate, &zkproto.CreateRequest{Path: root + "/super", ACL: acl(0, "world", "anyone")})
	if err != nil || r.Header.Err != zkproto.ErrOK {
		return nil
	}
	s, _, err := Connect(addrs[0], "probe", NewTranscript(), DialOptions{})
	if err != nil {
		return nil
	}
	defer s.Close()
	defer s.EndSession(2 * time.Second)
	if r, err := s.Call(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte(super)}); err != nil || r.Header.Err != zkproto.ErrOK {
		return nil
	}
	if r, err := s.Call(zkproto.OpGetData, &zkproto.GetDataRequest{Path: root + "/super"}); err == nil && r.Header.Err == zkproto.ErrOK {
		st.Super = super
	}
	return nil
}
