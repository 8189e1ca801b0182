package server

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
	"github.com/zkbridge/zkbridge/zkproto"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestQuorumTLSKeepsOutAWrongCertificate runs three nodes with
// sslQuorum=true where node 3's certificate comes from another CA, or has
// expired: nodes 1 and 2 form the quorum and commit writes, node 3 never
// receives an entry, and the refusal is in the logs.
func TestQuorumTLSKeepsOutAWrongCertificate(t *testing.T) {
	ca, _ := tlstest.NewCA("quorum CA")
	rogue, _ := tlstest.NewCA("rogue CA")
	expired := tlstest.Options{CN: "node", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	t.Run("another CA", func(t *testing.T) {
		quorumRefusal(t, ca, rogue, tlstest.Options{CN: "node"}, "certificate signed by unknown authority")
	})
	t.Run("expired", func(t *testing.T) { quorumRefusal(t, ca, ca, expired, "expired") })
}

// quorumRefusal runs the cluster with node 3's certificate issued by
// badIssuer with badOpts; logged names what the refusal must say.
func quorumRefusal(t *testing.T, ca, badIssuer *tlstest.CA, badOpts tlstest.Options, logged string) {
	stores := func(issuer *tlstest.CA, opts tlstest.Options) tlsconf.Settings {
		dir := t.TempDir()
		leaf, err := issuer.Issue(opts)
		if err != nil {
			t.Fatal(err)
		}
		ks, _ := leaf.WritePEMKeyStore(dir, "peer.pem")
		ts, _ := ca.WritePEM(dir, "ca.pem")
		return tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks}, TrustStore: tlsconf.Store{Location: ts}}
	}
	peers := map[uint64]string{}
	for i, addr := range freeAddrs(t, 3) {
		peers[uint64(i+1)] = addr
	}
	logs := make([]*lockedBuffer, 3)
	servers := make([]*Server, 3)
	for i := range servers {
		issuer, opts := ca, tlstest.Options{CN: "node"}
		if i == 2 {
			issuer, opts = badIssuer, badOpts
		}
		cfg := Config{DataDir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: peers[uint64(i+1)], ReplicaID: uint64(i + 1),
			Peers: peers, AdminDisabled: true, FourLetterWords: []string{"*"}}
		cfg.TLS.QuorumEnabled = true
		cfg.TLS.Quorum = stores(issuer, opts)
		logs[i] = &lockedBuffer{}
		s, err := New(cfg, zerolog.New(logs[i]).Level(zerolog.InfoLevel))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		servers[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, s := range servers[:2] {
		if err := s.WaitServing(ctx); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
	}
	c := dial(t, servers[0])
	c.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: "/committed", Data: []byte("x"), ACL: zkproto.OpenACLUnsafe()})
	if h, _ := c.reply(); h.Err != zkproto.ErrOK {
		t.Fatalf("create on the TLS quorum: %v", h.Err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for servers[1].node.LastZxid() < servers[0].node.LastZxid() {
		if time.Now().After(deadline) {
			t.Fatal("node 2 did not catch up over TLS")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Give node 3 every chance: several heartbeats and redials.
	time.Sleep(time.Second)
	if got := servers[2].node.LastZxid(); got != 0 {
		t.Errorf("node 3 with a bad certificate applied up to zxid %#x", got)
	}
	if servers[2].Ready() == nil {
		t.Error("node 3 with a bad certificate serves")
	}
	for i, want := range map[int]string{0: "peer TLS handshake failed", 2: "peer TLS handshake failed"} {
		if !strings.Contains(logs[i].String(), want) {
			t.Errorf("node %d's log lacks %q", i+1, want)
		}
	}
	line := ""
	for _, l := range strings.Split(logs[0].String(), "\n") {
		if strings.Contains(l, "peer TLS handshake failed") {
			line = l
			break
		}
	}
	// Which side names the reason depends on who dialled whom: under TLS
	// 1.3 the dialler checks the server's certificate first, so a healthy
	// node that dials node 3 logs it, while one that node 3 dials only sees
	// a client that gave up ("didn't provide a certificate"). Some node
	// must say it.
	if all := logs[0].String() + logs[1].String() + logs[2].String(); !strings.Contains(all, logged) {
		t.Errorf("no node's log says %q; node 1: %s", logged, line)
	}
	t.Logf("node 1 logged: %s", line)
}
