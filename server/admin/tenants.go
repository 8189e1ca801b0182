package admin

import (
	"bufio"
	"context"
	"fmt"
	"net/url"

	"encoding/json"
	"github.com/prometheus/client_golang/prometheus"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
)

// Tenants is the tenant registry as the admin endpoint serves it under
// /tenants (server.Server implements it): the list with this node's
// figures, and create, update and delete, which go through the registry
// from any node.
type Tenants interface {
	ListTenants() (any, error)
	// PutTenant creates (create) or updates the tenant the form describes.
	PutTenant(ctx context.Context, create bool, form TenantForm) (any, error)
	RemoveTenant(ctx context.Context, name string, force bool) error
	// TenantStatus maps an error to an HTTP status (404 unknown tenant,
	// 409 exists or busy, 400 bad settings).
	TenantStatus(err error) int
	// TenantGauges reports every tenant's numeric mntr values (the default
	// tenant's included) for /metrics, labelled with the tenant.
	TenantGauges(emit func(tenant, name, help string, v float64))
	// ShardNode is this node's replica of a tenant's shard (nil if it runs
	// none).
	ShardNode(shard uint64) *node.Node
	// Rebalance moves tenant replicas until the voters host about as many
	// each, then spreads the leaders (dryRun: only the plan), passing each
	// progress event to emit.
	Rebalance(ctx context.Context, dryRun bool, emit func(event any)) error
	// MoveReplica carries out one move of a rebalance on this node, which
	// must host the tenant (the node a rebalance runs on forwards the
	// moves of tenants it does not host).
	MoveReplica(ctx context.Context, tenant string, from, to uint64, emit func(event any)) error
}

// TenantForm is a create or update as posted: name, port, secure_port,
// replicas, identity (repeated), max_znodes, max_bytes, max_sessions,
// max_ops_per_sec.
type TenantForm struct {
	Name                                           string
	Port, SecurePort, Replicas                     int
	Identities                                     []string
	MaxZnodes, MaxBytes, MaxSessions, MaxOpsPerSec int64
	// Given names the fields the form had (an update changes only those).
	Given map[string]bool
}

// SetTenants serves the tenant registry under /tenants (call before Serve).
func (a *Server) SetTenants(t Tenants) { a.tenants = t }

