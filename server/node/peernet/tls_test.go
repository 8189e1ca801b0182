package peernet

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lni/dragonboat/v4/config"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/tlsconf/tlstest"
)

// syncBuffer is a log sink tests can read while transports write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func peerSource(t *testing.T, ca *tlstest.CA, trust *tlstest.CA, opts tlstest.Options) *tlsconf.Source {
	t.Helper()
	dir := t.TempDir()
	leaf, err := ca.Issue(opts)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := leaf.WritePEMKeyStore(dir, "peer.pem")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trust.WritePEM(dir, "ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.NewSource(tlsconf.Settings{KeyStore: tlsconf.Store{Location: ks}, TrustStore: tlsconf.Store{Location: ts}}, "ssl.quorum", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func startTLSTransport(t *testing.T, r *received, src *tlsconf.Source, log *syncBuffer) *Transport {
	t.Helper()
	nhc := config.NodeHostConfig{RaftAddress: "127.0.0.1:0"}
	tr := Factory{Log: zerolog.New(log), TLS: src}.Create(nhc, r.onBatch, r.onChunk).(*Transport)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// TestMutualTLSRefusesBadPeers: two peers of one CA exchange batches;
// a peer with a certificate of another CA, or an expired one, can neither
// send to them nor be sent to, and both sides log why.
func TestMutualTLSRefusesBadPeers(t *testing.T) {
	ca, _ := tlstest.NewCA("quorum CA")
	rogueCA, _ := tlstest.NewCA("rogue CA")
	var goodLog syncBuffer
	r := &received{accept: true}
	good := startTLSTransport(t, r, peerSource(t, ca, ca, tlstest.Options{CN: "node1"}), &goodLog)
	peer := startTLSTransport(t, &received{}, peerSource(t, ca, ca, tlstest.Options{CN: "node2"}), &syncBuffer{})

	conn, err := peer.GetConnection(context.Background(), good.Addr().String())
	if err != nil {
		t.Fatalf("a peer of the same CA: %v", err)
	}
	if err := conn.SendMessageBatch(sampleBatch(1, []byte("entry"))); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	waitFor(t, "the batch over TLS", func() bool { n, _ := r.counts(); return n == 1 })

	expired := tlstest.Options{CN: "node3", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}
	for name, src := range map[string]*tlsconf.Source{
		"another CA": peerSource(t, rogueCA, ca, tlstest.Options{CN: "node3"}),
		"expired":    peerSource(t, ca, ca, expired),
	} {
		var badLog syncBuffer
		bad := startTLSTransport(t, &received{}, src, &badLog)
		// It cannot send: the good node refuses the handshake.
		if c, err := bad.GetConnection(context.Background(), good.Addr().String()); err == nil {
			// TLS 1.3: the client learns of the refusal on its next I/O.
			_ = c.SendMessageBatch(sampleBatch(2, []byte("rogue entry")))
			time.Sleep(100 * time.Millisecond)
			_ = c.SendMessageBatch(sampleBatch(3, []byte("rogue entry")))
			c.Close()
		}
		waitFor(t, name+": the refusal logged by the good node", func() bool {
			return strings.Contains(goodLog.String(), "peer TLS handshake failed: refusing the connection")
		})
		if n, _ := r.counts(); n != 1 {
			t.Fatalf("%s: %d batches delivered, want only the good peer's", name, n)
		}
		// It cannot receive: the good node does not accept its certificate.
		if _, err := good.GetConnection(context.Background(), bad.Addr().String()); err == nil {
			t.Fatalf("%s: the good node dialed a peer with a bad certificate", name)
		}
		if !strings.Contains(goodLog.String(), "peer TLS handshake failed: not sending to it") {
			t.Fatalf("%s: no log line for the refused dial: %s", name, goodLog.String())
		}
		if name == "expired" && !strings.Contains(goodLog.String(), "expired") {
			t.Errorf("the log does not say the certificate expired: %s", goodLog.String())
		}
		goodLog.mu.Lock()
		goodLog.buf.Reset()
		goodLog.mu.Unlock()
		good.tls.mu.Lock()
		good.tls.logged = map[string]time.Time{}
		good.tls.mu.Unlock()
	}
}
