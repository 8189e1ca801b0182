package console

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The ring keeps the last n samples, oldest first, and hands each new one
// to every subscriber.
func TestRingKeepsTheLastSamplesInOrder(t *testing.T) {
	r := newRing(3)
	ch, done := r.subscribe()
	defer done()
	var zero [49]int64
	for i := int64(1); i <= 5; i++ {
		r.add(Sample{Time: i}, zero)
		if i <= 4 { // the subscriber's buffer holds 4
			if got := <-ch; got.Time != i {
				t.Fatalf("subscriber got sample %d, want %d", got.Time, i)
			}
		}
	}
	h := r.history()
	if len(h) != 3 || h[0].Time != 3 || h[2].Time != 5 {
		t.Fatalf("history %+v, want samples 3, 4, 5", h)
	}
}

// The metrics stream sends the history first, then live samples.
func TestMetricsStreamSendsHistoryThenSamples(t *testing.T) {
	c := &Console{ring: newRing(10), stop: make(chan struct{})}
	var zero [49]int64
	c.ring.add(Sample{Time: 1, Ops: make([]float64, len(opSeries))}, zero)
	srv := httptest.NewServer(http.HandlerFunc(c.metricsEvents))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() (event, data string) {
		for lines.Scan() {
			l := lines.Text()
			switch {
			case strings.HasPrefix(l, "event: "):
				event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = strings.TrimPrefix(l, "data: ")
			case l == "" && event != "":
				return event, data
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return "", ""
	}
	ev, data := next()
	var hist struct {
		Series  []string
		Samples []Sample
	}
	if err := json.Unmarshal([]byte(data), &hist); ev != "history" || err != nil || len(hist.Samples) != 1 || len(hist.Series) != len(opSeries) {
		t.Fatalf("first event %q %s (%v)", ev, data, err)
	}
	go func() {
		// Once the handler has subscribed, a new sample reaches it.
		for i := 0; i < 100; i++ {
			c.ring.mu.Lock()
			n := len(c.ring.waiters)
			c.ring.mu.Unlock()
			if n > 0 {
				c.ring.add(Sample{Time: 2}, zero)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	ev, data = next()
	var s Sample
	if err := json.Unmarshal([]byte(data), &s); ev != "sample" || err != nil || s.Time != 2 {
		t.Fatalf("second event %q %s (%v)", ev, data, err)
	}
}

// An administrator is recognised by the digest of name and password; a
// wrong password is refused, no credentials are an anonymous viewer with
// the ip identity only.
func TestViewerIdentities(t *testing.T) {
	c := &Console{opt: Options{Users: []string{DigestOf("alice", "pw")}}}
	req := httptest.NewRequest(http.MethodGet, "/ui/tree", nil)
	req.RemoteAddr = "10.1.2.3:5555"
	v, ok := c.who(req)
	if !ok || v.Admin || len(v.IDs) != 1 || v.IDs[0] != (zkproto.Id{Scheme: "ip", ID: "10.1.2.3"}) {
		t.Fatalf("anonymous viewer: %+v %v", v, ok)
	}
	req.SetBasicAuth("alice", "wrong")
	if _, ok := c.who(req); ok {
		t.Fatal("a wrong password was accepted")
	}
	req.SetBasicAuth("alice", "pw")
	v, ok = c.who(req)
	if !ok || !v.Admin || v.User != "alice" || len(v.IDs) != 2 || v.IDs[1] != (zkproto.Id{Scheme: "digest", ID: DigestOf("alice", "pw")}) {
		t.Fatalf("administrator: %+v %v", v, ok)
	}
	// ZooKeeper's digest of super:superpw, as docs/operations.md gives it.
	if got := DigestOf("super", "superpw"); got != "super:g9oN2HttPfn8MMWJZ2r45Np/LIA=" {
		t.Fatalf("digest of super:superpw is %s", got)
	}
}

// A client certificate is the viewer's x509 identity (its DN as ZooKeeper
// spells it), and an administrator when admin_users lists x509:<DN>.
func TestClientCertificateIdentity(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ops", Organization: []string{"Example"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	const dn = "CN=ops,O=Example"
	req := httptest.NewRequest(http.MethodGet, "/ui/tree", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}

	c := &Console{opt: Options{}}
	v, ok := c.who(req)
	if !ok || v.Admin || len(v.IDs) != 2 || v.IDs[1] != (zkproto.Id{Scheme: "x509", ID: dn}) {
		t.Fatalf("certificate viewer: %+v", v)
	}
	c = &Console{opt: Options{Users: []string{"x509:" + dn}, X509SuperUser: dn}}
	v, ok = c.who(req)
	if !ok || !v.Admin || v.User != dn || len(v.IDs) != 3 || v.IDs[2].Scheme != "super" {
		t.Fatalf("certificate administrator and super user: %+v", v)
	}
}

// Other hosts get the console only over HTTPS, loopback always; the other
// nodes' /ui/api/local is served either way.
func TestOtherHostsOnlyOverHTTPS(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := loopbackOrTLS(ok)
	for _, tc := range []struct {
		remote, path string
		tls          bool
		want         int
	}{
		{"127.0.0.1:5000", "/ui/cluster", false, http.StatusOK},
		{"[::1]:5000", "/ui/cluster", false, http.StatusOK},
		{"10.0.0.9:5000", "/ui/cluster", false, http.StatusForbidden},
		{"10.0.0.9:5000", "/ui/cluster", true, http.StatusOK},
		{"10.0.0.9:5000", "/ui/api/local", false, http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.RemoteAddr = tc.remote
		if tc.tls {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s (tls %v): %d, want %d", tc.remote, tc.path, tc.tls, rec.Code, tc.want)
		}
	}
}
