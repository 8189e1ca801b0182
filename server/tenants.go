package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/server/admin"
	"github.com/zkbridge/zkbridge/server/admin/console"
	"github.com/zkbridge/zkbridge/server/native"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/sm"
)

// tenantSet keeps this node's tenants in step with the registry: every
// tenant the registry places here gets its replica (a node.Node over its
// shard) and its ZooKeeper door (listeners on the tenant's ports, its own
// watches, sessions and four-letter words); a tenant the registry dropped
// is stopped and its data removed. It reconciles when an applied entry
// changed the registry, and every few seconds.
type tenantSet struct {
	s   *Server
	log zerolog.Logger

	mu      sync.Mutex
	running map[string]*tenant
	// forwarded are the tenants this node does not host but serves by
	// forwarding (forward.go).
	forwarded map[string]*forwardedTenant

	kick chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

// tenant is one tenant served by this node.
type tenant struct {
	spec sm.Tenant
	node *node.Node
	door *zk.Server
	// bridge is the tenant's native door, served through the node's one
	// gRPC listener (nil when the native API is off).
	bridge *native.Server

	// The request rate, sampled at each reconcile.
	rateMu    sync.Mutex
	lastCount int64
	lastAt    time.Time
	opsPerSec float64
}

// sample updates the tenant's request rate.
func (t *tenant) sample(now time.Time) {
	t.rateMu.Lock()
	defer t.rateMu.Unlock()
	n := t.door.Requests()
	if !t.lastAt.IsZero() && now.After(t.lastAt) && n >= t.lastCount {
		t.opsPerSec = float64(n-t.lastCount) / now.Sub(t.lastAt).Seconds()
	}
	t.lastCount, t.lastAt = n, now
}

func (t *tenant) rate() float64 {
	t.rateMu.Lock()
	defer t.rateMu.Unlock()
	return t.opsPerSec
}

// reconcileEvery is how often the set re-reads the registry without being
// told (a missed kick, a listener that failed to bind and may now).
const reconcileEvery = 2 * time.Second

func newTenantSet(s *Server) *tenantSet {
	ts := &tenantSet{s: s, log: s.log.With().Str("component", "tenants").Logger(),
		running: map[string]*tenant{}, forwarded: map[string]*forwardedTenant{}, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	s.node.Subscribe(node.Hooks{Applied: func(results []*sm.Result) {
		for _, r := range results {
			if r.TenantsChanged {
				ts.poke()
				return
			}
		}
	}})
	return ts
}

func (ts *tenantSet) poke() {
	select {
	case ts.kick <- struct{}{}:
	default:
	}
}

// start reconciles once (the tenants this node hosted before a restart
// come back before it says it listens) and then keeps reconciling.
func (ts *tenantSet) start() {
	ts.reconcile()
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		t := time.NewTicker(reconcileEvery)
		defer t.Stop()
		for {
			select {
			case <-ts.stop:
				return
			case <-ts.kick:
			case <-t.C:
			}
			ts.reconcile()
		}
	}()
}

// close stops every tenant's door and replica (their data stays).
func (ts *tenantSet) close() {
	close(ts.stop)
	ts.wg.Wait()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for name, t := range ts.running {
		t.shutdown()
		delete(ts.running, name)
	}
	for name, f := range ts.forwarded {
		f.close()
		delete(ts.forwarded, name)
	}
}

// forwardedTenant is a tenant this node serves by forwarding its clients.
type forwardedTenant struct {
	spec          sm.Tenant
	plain, secure *forwarder
}

func (f *forwardedTenant) close() {
	for _, fw := range []*forwarder{f.plain, f.secure} {
		if fw != nil {
			fw.close()
		}
	}
}

// forwardLocked opens (or, on new ports or placement, reopens) the
// forwarders of a tenant this node does not host.
func (ts *tenantSet) forwardLocked(spec sm.Tenant) {
	if f, ok := ts.forwarded[spec.Name]; ok {
		if f.spec.Port == spec.Port && f.spec.SecurePort == spec.SecurePort && slices.Equal(f.spec.Replicas, spec.Replicas) {
			return
		}
		f.close()
		delete(ts.forwarded, spec.Name)
	}
	host, _, err := net.SplitHostPort(ts.s.zk.Addr())
	if err != nil {
		return
	}
	f := &forwardedTenant{spec: spec}
	log := ts.log.With().Str("tenant", spec.Name).Logger()
	for _, p := range []struct {
		port int
		to   **forwarder
	}{{spec.Port, &f.plain}, {spec.SecurePort, &f.secure}} {
		if p.port == 0 {
			continue
		}
		port := p.port
		targets := func() []string {
			dir := ts.s.node.Membership().Directory
			var out []string
			for _, id := range spec.Replicas {
				if a := hostPort(dir[id].ClientAddr, port); a != "" {
					out = append(out, a)
				}
			}
			return out
		}
		fw, err := listenForwarder(net.JoinHostPort(host, strconv.Itoa(port)), targets, log)
		if err != nil {
			log.Error().Err(err).Int("port", port).Msg("open the tenant's forwarding port (will retry)")
			f.close()
			return
		}
		*p.to = fw
	}
	ts.forwarded[spec.Name] = f
	log.Info().Int("port", spec.Port).Int("secure_port", spec.SecurePort).Uints64("replicas", spec.Replicas).
		Msg("tenant served by forwarding to the nodes hosting it")
}

func (t *tenant) shutdown() {
	t.door.Close()
	if t.bridge != nil {
		t.bridge.Close()
	}
	t.node.Stop()
	t.door.Wait()
}

// reconcile starts what the registry places here and is not running, and
// stops (removing its data) what runs and the registry no longer has.
func (ts *tenantSet) reconcile() {
	// Removing a tenant's data is for good: only on a registry read after
	// this replica caught up with the leader. Before (a node starting,
	// replaying its log), a registry read may lack tenants it has.
	mayRemove := false
	if ts.s.node.Serving() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		mayRemove = ts.s.node.CatchUp(ctx) == nil
		cancel()
	}
	list, err := ts.s.node.Tenants()
	if err != nil {
		ts.log.Warn().Err(err).Msg("read the tenant registry")
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	want, elsewhere := map[string]sm.Tenant{}, map[string]sm.Tenant{}
	for _, spec := range list {
		if slices.Contains(spec.Replicas, ts.s.cfg.ReplicaID) {
			want[spec.Name] = spec
		} else {
			elsewhere[spec.Name] = spec
		}
	}
	for name, f := range ts.forwarded {
		if _, ok := elsewhere[name]; !ok {
			f.close()
			delete(ts.forwarded, name)
		}
	}
	for _, spec := range elsewhere {
		ts.forwardLocked(spec)
	}
	now := time.Now()
	for name, t := range ts.running {
		t.sample(now)
		spec, ok := want[name]
		if ok && spec.Shard == t.spec.Shard {
			if spec.Port != t.spec.Port || spec.SecurePort != t.spec.SecurePort {
				// New ports: the door and the replica restart (a door
				// subscribes to its node before the node starts).
				ts.log.Info().Str("tenant", name).Int("port", spec.Port).Int("secure_port", spec.SecurePort).
					Msg("tenant ports changed: restarting it on the new ones")
				t.shutdown()
				delete(ts.running, name)
				if err := ts.startLocked(spec); err != nil {
					ts.log.Error().Err(err).Str("tenant", name).Msg("restart tenant on its new ports (will retry)")
				}
				continue
			}
			t.spec = spec
			t.door.SetTenantLimits(limitsOf(spec))
			continue
		}
		if !mayRemove {
			continue // decided once this replica has caught up
		}
		ts.log.Info().Str("tenant", name).Uint64("shard", t.spec.Shard).Msg("tenant deleted: stopping its replica and removing its data")
		t.shutdown()
		delete(ts.running, name)
		if err := ts.s.node.RemoveTenantData(context.Background(), t.spec.Shard); err != nil {
			ts.log.Error().Err(err).Str("tenant", name).Msg("remove the deleted tenant's data")
		}
		ts.poke() // a tenant moved away is forwarded now that its port is free

	}
	for name, spec := range want {
		if _, ok := ts.running[name]; ok {
			continue
		}
		if err := ts.startLocked(spec); err != nil {
			ts.log.Error().Err(err).Str("tenant", name).Msg("start tenant (will retry)")
		}
	}
	if mayRemove {
		ts.removeOrphansLocked(list)
	}
	ts.spreadLeadersLocked()
}

// spreadLeadersLocked moves tenant leaderships from the node leading the
// most shards to the one leading the fewest, one transfer per pass, so
// that every node's disk and CPU take a share of the writes. Only the
// default tenant's leader decides (one decider, no tug of war), from what
// it knows of the shards it hosts.
func (ts *tenantSet) spreadLeadersLocked() {
	if !ts.s.node.IsLeader() || len(ts.running) == 0 {
		return
	}
	counts := map[uint64]int{}
	for id := range ts.s.node.Membership().Voters {
		counts[id] = 0
	}
	counts[ts.s.cfg.ReplicaID]++ // the default tenant's leader
	leaders := map[string]uint64{}
	for name, t := range ts.running {
		st := t.node.Raft()
		if !st.HasLeader {
			return // an election in progress: look again next pass
		}
		leaders[name] = st.LeaderID
		counts[st.LeaderID]++
	}
	names := make([]string, 0, len(leaders))
	for name := range leaders {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		from := leaders[name]
		t := ts.running[name]
		var to uint64
		for _, id := range t.spec.Replicas {
			// A replica still joining (a rebalance) cannot lead yet.
			if _, voter := counts[id]; voter && id != from && !slices.Contains(t.spec.Joining, id) && (to == 0 || counts[id] < counts[to]) {
				to = id
			}
		}
		if to == 0 || counts[from] <= counts[to]+1 {
			continue
		}
		ts.log.Info().Str("tenant", name).Uint64("from", from).Uint64("to", to).
			Int("leading_from", counts[from]).Int("leading_to", counts[to]).Msg("spreading leaders: transferring a tenant's leadership")
		if err := t.node.RequestLeaderTransfer(to); err != nil {
			ts.log.Warn().Err(err).Str("tenant", name).Msg("leader transfer")
		}
		return
	}
}

// startLocked starts a tenant's replica and opens its door.
func (ts *tenantSet) startLocked(spec sm.Tenant) error {
	members, err := ts.s.node.TenantMembers(spec)
	if err != nil {
		return err
	}
	n := ts.s.node.NewTenant(node.TenantSpec{Name: spec.Name, Shard: spec.Shard, Members: members,
		Join: slices.Contains(spec.Joining, ts.s.cfg.ReplicaID)})
	t := &tenant{spec: spec, node: n}
	cfg, err := ts.doorConfig(spec)
	if err != nil {
		return err
	}
	// The door subscribes to the node before it starts (zk.New).
	t.door = zk.New(cfg, n, n.Logger())
	if ts.s.native != nil {
		t.bridge = native.New(cfg, n, n.Logger())
	}
	if err := t.door.Listen(); err != nil {
		return err
	}
	if err := n.Start(node.Addresses{Client: t.door.Addr()}); err != nil {
		t.door.Close()
		return err
	}
	t.door.SetTenantLimits(limitsOf(spec))
	t.door.Serve()
	ts.running[spec.Name] = t
	ts.log.Info().Str("tenant", spec.Name).Uint64("shard", spec.Shard).Str("client_addr", t.door.Addr()).
		Uints64("replicas", spec.Replicas).Msg("tenant serving")
	return nil
}

// doorConfig is the node's configuration with the tenant's client ports,
// on the host the node's own client port is bound to.
func (ts *tenantSet) doorConfig(spec sm.Tenant) (Config, error) {
	cfg := ts.s.cfg
	host, _, err := net.SplitHostPort(ts.s.zk.Addr())
	if err != nil {
		return cfg, fmt.Errorf("tenant %s: client address: %w", spec.Name, err)
	}
	cfg.DataDir = node.TenantDir(ts.s.cfg.DataDir, spec.Shard)
	// A tenant without a plain port still needs the door's main listener:
	// an ephemeral port, which the registry does not advertise.
	cfg.ClientAddr = net.JoinHostPort(host, strconv.Itoa(spec.Port))
	cfg.TLS.SecureClientAddr = ""
	if spec.SecurePort != 0 {
		if !cfg.TLS.Client.Enabled() {
			return cfg, fmt.Errorf("tenant %s has a secure port, but this node has no client TLS configured (ssl.keyStore.*)", spec.Name)
		}
		cfg.TLS.SecureClientAddr = net.JoinHostPort(host, strconv.Itoa(spec.SecurePort))
	}
	if spec.Port == 0 && spec.SecurePort != 0 {
		// Only a secure port: the unadvertised main listener is TLS too.
		cfg.TLS.ClientPortTLS = true
	}
	return cfg, nil
}

// removeOrphansLocked removes tenant state directories of shards neither
// running here nor placed here by the registry: a tenant deleted (or moved
// away) while this node was down. Only once the node serves, so that the
// registry it reads is current.
func (ts *tenantSet) removeOrphansLocked(list []sm.Tenant) {
	if !ts.s.node.Serving() {
		return
	}
	keep := map[uint64]bool{}
	for _, t := range list {
		if slices.Contains(t.Replicas, ts.s.cfg.ReplicaID) {
			keep[t.Shard] = true
		}
	}
	dir := filepath.Join(ts.s.cfg.DataDir, "tenants")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // none yet
	}
	for _, e := range entries {
		shard, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || keep[shard] {
			continue
		}
		ts.log.Info().Uint64("shard", shard).Msg("removing the data of a tenant this node no longer hosts")
		if err := ts.s.node.RemoveTenantData(context.Background(), shard); err != nil {
			ts.log.Error().Err(err).Uint64("shard", shard).Msg("remove an old tenant's data")
		}
	}
}

