package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/zkproto"
)

//go:embed assets templates
var embedded embed.FS

// DefaultTenant is shard 1's namespace: every page reads it unless the
// request names another tenant (?tenant=NAME).
const DefaultTenant = "default"

// Doors is what the console reads of this node's front doors (the admin
// package's Commands interface satisfies it).
type Doors interface {
	// ConsoleConns lists the client connections that have a session.
	ConsoleConns() []node.ConnInfo
	// RequestStats returns cumulative replies by op and their latencies.
	RequestStats() node.RequestStats
	// Gauges reports every numeric mntr value.
	Gauges(emit func(name, help string, v float64))
}

// Options configure a console.
type Options struct {
	Node  *node.Node
	Doors Doors
	// Bridge reports the native door's activity; nil when it is off.
	Bridge func() node.BridgeActivity
	// Users are administrators: digest identities name:<base64 sha1>, or
	// x509:<DN> for a client certificate.
	Users []string
	// Writes enables changes (set data, create, delete, expire session).
	Writes bool
	// SuperDigest is the cluster's super identity (it reads everything).
	SuperDigest string
	// X509SuperUser is the client certificate DN that is super
	// (zookeeper.ssl.x509.superUser).
	X509SuperUser string
	// Version is what the Cluster page shows as this node's version.
	Version string
	// Peer fetches path from another node's admin address into out (the
	// Cluster, Sessions and Bridge pages ask every node); nil: plain HTTP.
	Peer func(ctx context.Context, adminAddr, path string, out any) error
	// Tenants lists the cluster's tenants and gives this node's replica of
	// one (nil: the default tenant alone).
	Tenants Tenants
	Log     zerolog.Logger
}

// Console serves /ui/.
type Console struct {
	opt    Options
	tmpl   *template.Template
	secret []byte // CSRF tokens are HMACs of the user under it
	ring   *ring
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// New prepares the console and starts its metrics sampler (stop it with
// Close).
func New(opt Options) (*Console, error) {
	if opt.Peer == nil {
		opt.Peer = fetchJSON
	}
	t, err := template.New("").Funcs(funcs).ParseFS(embedded, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	c := &Console{opt: opt, tmpl: t, secret: make([]byte, 32), ring: newRing(ringSize), stop: make(chan struct{})}
	if _, err := rand.Read(c.secret); err != nil {
		return nil, fmt.Errorf("console: no randomness for the CSRF secret: %w", err)
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.sampleLoop() }()
	return c, nil
}

// Close stops the sampler and ends the event streams.
func (c *Console) Close() {
	c.once.Do(func() { close(c.stop) })
	c.wg.Wait()
}

// Handler serves every /ui/ path.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(embedded, "assets")
	mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", cacheForever(http.FileServer(http.FS(assets)))))
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/cluster", http.StatusFound)
	})
	mux.HandleFunc("GET /ui/login", c.login)
	mux.HandleFunc("GET /ui/cluster", c.clusterPage)
	mux.HandleFunc("GET /ui/cluster/nodes", c.clusterNodes)
	mux.HandleFunc("GET /ui/events/metrics", c.metricsEvents)
	mux.HandleFunc("GET /ui/tree", c.treePage)
	mux.HandleFunc("GET /ui/tree/children", c.treeChildren)
	mux.HandleFunc("POST /ui/tree/write", c.treeWrite)
	mux.HandleFunc("GET /ui/sessions", c.sessionsPage)
	mux.HandleFunc("POST /ui/sessions/expire", c.expireSession)
	mux.HandleFunc("GET /ui/bridge", c.bridgePage)
	mux.HandleFunc("GET /ui/tenants", c.tenantsPage)
	mux.HandleFunc("GET /ui/tenant", c.tenantPage)
	mux.HandleFunc("GET /ui/api/local", c.localJSON)
	return securityHeaders(loopbackOrTLS(mux))
}

