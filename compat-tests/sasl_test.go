package compattests

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server"
	"github.com/zkbridge/zkbridge/server/auth/sasl"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/zkproto"
)

// SASL DIGEST-MD5, differentially: a real ZooKeeper 3.8 and zkbridge
// started with the same JAAS file, driven by raw protocol exchanges, kazoo
// (pure-sasl) and zkCli.sh with a client JAAS file.

const saslServerJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_super="adminsecret"
  user_bob="bobsecret";
};
`

// startSASLPair starts a ZooKeeper and a zkbridge node with the same JAAS
// file and the sasl provider.
func startSASLPair(t *testing.T) (zkAddr, zbAddr, dir string) {
	t.Helper()
	return startSASLPairWith(t, "", nil)
}

// startSASLPairWith is startSASLPair with more ZooKeeper system properties
// (jvmFlags) and the same settings made on zkbridge's configuration (mutate).
func startSASLPairWith(t *testing.T, jvmFlags string, mutate func(*server.Config)) (zkAddr, zbAddr, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real ZooKeeper; skipped in -short mode")
	}
	return startSASLPairJAAS(t, t.TempDir(), saslServerJAAS, jvmFlags, mutate)
}

// startSASLPairJAAS is startSASLPairWith with the server JAAS text given,
// its file written to dir.
func startSASLPairJAAS(t *testing.T, dir, jaasText, jvmFlags string, mutate func(*server.Config)) (zkAddr, zbAddr, _ string) {
	t.Helper()
	jaas := filepath.Join(dir, "server.jaas")
	if err := os.WriteFile(jaas, []byte(jaasText), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZK_JVM_FLAGS", "-Djava.security.auth.login.config="+jaas+" -Dzookeeper.authProvider.1="+config.SASLProvider+" "+jvmFlags)
	zk, err := StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (%s): %v", installHint, err)
	}
	t.Cleanup(zk.Stop)
	peer, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := suiteConfig(filepath.Join(dir, "zkbridge"), fmt.Sprintf("127.0.0.1:%d", peer))
	cfg.Auth.JAASFile = jaas
	cfg.Auth.AuthProviders = []string{config.SASLProvider}
	if mutate != nil {
		mutate(&cfg)
	}
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
	return zk.Addr, srv.ClientAddr(), dir
}

// saslProbe is one raw SASL exchange: the tokens a client sends, each
// computed from the previous server token.
type saslProbe struct {
	name  string
	steps []func(prev []byte) []byte
}

func digestResponse(user, password string) func([]byte) []byte {
	return func(ch []byte) []byte {
		r, err := (&sasl.DigestClient{User: user, Password: password, CNonce: "fixedcnonce"}).Respond(ch)
		if err != nil {
			return []byte("client error: " + err.Error())
		}
		return r
	}
}

func constToken(b []byte) func([]byte) []byte { return func([]byte) []byte { return b } }

var (
	nonceRe   = regexp.MustCompile(`nonce="[A-Za-z0-9+/=]{40}"`)
	rspauthRe = regexp.MustCompile(`^rspauth=[0-9a-f]{32}$`)
)

// runSASLProbe connects, runs the probe's steps and then an exists, and
// describes every reply (xid, zxid, error, frame length, the token with its
// random parts masked) and when the server closed.
func runSASLProbe(addr string, p saslProbe) []string { return runSASLProbeTokens(addr, p, false) }

// runSASLProbeTokens is runSASLProbe; opaque: the tokens are binary and
// differ between servers (GSSAPI), so only whether each is null, empty or
// present is compared, not the frame length.
func runSASLProbeTokens(addr string, p saslProbe, opaque bool) []string {
	var out []string
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return []string{"dial: " + err.Error()}
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fr := zkproto.NewFrameReader(nc, 1<<20)
	send := func(recs ...zkproto.Record) {
		var e zkproto.Encoder
		off := e.StartFrame()
		for _, r := range recs {
			r.Encode(&e)
		}
		e.FinishFrame(off)
		_, _ = nc.Write(e.Bytes())
	}
	send(&zkproto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
	if _, err := fr.Next(); err != nil {
		return []string{"handshake: " + err.Error()}
	}
	var prev []byte
	xid := int32(0)
	for _, step := range p.steps {
		xid++
		send(&zkproto.RequestHeader{Xid: xid, Type: zkproto.OpSASL}, &zkproto.GetSASLRequest{Token: step(prev)})
		f, err := fr.Next()
		if err != nil {
			return append(out, "closed without a reply")
		}
		d := zkproto.NewDecoder(f)
		var h zkproto.ReplyHeader
		_ = h.Decode(d)
		var r zkproto.SetSASLResponse
		_ = r.Decode(d)
		tok, frameLen := "null", fmt.Sprint(len(f))
		switch {
		case r.Token == nil:
		case opaque:
			tok, frameLen = "<token>", "-"
			if len(r.Token) == 0 {
				tok = "<empty>"
			}
		case rspauthRe.Match(r.Token):
			tok = "rspauth=<hex>"
		default:
			tok = nonceRe.ReplaceAllString(string(r.Token), `nonce="<40>"`)
		}
		if r.Token == nil && opaque {
			frameLen = "-"
		}
		out = append(out, fmt.Sprintf("sasl xid=%d zxid=%d err=%d len=%s token=%s", h.Xid-xid, h.Zxid, h.Err, frameLen, tok))
		prev = r.Token
	}
	xid++
	send(&zkproto.RequestHeader{Xid: xid, Type: zkproto.OpWhoAmI})
	f, err := fr.Next()
	if err != nil {
		return append(out, "whoAmI: connection closed")
	}
	d := zkproto.NewDecoder(f)
	var h zkproto.ReplyHeader
	_ = h.Decode(d)
	var who zkproto.WhoAmIResponse
	_ = who.Decode(d)
	var ids []string
	for _, ci := range who.ClientInfo {
		ids = append(ids, ci.AuthScheme+":"+ci.User)
	}
	sort.Strings(ids)
	return append(out, fmt.Sprintf("whoAmI err=%d ids=%v", h.Err, ids))
}

func TestSASLDifferential(t *testing.T) {
	zkAddr, zbAddr, dir := startSASLPair(t)
	empty := constToken([]byte{})
	probes := []saslProbe{
		{"good", []func([]byte) []byte{empty, digestResponse("bob", "bobsecret")}},
		{"super", []func([]byte) []byte{empty, digestResponse("super", "adminsecret")}},
		{"wrong password", []func([]byte) []byte{empty, digestResponse("bob", "nope")}},
		{"unknown user", []func([]byte) []byte{empty, digestResponse("eve", "evesecret")}},
		{"PLAIN initial response", []func([]byte) []byte{constToken([]byte("\x00bob\x00bobsecret"))}},
		{"PLAIN as the response", []func([]byte) []byte{constToken([]byte("\x00bob\x00bobsecret")), constToken([]byte("\x00bob\x00bobsecret"))}},
		{"truncated response", []func([]byte) []byte{empty, func(ch []byte) []byte { r := digestResponse("bob", "bobsecret")(ch); return r[:len(r)/2] }}},
		{"garbage response", []func([]byte) []byte{empty, constToken([]byte{0xff, 0, 0x80, '='})}},
		{"empty response", []func([]byte) []byte{empty, empty}},
		{"token after success", []func([]byte) []byte{empty, digestResponse("bob", "bobsecret"), empty}},
		{"null token", []func([]byte) []byte{constToken(nil)}},
		{"other realm", []func([]byte) []byte{empty, func(ch []byte) []byte {
			return bytes.Replace(digestResponse("bob", "bobsecret")(ch), []byte(`realm="zk-sasl-md5"`), []byte(`realm="elsewhere"`), 1)
		}}},
	}
	for _, p := range probes {
		zk, zb := both(zkAddr, zbAddr, func(addr string) []string { return runSASLProbe(addr, p) })
		if d := diff(zk, zb); d != "" {
			t.Errorf("%s: ZooKeeper and zkbridge differ:\n%s", p.name, d)
		} else if testing.Verbose() {
			t.Logf("%s: %s", p.name, strings.Join(zk, " | "))
		}
	}

	// kazoo through pure-sasl.
	requireTool(t, python3Path)
	script := filepath.Join(RepoRoot(), "compat-tests", "clients", "kazoo_sasl.py")
	type result struct {
		out string
		err error
	}
	zk, zb := both(zkAddr, zbAddr, func(addr string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, python3Path, script, addr, "/kazoo-sasl").CombinedOutput()
		return result{string(out), err}
	})
	for name, r := range map[string]result{"ZooKeeper": zk, "zkbridge": zb} {
		if r.err != nil || !strings.HasSuffix(r.out, "OK\n") {
			t.Errorf("kazoo SASL against %s failed (%v):\n%s", name, r.err, r.out)
		}
	}
	if d := diff(strings.Split(zk.out, "\n"), strings.Split(zb.out, "\n")); d != "" {
		t.Errorf("kazoo SASL observed different results:\n%s", d)
	}

	// zkCli.sh with a client JAAS file: the right password, then a wrong one.
	requireTool(t, zkCliPath)
	for _, pw := range []string{"bobsecret", "wrong"} {
		clientJAAS := filepath.Join(dir, "client-"+pw+".jaas")
		text := "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"bob\"\n  password=\"" + pw + "\";\n};\n"
		if err := os.WriteFile(clientJAAS, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmds := []string{"whoami", "create /zkcli-sasl-" + pw + " data auth::cdrwa", "getAcl /zkcli-sasl-" + pw, "get /zkcli-sasl-" + pw}
		zkOut, zbOut := both(zkAddr, zbAddr, func(addr string) string {
			out, _ := zkCliSASL(addr, clientJAAS, cmds)
			return out
		})
		if d := diff(zkCliSASLLines(zkOut, zkAddr), zkCliSASLLines(zbOut, zbAddr)); d != "" {
			t.Errorf("zkCli.sh with password %q: ZooKeeper and zkbridge differ:\n%s", pw, d)
		} else if testing.Verbose() {
			t.Logf("zkCli.sh with password %q:\n%s", pw, strings.Join(zkCliSASLLines(zkOut, zkAddr), "\n"))
		}
	}
}

// zkCliSASL runs zkCli.sh with a client JAAS file (CLIENT_JVMFLAGS).
func zkCliSASL(addr, jaas string, cmds []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -Xss1m -Djava.security.auth.login.config="+jaas)
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\nquit\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// zkCliSASLLines keeps zkCli's results, then its watch events in arrival
// order, dropping log lines and the server address. Events are moved out
// because zkCli prints them from another thread, racing with the command
// output (SaslAuthenticated and whoami's first line come in either order).
func zkCliSASLLines(out, addr string) []string {
	var lines, events []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, "\r")
		switch {
		case l == "" || zkCliLogLine.MatchString(l) || strings.HasPrefix(l, "\t") || strings.Contains(l, "Exception"):
		case l == "WATCHER::":
		case strings.HasPrefix(l, "WatchedEvent "):
			events = append(events, "event: "+l)
		default:
			lines = append(lines, strings.ReplaceAll(l, addr, "ADDR"))
		}
	}
	return append(lines, events...)
}

// TestSASLRequiredDifferential: with zookeeper.sessionRequireClientSASLAuth
// on both, a request before SASL (a read, a ping, closeSession, a write),
// a failed SASL exchange and a successful one are answered alike.
func TestSASLRequiredDifferential(t *testing.T) {
	zkAddr, zbAddr, _ := startSASLPairWith(t, "-Dzookeeper.sessionRequireClientSASLAuth=true",
		func(c *server.Config) { c.Auth.SASLRequired = true })
	type probe struct {
		name string
		run  func(c *Client) []string
	}
	call := func(c *Client, label string, op zkproto.OpCode, req zkproto.Record) string {
		r, err := c.Call(op, req)
		if err != nil {
			return label + ": " + err.Error()
		}
		zxid := "zxid=0"
		if r.Header.Zxid != 0 {
			zxid = "zxid>0" // the servers' zxids differ
		}
		return fmt.Sprintf("%s: %s %v", label, zxid, r.Header.Err)
	}
	saslStep := func(c *Client, token []byte) (string, []byte) {
		r, err := c.Call(zkproto.OpSASL, &zkproto.GetSASLRequest{Token: token})
		if err != nil {
			return "sasl: " + err.Error(), nil
		}
		var tok []byte
		if b, ok := r.Body.(*zkproto.SetSASLResponse); ok {
			tok = b.Token
		}
		return fmt.Sprintf("sasl: zxid=%d %v", r.Header.Zxid, r.Header.Err), tok
	}
	probes := []probe{
		{"exists first", func(c *Client) []string {
			return []string{call(c, "exists", zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"}), fmt.Sprint("closed: ", c.Closed(5*time.Second))}
		}},
		{"ping first", func(c *Client) []string {
			if err := c.SendXid(zkproto.XidPing, zkproto.OpPing, nil); err != nil {
				return []string{"ping: " + err.Error()}
			}
			r, err := c.Receive(zkproto.XidPing, zkproto.OpPing)
			if err != nil {
				return []string{"ping: " + err.Error()}
			}
			return []string{fmt.Sprintf("ping: zxid=%d %v", r.Header.Zxid, r.Header.Err), fmt.Sprint("closed: ", c.Closed(5*time.Second))}
		}},
		{"create first", func(c *Client) []string {
			return []string{call(c, "create", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/req-sasl", ACL: zkproto.OpenACLUnsafe()}), fmt.Sprint("closed: ", c.Closed(5*time.Second))}
		}},
		{"wrong password", func(c *Client) []string {
			a, ch := saslStep(c, []byte{})
			rsp, _ := (&sasl.DigestClient{User: "bob", Password: "nope"}).Respond(ch)
			b, _ := saslStep(c, rsp)
			return []string{a, b, fmt.Sprint("closed: ", c.Closed(5*time.Second))}
		}},
		{"good password", func(c *Client) []string {
			a, ch := saslStep(c, []byte{})
			rsp, _ := (&sasl.DigestClient{User: "bob", Password: "bobsecret"}).Respond(ch)
			b, _ := saslStep(c, rsp)
			return []string{a, b, call(c, "exists", zkproto.OpExists, &zkproto.ExistsRequest{Path: "/zookeeper"})}
		}},
	}
	for _, p := range probes {
		zk, zb := both(zkAddr, zbAddr, func(addr string) []string {
			c, _, err := Connect(addr, "c", NewTranscript(), DialOptions{Timeout: 10000})
			if err != nil {
				return []string{"connect: " + err.Error()}
			}
			defer c.Close()
			return p.run(c)
		})
		if d := diff(zk, zb); d != "" {
			t.Errorf("%s: ZooKeeper and zkbridge differ:\n%s", p.name, d)
		} else if testing.Verbose() {
			t.Logf("%s: %s", p.name, strings.Join(zk, " | "))
		}
	}
}