// get returns a running tenant.
func (ts *tenantSet) get(name string) *tenant {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.running[name]
}

// TenantInfo is one tenant as `tenant list` shows it: the registry entry
// and, where this node hosts it, its live figures.
type TenantInfo struct {
	Name         string   `json:"name"`
	Shard        uint64   `json:"shard"`
	Port         int      `json:"port,omitempty"`
	SecurePort   int      `json:"secure_port,omitempty"`
	Replicas     []uint64 `json:"replicas"`
	Identities   []string `json:"identities,omitempty"`
	MaxZnodes    int64    `json:"max_znodes,omitempty"`
	MaxBytes     int64    `json:"max_bytes,omitempty"`
	MaxSessions  int64    `json:"max_sessions,omitempty"`
	MaxOpsPerSec int64    `json:"max_ops_per_sec,omitempty"`
	// Joining and Leaving: a replica move in progress (tenant rebalance).
	Joining []uint64 `json:"joining,omitempty"`
	Leaving []uint64 `json:"leaving,omitempty"`
	// Live figures of this node's replica (absent when it hosts none).
	Hosted      bool    `json:"hosted"`
	Leader      uint64  `json:"leader,omitempty"`
	Znodes      int64   `json:"znodes,omitempty"`
	Sessions    int     `json:"sessions,omitempty"`
	Connections int     `json:"connections,omitempty"`
	OpsPerSec   float64 `json:"ops_per_sec,omitempty"`
	ClientAddr  string  `json:"client_addr,omitempty"`
}