// loopbackOrTLS serves other hosts only over HTTPS: a console exposed on a
// plaintext admin port would hand its pages, and its administrators'
// passwords, to the network. Loopback clients are always served, and so
// is /ui/api/local, which the other nodes ask (it tells what /commands
// already does: roles, indexes, connections).
func loopbackOrTLS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil && !fromLoopback(r) && r.URL.Path != "/ui/api/local" {
			http.Error(w, "the web console serves other hosts only over HTTPS: set admin.forceHttps (admin_https) with the ssl.* stores, or browse from this host", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		h.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages from being framed or fed foreign scripts.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// viewer is who asks: the identities the tree is read with.
type viewer struct {
	User  string       // administrator's name, "" when not signed in
	IDs   []zkproto.Id // ip, plus digest when signed in
	Admin bool
}

// DigestOf is ZooKeeper's digest identity of user:password:
// user:base64(sha1(user:password)).
func DigestOf(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// who identifies the request. A request with wrong credentials gets
// ok=false (the caller answers 401).
func (c *Console) who(r *http.Request) (v viewer, ok bool) {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		v.IDs = append(v.IDs, zkproto.Id{Scheme: "ip", ID: host})
	}
	// A verified client certificate (HTTPS with ssl.clientAuth) is the
	// x509 identity a ZooKeeper client with it would have; an
	// administrator when admin_users lists it as x509:<DN>.
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		dn := tlsconf.JavaDN(r.TLS.PeerCertificates[0])
		v.IDs = append(v.IDs, zkproto.Id{Scheme: "x509", ID: dn})
		if su := c.opt.X509SuperUser; su != "" && dn == su {
			v.IDs = append(v.IDs, zkproto.Id{Scheme: "super", ID: dn})
		}
		for _, u := range c.opt.Users {
			if u == "x509:"+dn {
				v.User, v.Admin = dn, true
			}
		}
	}
	user, pass, has := r.BasicAuth()
	if !has {
		return v, true
	}
	digest := DigestOf(user, pass)
	for _, u := range c.opt.Users {
		if subtle.ConstantTimeCompare([]byte(u), []byte(digest)) == 1 {
			v.User, v.Admin = user, true
			v.IDs = append(v.IDs, zkproto.Id{Scheme: "digest", ID: digest})
			return v, true
		}
	}
	return v, false
}

// viewerOr401 identifies the request or answers 401.
func (c *Console) viewerOr401(w http.ResponseWriter, r *http.Request) (viewer, bool) {
	v, ok := c.who(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="zkbridge console", charset="UTF-8"`)
		http.Error(w, "wrong administrator name or password", http.StatusUnauthorized)
	}
	return v, ok
}

// login asks the browser for credentials until it sends valid ones.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok || !v.Admin {
		w.Header().Set("WWW-Authenticate", `Basic realm="zkbridge console", charset="UTF-8"`)
		if len(c.opt.Users) == 0 {
			http.Error(w, "no administrators are configured (admin_users)", http.StatusUnauthorized)
			return
		}
		http.Error(w, "sign in as an administrator (admin_users)", http.StatusUnauthorized)
		return
	}
	back := r.URL.Query().Get("back")
	if !strings.HasPrefix(back, "/ui/") {
		back = "/ui/cluster"
	}
	http.Redirect(w, r, back, http.StatusFound)
}

// csrfToken binds a form to the signed-in administrator.
func (c *Console) csrfToken(user string) string {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(user))
	return hex.EncodeToString(m.Sum(nil))
}

// checkWrite admits a write: writes enabled, an administrator, a
// same-origin request carrying its CSRF token.
func (c *Console) checkWrite(w http.ResponseWriter, r *http.Request) (viewer, bool) {
	v, ok := c.viewerOr401(w, r)
	if !ok {
		return v, false
	}
	switch {
	case !c.opt.Writes:
		http.Error(w, "the console is read-only (set console_writes: true to allow changes)", http.StatusForbidden)
		return v, false
	case !v.Admin:
		http.Error(w, "changes need a signed-in administrator (/ui/login)", http.StatusForbidden)
		return v, false
	case r.Header.Get("Sec-Fetch-Site") == "cross-site" || !sameOrigin(r):
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return v, false
	case !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(c.csrfToken(v.User))):
		http.Error(w, "missing or stale CSRF token: reload the page", http.StatusForbidden)
		return v, false
	}
	return v, true
}

// sameOrigin: an Origin header, when sent, names this host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// fetchJSON is the default Peer: GET http://addr/path, bounded.
func fetchJSON(ctx context.Context, addr, path string, out any) error {
	return getJSON(ctx, http.DefaultClient, "http://"+addr+path, addr, path, out)
}

// HTTPSPeer is a Peer for admin ports on HTTPS (admin.forceHttps): each
// node is dialed with the TLS configuration tlsFor gives for its address.
func HTTPSPeer(tlsFor func(addr string) *tls.Config) func(ctx context.Context, addr, path string, out any) error {
	return func(ctx context.Context, addr, path string, out any) error {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(addr)}}
		defer client.CloseIdleConnections()
		return getJSON(ctx, client, "https://"+addr+path, addr, path, out)
	}
}

func getJSON(ctx context.Context, client *http.Client, url, addr, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("ask %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ask %s%s: %s", addr, path, resp.Status)
	}
	return decodeJSON(resp.Body, out)
}