func (a *Server) tenantHandlers(mux *http.ServeMux) {
	if a.tenants == nil {
		return
	}
	fail := func(w http.ResponseWriter, code int, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
	}
	ok := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/tenants", func(w http.ResponseWriter, r *http.Request) {
		list, err := a.tenants.ListTenants()
		if err != nil {
			fail(w, http.StatusServiceUnavailable, err)
			return
		}
		ok(w, list)
	})
	post := func(path string, f func(ctx context.Context, r *http.Request) (any, error)) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "use POST", http.StatusMethodNotAllowed)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			v, err := f(ctx, r)
			if err != nil {
				fail(w, a.tenants.TenantStatus(err), err)
				return
			}
			ok(w, v)
		})
	}
	put := func(create bool) func(ctx context.Context, r *http.Request) (any, error) {
		return func(ctx context.Context, r *http.Request) (any, error) {
			form, err := parseTenantForm(r)
			if err != nil {
				return nil, err
			}
			return a.tenants.PutTenant(ctx, create, form)
		}
	}
	// /tenants/rebalance streams its progress as JSON lines, the last one
	// the summary (or an error); the client going away stops it between
	// steps, and the next run resumes.
	mux.HandleFunc("/tenants/rebalance", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		dryRun, _ := strconv.ParseBool(r.FormValue("dry_run"))
		ctx, cancel := context.WithTimeout(r.Context(), rebalanceTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		enc := json.NewEncoder(w)
		emit := func(v any) {
			_ = enc.Encode(v)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err := a.tenants.Rebalance(ctx, dryRun, emit); err != nil {
			emit(map[string]string{"step": "error", "error": err.Error()})
		}
	})
	mux.HandleFunc("/tenants/move", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		from, _ := strconv.ParseUint(r.FormValue("from"), 10, 64)
		to, _ := strconv.ParseUint(r.FormValue("to"), 10, 64)
		ctx, cancel := context.WithTimeout(r.Context(), rebalanceTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		enc := json.NewEncoder(w)
		emit := func(v any) {
			_ = enc.Encode(v)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err := a.tenants.MoveReplica(ctx, r.FormValue("tenant"), from, to, emit); err != nil {
			emit(map[string]string{"step": "error", "error": err.Error()})
		}
	})
	post("/tenants/create", put(true))
	post("/tenants/update", put(false))
	post("/tenants/delete", func(ctx context.Context, r *http.Request) (any, error) {
		force, _ := strconv.ParseBool(r.FormValue("force"))
		if err := a.tenants.RemoveTenant(ctx, r.FormValue("name"), force); err != nil {
			return nil, err
		}
		return map[string]string{"result": "ok"}, nil
	})
}

// PeerStream posts form to path on another node's admin address (HTTPS
// when this admin server is: PeerTLS) and passes each line of the answer
// to line, until the answer ends or line fails.
func (a *Server) PeerStream(ctx context.Context, adminAddr, path string, form url.Values, line func([]byte) error) error {
	scheme, client := "http://", http.DefaultClient
	if a.peerTLS != nil {
		scheme, client = "https://", &http.Client{Transport: &http.Transport{TLSClientConfig: a.peerTLS(adminAddr)}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+adminAddr+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("ask %s: %w", adminAddr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ask %s%s: %s", adminAddr, path, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if err := line(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// rebalanceTimeout bounds one rebalance run (each move streams a shard's
// snapshot to its new replica).
const rebalanceTimeout = time.Hour

// badForm is a form value that is not a number.
type badForm struct{ field, value string }

func (e badForm) Error() string { return e.field + "=" + strconv.Quote(e.value) + " is not a number" }

func parseTenantForm(r *http.Request) (TenantForm, error) {
	if err := r.ParseForm(); err != nil {
		return TenantForm{}, err
	}
	f := TenantForm{Name: r.FormValue("name"), Given: map[string]bool{}}
	for k := range r.Form {
		f.Given[k] = true
	}
	num := func(field string) (int64, error) {
		v := strings.TrimSpace(r.FormValue(field))
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, badForm{field, v}
		}
		return n, nil
	}
	var err error
	var port, secure, replicas int64
	for _, x := range []struct {
		field string
		to    *int64
	}{{"port", &port}, {"secure_port", &secure}, {"replicas", &replicas}, {"max_znodes", &f.MaxZnodes},
		{"max_bytes", &f.MaxBytes}, {"max_sessions", &f.MaxSessions}, {"max_ops_per_sec", &f.MaxOpsPerSec}} {
		if *x.to, err = num(x.field); err != nil {
			return f, err
		}
	}
	f.Port, f.SecurePort, f.Replicas = int(port), int(secure), int(replicas)
	for _, id := range r.Form["identity"] {
		if id = strings.TrimSpace(id); id != "" {
			f.Identities = append(f.Identities, id)
		}
	}
	return f, nil
}

// IsBadForm reports whether err is a malformed form value (HTTP 400).
func IsBadForm(err error) bool {
	_, ok := err.(badForm)
	return ok
}

// tenantMetricPrefix names the per-tenant families on /metrics: mntr's
// names without zk_, labelled tenant="…". The default tenant's unlabelled
// zk_* series stay as they were; a family cannot mix labelled and
// unlabelled series.
const tenantMetricPrefix = "zkbridge_tenant_"

func (c collector) collectTenants(ch chan<- prometheus.Metric) {
	if c.a.tenants == nil {
		return
	}
	descs := map[string]*prometheus.Desc{}
	c.a.tenants.TenantGauges(func(tenant, name, help string, v float64) {
		name = tenantMetricPrefix + strings.TrimPrefix(name, "zk_")
		d := descs[name]
		if d == nil {
			d = prometheus.NewDesc(name, help, []string{"tenant"}, nil)
			descs[name] = d
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, tenant)
	})
}