// TenantRequest is a create or update of a tenant.
type TenantRequest struct {
	Name         string   `json:"name"`
	Port         int      `json:"port,omitempty"`
	SecurePort   int      `json:"secure_port,omitempty"`
	Replicas     int      `json:"replicas,omitempty"`
	Identities   []string `json:"identities,omitempty"`
	MaxZnodes    int64    `json:"max_znodes,omitempty"`
	MaxBytes     int64    `json:"max_bytes,omitempty"`
	MaxSessions  int64    `json:"max_sessions,omitempty"`
	MaxOpsPerSec int64    `json:"max_ops_per_sec,omitempty"`
}

// ErrTenantBusy: delete of a tenant with open sessions, without force.
var ErrTenantBusy = errors.New("the tenant has open sessions (use --force to delete it anyway)")

func (s *Server) tenantInfo(t sm.Tenant) TenantInfo {
	info := TenantInfo{Name: t.Name, Shard: t.Shard, Port: t.Port, SecurePort: t.SecurePort, Replicas: t.Replicas,
		Identities: t.Identities, MaxZnodes: t.MaxZnodes, MaxBytes: t.MaxBytes, MaxSessions: t.MaxSessions, MaxOpsPerSec: t.MaxOpsPerSec,
		Joining: t.Joining, Leaving: t.Leaving}
	if info.Replicas == nil {
		info.Replicas = []uint64{}
	}
	if run := s.tenants.get(t.Name); run != nil {
		info.Hosted = true
		st := run.node.Raft()
		info.Leader = st.LeaderID
		info.Znodes = run.node.TreeStats().Nodes
		info.Sessions = run.node.SessionCount()
		info.Connections = run.door.Connections()
		info.OpsPerSec = run.rate()
		info.ClientAddr = run.door.Addr()
	}
	return info
}

