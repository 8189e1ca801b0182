package console

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/zkbridge/zkbridge/server/node"
)

// Tenants is what the console reads of the cluster's tenants (server's
// tenant set implements it); without it the console shows the default
// tenant alone.
type Tenants interface {
	// ConsoleTenants lists the registry with this node's live figures.
	ConsoleTenants() ([]TenantRow, error)
	// ConsoleTenant is this node's replica and door of a tenant (nil, nil
	// when this node does not host it).
	ConsoleTenant(name string) (*node.Node, Doors)
}

// TenantRow is one tenant on the Tenants page: the registry entry and,
// where this node hosts the tenant, its live figures.
type TenantRow struct {
	Name             string
	Shard            uint64
	Port, SecurePort int
	Replicas         []uint64
	Joining, Leaving []uint64
	// Live figures of this node's replica (Hosted).
	Hosted      bool
	Leader      uint64
	Znodes      int64
	Sessions    int
	Connections int
	OpsPerSec   float64
	// Limits; 0: none.
	MaxZnodes, MaxBytes, MaxSessions, MaxOpsPerSec int64
}

// scope is the tenant a page reads: its name, this node's replica of it
// and its door; replicas limits which nodes a page asks (nil: every node).
type scope struct {
	Tenant   string
	Node     *node.Node
	Doors    Doors
	Replicas []uint64
}

// elsewhereError: the tenant asked for is not hosted by this node.
type elsewhereError struct {
	tenant string
	admins []string // the hosting nodes' admin addresses
}

func (e elsewhereError) Error() string {
	return fmt.Sprintf("this node does not host tenant %s: open the console of a node that does (%v)", e.tenant, e.admins)
}

// scopeOf resolves ?tenant= (absent or "default": the default tenant).
func (c *Console) scopeOf(r *http.Request) (scope, error) {
	name := r.FormValue("tenant")
	if name == "" || name == DefaultTenant || c.opt.Tenants == nil {
		return scope{Tenant: DefaultTenant, Node: c.opt.Node, Doors: c.opt.Doors}, nil
	}
	rows, err := c.opt.Tenants.ConsoleTenants()
	if err != nil {
		return scope{}, err
	}
	for _, t := range rows {
		if t.Name != name {
			continue
		}
		n, doors := c.opt.Tenants.ConsoleTenant(name)
		if n == nil || doors == nil {
			dir := c.opt.Node.Membership().Directory
			e := elsewhereError{tenant: name}
			for _, id := range t.Replicas {
				if a := dir[id].AdminAddr; a != "" {
					e.admins = append(e.admins, a)
				}
			}
			return scope{}, e
		}
		return scope{Tenant: name, Node: n, Doors: doors, Replicas: t.Replicas}, nil
	}
	return scope{}, fmt.Errorf("no tenant %q (see the Tenants page)", name)
}

// scopeOr404 is scopeOf answering the error itself.
func (c *Console) scopeOr404(w http.ResponseWriter, r *http.Request) (scope, bool) {
	sc, err := c.scopeOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return sc, false
	}
	return sc, true
}

// tenantQuery is the query suffix that keeps a link in the tenant.
func tenantQuery(tenant string) string {
	if tenant == "" || tenant == DefaultTenant {
		return ""
	}
	return "&tenant=" + url.QueryEscape(tenant)
}

// tenantsPage lists every tenant: shard, ports, leader, placement, znodes,
// sessions, ops/s and limits, each linked to its tree, sessions and
// figures.
func (c *Console) tenantsPage(w http.ResponseWriter, r *http.Request) {
	var rows []TenantRow
	var errText string
	if c.opt.Tenants != nil {
		var err error
		if rows, err = c.opt.Tenants.ConsoleTenants(); err != nil {
			errText = err.Error()
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	self := c.opt.Node.ReplicaID()
	c.render(w, r, "tenants", "Tenants", map[string]any{"Rows": rows, "Error": errText, "Self": self})
}

// tenantPage is one tenant's figures on this node: its replica's Raft
// progress and every mntr value of its door.
func (c *Console) tenantPage(w http.ResponseWriter, r *http.Request) {
	sc, err := c.scopeOf(r)
	if err != nil {
		c.render(w, r, "tenant", "Tenant", map[string]any{"Error": err.Error()})
		return
	}
	type gauge struct {
		Name  string
		Value float64
	}
	var gauges []gauge
	sc.Doors.Gauges(func(name, _ string, v float64) { gauges = append(gauges, gauge{name, v}) })
	sort.Slice(gauges, func(i, j int) bool { return gauges[i].Name < gauges[j].Name })
	c.renderIn(w, r, sc.Tenant, "tenant", "Tenant "+sc.Tenant,
		map[string]any{"Progress": sc.Node.LocalProgress(), "Gauges": gauges, "Shard": sc.Node.Shard(), "Replicas": sc.Replicas})
}

// defaultScope is the default tenant on this node.
func (c *Console) defaultScope() scope {
	return scope{Tenant: DefaultTenant, Node: c.opt.Node, Doors: c.opt.Doors}
}
