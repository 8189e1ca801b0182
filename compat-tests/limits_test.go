package compattests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Limits, differentially: maxClientCnxns, quota enforcement
// (zookeeper.enforceQuota) and the connection throttle
// (zookeeper.connection_throttle_*), with the same settings on a real
// ZooKeeper 3.8 and on zkbridge.

const (
	limitsMaxCnxns       = 3
	limitsThrottleTokens = 20
)

func startLimitsPair(t *testing.T) (zkAddr, zbAddr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	t.Setenv("ZK_EXTRA_CFG", fmt.Sprintf("maxClientCnxns=%d", limitsMaxCnxns))
	t.Setenv("ZK_JVM_FLAGS", fmt.Sprintf("-Dzookeeper.enforceQuota=true -Dzookeeper.connection_throttle_tokens=%d -Dzookeeper.connection_throttle_fill_time=3600000", limitsThrottleTokens))
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (%s): %v", installHint, err)
	}
	t.Cleanup(zk.Stop)
	peer, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := suiteConfig(filepath.Join(t.TempDir(), "zkbridge"), fmt.Sprintf("127.0.0.1:%d", peer))
	cfg.MaxClientCnxns = limitsMaxCnxns
	cfg.Limits.EnforceQuota = true
	cfg.Limits.ConnectionThrottleTokens = limitsThrottleTokens
	cfg.Limits.ConnectionThrottleFillTime = time.Hour
	srv, err := server.New(cfg, suiteLogger(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return zk.Addr, srv.ClientAddr()
}

// connectOutcome dials and handshakes: "session" or how it was refused.
func connectOutcome(addr string) (string, *Client) {
	c, _, err := Connect(addr, "c", NewTranscript(), DialOptions{Timeout: 10000})
	if err != nil {
		// However the refusal reaches the client — EOF, a reset, or a
		// broken pipe when the close beats the ConnectRequest's write — it
		// is the same outcome.
		if strings.Contains(err.Error(), ErrClosed.Error()) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset") ||
			strings.Contains(err.Error(), "broken pipe") {
			return "closed before the ConnectResponse", nil
		}
		return "error: " + err.Error(), nil
	}
	return "session", c
}

func TestLimitsDifferential(t *testing.T) {
	zkAddr, zbAddr := startLimitsPair(t)

	// maxClientCnxns: three sessions, the fourth refused, a new one admitted
	// once one closes.
	maxCnxns := func(addr string) []string {
		var out []string
		var open []*Client
		for i := 0; i < limitsMaxCnxns+1; i++ {
			o, c := connectOutcome(addr)
			out = append(out, fmt.Sprintf("connection %d: %s", i+1, o))
			if c != nil {
				open = append(open, c)
			}
		}
		if len(open) > 0 {
			open[0].Close()
			open = open[1:]
		}
		// The server notices the close asynchronously.
		o := ""
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var c *Client
			if o, c = connectOutcome(addr); c != nil {
				open = append(open, c)
				break
			}
		}
		out = append(out, "after one closed: "+o)
		for _, c := range open {
			c.Close()
		}
		return out
	}
	zk, zb := both(zkAddr, zbAddr, maxCnxns)
	if d := diff(zk, zb); d != "" {
		t.Errorf("maxClientCnxns: ZooKeeper and zkbridge differ:\n%s", d)
	}
	time.Sleep(500 * time.Millisecond) // let both servers count the closes

	// Quota enforcement: hard limits refuse with QuotaExceeded.
	quota := func(addr string) []string {
		c, _, err := Connect(addr, "q", NewTranscript(), DialOptions{})
		if err != nil {
			return []string{"connect: " + err.Error()}
		}
		defer c.Close()
		var out []string
		call := func(label string, op zkproto.OpCode, req zkproto.Record) {
			r, err := c.Call(op, req)
			if err != nil {
				out = append(out, label+": "+err.Error())
				return
			}
			out = append(out, fmt.Sprintf("%s: %v", label, r.Header.Err))
		}
		create := func(p, data string) {
			call("create "+p, zkproto.OpCreate, &zkproto.CreateRequest{Path: p, Data: []byte(data), ACL: zkproto.OpenACLUnsafe()})
		}
		create("/lq", "ab")
		create("/zookeeper/quota/lq", "")
		// As zkCli setquota -N 3 -B 10 /lq writes it.
		create("/zookeeper/quota/lq/zookeeper_limits", "count=-1,bytes=-1,countHardLimit=3,byteHardLimit=10")
		create("/zookeeper/quota/lq/zookeeper_stats", "count=0,bytes=0")
		create("/lq/a", "abc")
		create("/lq/b", "")
		create("/lq/c", "")
		call("setData over the byte limit", zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/lq/a", Data: []byte("abcdefghi"), Version: -1})
		call("setData over it with a wrong version", zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/lq/a", Data: []byte("abcdefghi"), Version: 7})
		call("setData within", zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/lq/a", Data: []byte("abcdef"), Version: -1})
		r, err := c.Call(zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: "/lq/b", Version: -1}},
			{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{Path: "/lq/x", ACL: zkproto.OpenACLUnsafe()}},
			{Type: zkproto.OpCreate, Request: &zkproto.CreateRequest{Path: "/lq/y", ACL: zkproto.OpenACLUnsafe()}},
		}})
		if err != nil {
			out = append(out, "multi: "+err.Error())
		} else {
			out = append(out, fmt.Sprintf("multi past the count: %v %s", r.Header.Err, multiErrs(r)))
		}
		call("get stats", zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper/quota/lq/zookeeper_stats"})
		if r, err := c.Call(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper/quota/lq/zookeeper_stats"}); err == nil && r.Body != nil {
			out = append(out, "stats: "+string(r.Body.(*zkproto.GetDataResponse).Data))
		}
		return out
	}
	zk, zb = both(zkAddr, zbAddr, quota)
	if d := diff(zk, zb); d != "" {
		t.Errorf("quota enforcement: ZooKeeper and zkbridge differ:\n%s", d)
	} else if testing.Verbose() {
		t.Logf("quota:\n%s", strings.Join(zk, "\n"))
	}

	// The connection throttle takes a token per ConnectRequest (not per
	// TCP connection: maxClientCnxns refusals and ZooKeeper's start-up srvr
	// probes take none). Both servers have admitted the same sessions so
	// far, so they must refuse the same one.
	throttle := func(addr string) []string {
		for i := 1; i <= limitsThrottleTokens+5; i++ {
			o, c := connectOutcome(addr)
			if c == nil {
				return []string{fmt.Sprintf("session attempt %d of this probe: %s", i, o)}
			}
			// closeSession, and its connection gone, before the next:
			// maxClientCnxns must not be what refuses it.
			c.EndSession(5 * time.Second)
			c.Closed(5 * time.Second)
			c.Close()
		}
		return []string{"no session refused"}
	}
	zk, zb = both(zkAddr, zbAddr, throttle)
	if d := diff(zk, zb); d != "" {
		t.Errorf("connection throttle: ZooKeeper and zkbridge differ:\n%s", d)
	} else if testing.Verbose() {
		t.Logf("throttle: %s", strings.Join(zk, "\n"))
	}
}

func multiErrs(r *Reply) string {
	m, ok := r.Body.(*zkproto.MultiResponse)
	if !ok {
		return ""
	}
	var errs []string
	for _, res := range m.Results {
		errs = append(errs, fmt.Sprint(res.Err))
	}
	return "[" + strings.Join(errs, " ") + "]"
}