// Tenants lists every tenant: the registry, with this node's figures.
func (s *Server) Tenants() ([]TenantInfo, error) {
	list, err := s.node.Tenants()
	if err != nil {
		return nil, err
	}
	out := make([]TenantInfo, 0, len(list))
	for _, t := range list {
		out = append(out, s.tenantInfo(t))
	}
	return out, nil
}

// CreateTenant registers a tenant; every node it is placed on starts
// serving it as soon as it applies the entry.
func (s *Server) CreateTenant(ctx context.Context, req TenantRequest) (TenantInfo, error) {
	t, err := s.node.PutTenant(ctx, true, req.tenant(), req.Replicas)
	if err != nil {
		return TenantInfo{}, err
	}
	s.tenants.poke()
	s.tenants.awaitServed(ctx, t.Name)
	return s.tenantInfo(t), nil
}

// UpdateTenant changes a tenant's ports, identities and limits (its shard
// and placement stay).
func (s *Server) UpdateTenant(ctx context.Context, req TenantRequest) (TenantInfo, error) {
	t, err := s.node.PutTenant(ctx, false, req.tenant(), 0)
	if err != nil {
		return TenantInfo{}, err
	}
	s.tenants.poke()
	s.tenants.awaitServed(ctx, t.Name)
	return s.tenantInfo(t), nil
}

