package admin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/admin/console"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/server/stagetrace"
)

// Commands is what a front door answers on /commands/<name> and /metrics:
// ZooKeeper's AdminServer commands and mntr's numeric values.
type Commands interface {
	// CommandNames lists the primary command names, sorted.
	CommandNames() []string
	// RunCommand runs a command by name or alias: its primary name and JSON
	// fields, or ok=false when unknown.
	RunCommand(name string) (primary string, out map[string]any, ok bool)
	// Gauges reports every numeric mntr value.
	Gauges(emit func(name, help string, v float64))
	// ConsoleConns lists the door's client connections with their
	// sessions and watches (the web console's Sessions page).
	ConsoleConns() []node.ConnInfo
	// RequestStats returns cumulative replies by op and their latency
	// histogram (the web console's live charts).
	RequestStats() node.RequestStats
}

// ConsoleOptions configure the web console under /ui/ (server/admin/console).
type ConsoleOptions struct {
	// Users are administrators: digest identities name:<base64 sha1>, or
	// x509:<DN> for a client certificate.
	Users []string
	// Writes lets administrators change znodes and expire sessions.
	Writes bool
	// SuperDigest is the cluster's super identity.
	SuperDigest string
	// X509SuperUser is the client certificate DN that is super.
	X509SuperUser string
	// Version is the version the Cluster page shows.
	Version string
	// Bridge reports the native door's activity; nil when it is off.
	Bridge func() node.BridgeActivity
}

// Server is the admin HTTP endpoint of one node.
type Server struct {
	addr   string
	node   *node.Node
	cmds   Commands
	status func(context.Context) (node.RaftStatus, error)
	log    zerolog.Logger

	ln   net.Listener
	http *http.Server
	wg   sync.WaitGroup

	consoleOpts *ConsoleOptions  // nil: no console
	console     *console.Console // started by Serve
	// peerTLS, when set, is how the console dials other nodes' admin
	// ports (HTTPS, admin.forceHttps).
	peerTLS func(addr string) *tls.Config
	// tenants serves /tenants when set (tenants.go).
	tenants Tenants
}

// PeerTLS makes the console reach other nodes' admin ports over HTTPS with
// the configuration f gives for an address (call before Serve).
func (a *Server) PeerTLS(f func(addr string) *tls.Config) { a.peerTLS = f }

// EnableConsole serves the web console under /ui/ (call before Serve).
func (a *Server) EnableConsole(o ConsoleOptions) { a.consoleOpts = &o }

// New prepares the admin endpoint on addr for node n; cmds answers the
// ZooKeeper commands, status the raft status (with the doors' connections).
func New(addr string, n *node.Node, cmds Commands, status func(context.Context) (node.RaftStatus, error), log zerolog.Logger) *Server {
	return &Server{addr: addr, node: n, cmds: cmds, status: status, log: log}
}

// Listen binds the admin address.
func (a *Server) Listen() error {
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return fmt.Errorf("listen on admin address %s: %w (use --admin-addr to move it, or disable it)", a.addr, err)
	}
	a.ln = ln
	a.addr = ln.Addr().String()
	return nil
}

// Addr returns the bound address.
func (a *Server) Addr() string { return a.addr }

// Serve serves HTTP until Shutdown.
func (a *Server) Serve() {
	// ReadHeaderTimeout bounds a slow or silent request; IdleTimeout a
	// keep-alive connection between requests (without it an idle one is
	// held forever). A streaming response is neither.
	a.http = &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.http.Serve(a.ln); err != nil && err != http.ErrServerClosed {
			a.log.Error().Err(err).Msg("admin server stopped")
		}
	}()
}

// Shutdown stops the endpoint (bounded).
func (a *Server) Shutdown() {
	if a.console != nil {
		a.console.Close() // its event streams end first: Shutdown waits for them
	}
	if a.http == nil {
		if a.ln != nil {
			a.ln.Close()
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = a.http.Shutdown(ctx)
	cancel()
	a.wg.Wait()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (a *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/commands", func(w http.ResponseWriter, r *http.Request) {
		links := map[string]string{}
		for _, n := range a.cmds.CommandNames() {
			links[n] = "/commands/" + n
		}
		writeJSON(w, http.StatusOK, map[string]any{"commands": links})
	})
	mux.HandleFunc("/commands/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/commands/")
		primary, out, ok := a.cmds.RunCommand(name)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"command": name, "error": "unknown command; see /commands"})
			return
		}
		out["command"] = primary
		out["error"] = nil
		writeJSON(w, http.StatusOK, out)
	})
	a.raftHandlers(mux)
	a.tenantHandlers(mux)
	if a.consoleOpts != nil {
		o := a.consoleOpts
		opts := console.Options{Node: a.node, Doors: a.cmds, Bridge: o.Bridge, Users: o.Users, Writes: o.Writes,
			SuperDigest: o.SuperDigest, X509SuperUser: o.X509SuperUser, Version: o.Version, Log: a.log.With().Str("component", "console").Logger()}
		if a.peerTLS != nil {
			opts.Peer = console.HTTPSPeer(a.peerTLS)
		}
		if t, ok := a.tenants.(console.Tenants); ok {
			opts.Tenants = t
		}
		c, err := console.New(opts)
		if err != nil {
			a.log.Error().Err(err).Msg("web console disabled")
		} else {
			a.console = c
			mux.Handle("/ui/", c.Handler())
		}
	}
	// Profiles for performance work (go tool pprof http://ADMIN/debug/pprof/profile).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/stages", stagetrace.Handler) // write stages (ZKBRIDGE_WRITE_STAGES=1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{a}, collectors.NewGoCollector()) // go_memstats_*: heap for memory comparisons
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.node.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// collector exposes the node to Prometheus under ZooKeeper's mntr names
// plus raft_* gauges.
type collector struct{ a *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.a.cmds.Gauges(func(name, help string, v float64) {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v)
	})
	lag := prometheus.NewDesc("raft_follower_lag", "leader only: entries a replica has still to apply (-1: it did not answer)", []string{"replica"}, nil)
	for id, n := range c.a.node.FollowerLag() {
		ch <- prometheus.MustNewConstMetric(lag, prometheus.GaugeValue, float64(n), strconv.FormatUint(id, 10))
	}
	c.collectTenants(ch)
}