// DeleteTenant removes a tenant; with open sessions only when force. Every
// node hosting it stops it and removes its data.
func (s *Server) DeleteTenant(ctx context.Context, name string, force bool) error {
	if !force {
		t, err := s.node.LookupTenant(name)
		if err != nil {
			return err
		}
		run := s.tenants.get(t.Name)
		if run == nil {
			return fmt.Errorf("tenant %s: this node does not host it, so it cannot count its sessions: ask a node hosting it (replicas %v), or use --force", name, t.Replicas)
		}
		if n := run.node.SessionCount(); n > 0 {
			return fmt.Errorf("tenant %s: %d sessions: %w", name, n, ErrTenantBusy)
		}
	}
	if err := s.node.DeleteTenant(ctx, name); err != nil {
		return err
	}
	s.tenants.poke()
	return nil
}

func (r TenantRequest) tenant() sm.Tenant {
	return sm.Tenant{Name: r.Name, Port: r.Port, SecurePort: r.SecurePort, Identities: r.Identities,
		MaxZnodes: r.MaxZnodes, MaxBytes: r.MaxBytes, MaxSessions: r.MaxSessions, MaxOpsPerSec: r.MaxOpsPerSec}
}

// Tenant returns the replica of a tenant this node runs (nil if none), for
// tests and tools that work through a tenant's node.
func (s *Server) Tenant(name string) *node.Node {
	if t := s.tenants.get(name); t != nil {
		return t.node
	}
	return nil
}

// TenantAddr is the client address of a tenant's door on this node, or
// of its forwarder where this node does not host it ("" if it serves
// neither).
func (s *Server) TenantAddr(name string) string {
	if t := s.tenants.get(name); t != nil {
		return t.door.Addr()
	}
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	if f := s.tenants.forwarded[name]; f != nil && f.plain != nil {
		return f.plain.Addr()
	}
	return ""
}

// tenantAdmin adapts the server's tenant operations to the admin door.
type tenantAdmin struct{ s *Server }

func (a tenantAdmin) ListTenants() (any, error) { return a.s.Tenants() }

func (a tenantAdmin) PutTenant(ctx context.Context, create bool, f admin.TenantForm) (any, error) {
	req := TenantRequest{Name: f.Name, Port: f.Port, SecurePort: f.SecurePort, Replicas: f.Replicas, Identities: f.Identities,
		MaxZnodes: f.MaxZnodes, MaxBytes: f.MaxBytes, MaxSessions: f.MaxSessions, MaxOpsPerSec: f.MaxOpsPerSec}
	if create {
		return a.s.CreateTenant(ctx, req)
	}
	// An update changes the fields given and keeps the others.
	old, err := a.s.node.LookupTenant(f.Name)
	if err != nil {
		return nil, err
	}
	keep := func(field string, cur *int64, was int64) {
		if !f.Given[field] {
			*cur = was
		}
	}
	keep("max_znodes", &req.MaxZnodes, old.MaxZnodes)
	keep("max_bytes", &req.MaxBytes, old.MaxBytes)
	keep("max_sessions", &req.MaxSessions, old.MaxSessions)
	keep("max_ops_per_sec", &req.MaxOpsPerSec, old.MaxOpsPerSec)
	if !f.Given["port"] {
		req.Port = old.Port
	}
	if !f.Given["secure_port"] {
		req.SecurePort = old.SecurePort
	}
	if !f.Given["identity"] {
		req.Identities = old.Identities
	}
	return a.s.UpdateTenant(ctx, req)
}

func (a tenantAdmin) RemoveTenant(ctx context.Context, name string, force bool) error {
	return a.s.DeleteTenant(ctx, name, force)
}

func (tenantAdmin) TenantStatus(err error) int { return TenantHTTPStatus(err) }

// ConsoleTenants is the registry with this node's figures, for the web
// console's Tenants page.
func (a tenantAdmin) ConsoleTenants() ([]console.TenantRow, error) {
	list, err := a.s.Tenants()
	if err != nil {
		return nil, err
	}
	rows := make([]console.TenantRow, len(list))
	for i, t := range list {
		rows[i] = console.TenantRow{Name: t.Name, Shard: t.Shard, Port: t.Port, SecurePort: t.SecurePort, Replicas: t.Replicas,
			Joining: t.Joining, Leaving: t.Leaving, Hosted: t.Hosted, Leader: t.Leader, Znodes: t.Znodes, Sessions: t.Sessions,
			Connections: t.Connections, OpsPerSec: t.OpsPerSec, MaxZnodes: t.MaxZnodes, MaxBytes: t.MaxBytes,
			MaxSessions: t.MaxSessions, MaxOpsPerSec: t.MaxOpsPerSec}
	}
	return rows, nil
}

// ConsoleTenant is this node's replica and door of a tenant, for the
// console's per-tenant pages.
func (a tenantAdmin) ConsoleTenant(name string) (*node.Node, console.Doors) {
	if t := a.s.tenants.get(name); t != nil {
		return t.node, t.door
	}
	return nil, nil
}

func (a tenantAdmin) ShardNode(shard uint64) *node.Node {
	a.s.tenants.mu.Lock()
	defer a.s.tenants.mu.Unlock()
	for _, t := range a.s.tenants.running {
		if t.spec.Shard == shard {
			return t.node
		}
	}
	return nil
}

func (a tenantAdmin) MoveReplica(ctx context.Context, tenant string, from, to uint64, emit func(any)) error {
	tn := a.s.Tenant(tenant)
	if tn == nil {
		return fmt.Errorf("tenant %s: %w", tenant, ErrNotHosted)
	}
	return a.s.moveLocal(ctx, tn, RebalanceMove{Tenant: tenant, From: from, To: to}, func(e RebalanceEvent) { emit(e) })
}

func (a tenantAdmin) Rebalance(ctx context.Context, dryRun bool, emit func(any)) error {
	_, err := a.s.RebalanceTenants(ctx, dryRun, func(e RebalanceEvent) { emit(e) })
	return err
}

// TenantHTTPStatus is the HTTP status of a tenant operation's error.
func TenantHTTPStatus(err error) int {
	switch {
	case errors.Is(err, node.ErrNoTenant):
		return http.StatusNotFound
	case errors.Is(err, node.ErrTenantExists), errors.Is(err, ErrTenantBusy):
		return http.StatusConflict
	case errors.Is(err, node.ErrTenantConflict), admin.IsBadForm(err):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// nativeDoor is the native API's router: the door of a tenant this node
// serves.
func (ts *tenantSet) nativeDoor(name string) (*native.Server, error) {
	if t := ts.get(name); t != nil && t.bridge != nil {
		return t.bridge, nil
	}
	spec, err := ts.s.node.LookupTenant(name)
	if err != nil {
		return nil, native.UnknownTenant(name)
	}
	return nil, status.Errorf(codes.Unavailable, "tenant %q is not served by this node yet (its replicas: %v); retry, or ask one of them", name, spec.Replicas)
}

// tenantNative adapts the server's tenant operations to the native API.
type tenantNative struct{ s *Server }

func nativeTenantErr(err error) error {
	if err == nil {
		return nil
	}
	c := codes.Unavailable
	switch TenantHTTPStatus(err) {
	case http.StatusNotFound:
		c = codes.NotFound
	case http.StatusBadRequest:
		c = codes.InvalidArgument
	case http.StatusConflict:
		c = codes.AlreadyExists
		if errors.Is(err, ErrTenantBusy) {
			c = codes.FailedPrecondition
		}
	}
	return status.Error(c, err.Error())
}

func tenantProto(t TenantInfo) *zkbridgev1.TenantInfo {
	return &zkbridgev1.TenantInfo{Name: t.Name, Shard: t.Shard, Port: int32(t.Port), SecurePort: int32(t.SecurePort),
		Replicas: t.Replicas, Identities: t.Identities, MaxZnodes: t.MaxZnodes, MaxBytes: t.MaxBytes,
		MaxSessions: t.MaxSessions, MaxOpsPerSec: t.MaxOpsPerSec, Hosted: t.Hosted, Leader: t.Leader,
		Znodes: t.Znodes, Sessions: int64(t.Sessions), OpsPerSec: t.OpsPerSec}
}

// settingsForm turns TenantSettings into the admin form with what it gives.
func settingsForm(r *zkbridgev1.TenantSettings) admin.TenantForm {
	f := admin.TenantForm{Name: r.Name, Replicas: int(r.Replicas), Given: map[string]bool{}}
	if r.Port != nil {
		f.Port, f.Given["port"] = int(*r.Port), true
	}
	if r.SecurePort != nil {
		f.SecurePort, f.Given["secure_port"] = int(*r.SecurePort), true
	}
	if r.UpdateIdentities || len(r.Identities) > 0 {
		f.Identities, f.Given["identity"] = r.Identities, true
	}
	for _, x := range []struct {
		field string
		from  *int64
		to    *int64
	}{{"max_znodes", r.MaxZnodes, &f.MaxZnodes}, {"max_bytes", r.MaxBytes, &f.MaxBytes},
		{"max_sessions", r.MaxSessions, &f.MaxSessions}, {"max_ops_per_sec", r.MaxOpsPerSec, &f.MaxOpsPerSec}} {
		if x.from != nil {
			*x.to, f.Given[x.field] = *x.from, true
		}
	}
	return f
}

func (a tenantNative) put(ctx context.Context, create bool, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error) {
	v, err := tenantAdmin(a).PutTenant(ctx, create, settingsForm(r))
	if err != nil {
		return nil, nativeTenantErr(err)
	}
	return tenantProto(v.(TenantInfo)), nil
}

func (a tenantNative) CreateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error) {
	return a.put(ctx, true, r)
}

func (a tenantNative) UpdateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error) {
	return a.put(ctx, false, r)
}

func (a tenantNative) ListTenants(context.Context) ([]*zkbridgev1.TenantInfo, error) {
	list, err := a.s.Tenants()
	if err != nil {
		return nil, nativeTenantErr(err)
	}
	out := make([]*zkbridgev1.TenantInfo, len(list))
	for i, t := range list {
		out[i] = tenantProto(t)
	}
	return out, nil
}

func (a tenantNative) DeleteTenant(ctx context.Context, name string, force bool) error {
	return nativeTenantErr(a.s.DeleteTenant(ctx, name, force))
}

func (a tenantNative) RebalanceTenants(ctx context.Context, dryRun bool, send func(*zkbridgev1.RebalanceEvent) error) error {
	var sendErr error
	_, err := a.s.RebalanceTenants(ctx, dryRun, func(e RebalanceEvent) {
		if sendErr == nil {
			sendErr = send(rebalanceProto(e))
		}
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.Unavailable, err.Error())
		}
	}
	return err
}

func rebalanceProto(e RebalanceEvent) *zkbridgev1.RebalanceEvent {
	out := &zkbridgev1.RebalanceEvent{Step: e.Step, Tenant: e.Tenant, From: e.From, To: e.To, Applied: e.Applied,
		Target: e.Target, Message: e.Message, Error: e.Error}
	for _, mv := range e.Plan {
		out.Plan = append(out.Plan, &zkbridgev1.RebalanceMove{Tenant: mv.Tenant, From: mv.From, To: mv.To})
	}
	if r := e.Summary; r != nil {
		counts := func(m map[uint64]int) map[uint64]int32 {
			c := make(map[uint64]int32, len(m))
			for k, v := range m {
				c[k] = int32(v)
			}
			return c
		}
		out.Summary = &zkbridgev1.RebalanceSummary{DryRun: r.DryRun, Resumed: int32(r.Resumed), Planned: int32(r.Planned),
			Moved: int32(r.Moved), Failed: int32(r.Failed), LeaderTransfers: int32(r.LeaderTransfers),
			Replicas: counts(r.Replicas), Leaders: counts(r.Leaders), Seconds: r.Seconds}
	}
	return out
}

func limitsOf(t sm.Tenant) zk.TenantLimits {
	return zk.TenantLimits{MaxZnodes: t.MaxZnodes, MaxBytes: t.MaxBytes, MaxSessions: t.MaxSessions, MaxOpsPerSec: t.MaxOpsPerSec}
}

func (a tenantAdmin) TenantGauges(emit func(tenant, name, help string, v float64)) {
	a.s.zk.Gauges(func(name, help string, v float64) { emit(sm.DefaultTenant, name, help, v) })
	a.s.tenants.mu.Lock()
	running := make([]*tenant, 0, len(a.s.tenants.running))
	for _, t := range a.s.tenants.running {
		running = append(running, t)
	}
	a.s.tenants.mu.Unlock()
	for _, t := range running {
		name := t.spec.Name
		t.door.Gauges(func(metric, help string, v float64) { emit(name, metric, help, v) })
		c := t.door.LimitCounts()
		emit(name, "quota_exceeded_total", "writes refused with QuotaExceeded by the tenant's znode or byte limit", float64(c.QuotaExceeded))
		emit(name, "sessions_refused_total", "connections refused at the tenant's session limit", float64(c.SessionsRefused))
		emit(name, "throttled_total", "requests held back by the tenant's request rate limit", float64(c.Throttled))
		emit(name, "ops_per_sec", "the tenant's requests per second on this node (sampled every 2 s)", t.rate())
	}
}

// servedWait bounds how long a create or update waits for the node asked
// to serve the tenant, so that a client told "created" can connect to it.
const servedWait = 10 * time.Second

// awaitServed waits (bounded) until this node serves the tenant: its
// replica has a leader, or its forwarder is open.
func (ts *tenantSet) awaitServed(ctx context.Context, name string) {
	deadline := time.Now().Add(servedWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if t := ts.get(name); t != nil && t.node.Serving() {
			return
		}
		ts.mu.Lock()
		_, fwd := ts.forwarded[name]
		ts.mu.Unlock()
		if fwd {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
