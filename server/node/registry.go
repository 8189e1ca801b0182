package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// The tenant registry lives in the default tenant's shard (sm/tenants.go);
// these are its operations, on the default tenant's Node.

var (
	// ErrTenantExists: create of a name the registry has.
	ErrTenantExists = errors.New("a tenant of that name exists")
	// ErrNoTenant: the registry has no tenant of that name.
	ErrNoTenant = errors.New("no such tenant")
	// ErrTenantConflict: the ports or identities clash with another
	// tenant's, or the settings are invalid.
	ErrTenantConflict = errors.New("invalid tenant settings, or a port or TLS identity another tenant has")
	// ErrPlacementChanged: a placement update found the tenant's replicas
	// changed since they were read (another rebalance moved them).
	ErrPlacementChanged = errors.New("the tenant's placement changed meanwhile (another rebalance?)")
)

// Tenants returns the registry as the local replica has applied it.
func (n *Node) Tenants() ([]sm.Tenant, error) {
	if n.tenant != nil {
		return n.tenant.parent.Tenants()
	}
	if n.store == nil {
		return nil, errors.New("tenant registry: the node is not started")
	}
	v, err := n.store.View()
	if err != nil {
		return nil, fmt.Errorf("tenant registry: %w", err)
	}
	defer v.Close()
	return v.Tenants()
}

// LookupTenant returns the registry entry of name.
func (n *Node) LookupTenant(name string) (sm.Tenant, error) {
	list, err := n.Tenants()
	if err != nil {
		return sm.Tenant{}, err
	}
	for _, t := range list {
		if t.Name == name {
			return t, nil
		}
	}
	return sm.Tenant{}, fmt.Errorf("tenant %q: %w", name, ErrNoTenant)
}

// DefaultReplicas is how many nodes host a new tenant's shard: every
// voter of a cluster of up to five, else three.
func DefaultReplicas(voters int) int {
	if voters <= 5 {
		return voters
	}
	return 3
}

// PutTenant creates (create) or updates a tenant through the registry and
// returns the entry as applied. A new tenant without Replicas is placed on
// replicas of the voters (0: DefaultReplicas), the least loaded first.
func (n *Node) PutTenant(ctx context.Context, create bool, t sm.Tenant, replicas int) (sm.Tenant, error) {
	if n.tenant != nil {
		return n.tenant.parent.PutTenant(ctx, create, t, replicas)
	}
	if err := sm.ValidTenantName(t.Name); err != nil {
		return sm.Tenant{}, fmt.Errorf("%w: %w", ErrTenantConflict, err)
	}
	if create && len(t.Replicas) == 0 {
		placed, err := n.placeTenant(ctx, replicas)
		if err != nil {
			return sm.Tenant{}, err
		}
		t.Replicas = placed
	}
	res, err := n.raft.proposeSync(&sm.Command{Op: &sm.PutTenant{Create: create, Tenant: t}})
	if err != nil {
		return sm.Tenant{}, fmt.Errorf("tenant %s: %w", t.Name, err)
	}
	if err := tenantErr(t.Name, res.Err); err != nil {
		return sm.Tenant{}, err
	}
	return n.LookupTenant(t.Name)
}

// DeleteTenant removes a tenant from the registry; every node hosting it
// then stops its replica and removes its data.
func (n *Node) DeleteTenant(ctx context.Context, name string) error {
	if n.tenant != nil {
		return n.tenant.parent.DeleteTenant(ctx, name)
	}
	res, err := n.raft.proposeSync(&sm.Command{Op: &sm.DeleteTenant{Name: name}})
	if err != nil {
		return fmt.Errorf("tenant %s: %w", name, err)
	}
	return tenantErr(name, res.Err)
}

// SetTenantPlacement records a tenant's placement (replicas, and a move in
// progress: joining, leaving) if its replicas are still expect.
func (n *Node) SetTenantPlacement(ctx context.Context, name string, expect, replicas, joining, leaving []uint64) (sm.Tenant, error) {
	if n.tenant != nil {
		return n.tenant.parent.SetTenantPlacement(ctx, name, expect, replicas, joining, leaving)
	}
	t := sm.Tenant{Name: name, PlacementOnly: true, ExpectReplicas: expect, Replicas: replicas, Joining: joining, Leaving: leaving}
	res, err := n.raft.proposeSync(&sm.Command{Op: &sm.PutTenant{Tenant: t}})
	if err != nil {
		return sm.Tenant{}, fmt.Errorf("tenant %s placement: %w", name, err)
	}
	if res.Err == zkproto.ErrBadVersion {
		return sm.Tenant{}, fmt.Errorf("tenant %q: %w", name, ErrPlacementChanged)
	}
	if err := tenantErr(name, res.Err); err != nil {
		return sm.Tenant{}, err
	}
	return n.LookupTenant(name)
}

func tenantErr(name string, code zkproto.ErrCode) error {
	switch code {
	case zkproto.ErrOK:
		return nil
	case zkproto.ErrNodeExists:
		return fmt.Errorf("tenant %q: %w", name, ErrTenantExists)
	case zkproto.ErrNoNode:
		return fmt.Errorf("tenant %q: %w", name, ErrNoTenant)
	case zkproto.ErrBadArguments:
		return fmt.Errorf("tenant %q: %w", name, ErrTenantConflict)
	}
	return fmt.Errorf("tenant %q: %s", name, code)
}

// placeTenant picks count voters (0: DefaultReplicas) for a new shard: the
// ones hosting the fewest tenant shards first, then by replica id.
func (n *Node) placeTenant(ctx context.Context, count int) ([]uint64, error) {
	m, err := n.membership(ctx)
	if err != nil {
		return nil, fmt.Errorf("place tenant: %w", err)
	}
	voters := make([]uint64, 0, len(m.Nodes))
	for id := range m.Nodes {
		voters = append(voters, id)
	}
	if count == 0 {
		count = DefaultReplicas(len(voters))
	}
	if count < 1 || count > len(voters) {
		return nil, fmt.Errorf("%w: %d replicas asked, the cluster has %d voters", ErrTenantConflict, count, len(voters))
	}
	list, err := n.Tenants()
	if err != nil {
		return nil, err
	}
	load := map[uint64]int{}
	for _, t := range list {
		for _, id := range t.Replicas {
			load[id]++
		}
	}
	slices.SortFunc(voters, func(a, b uint64) int {
		if load[a] != load[b] {
			return cmp.Compare(load[a], load[b])
		}
		return cmp.Compare(a, b)
	})
	placed := slices.Clone(voters[:count])
	slices.Sort(placed)
	return placed, nil
}

// TenantMembers maps a tenant's replicas to their Raft addresses (the
// replica directory, else the default shard's membership).
func (n *Node) TenantMembers(t sm.Tenant) (map[uint64]string, error) {
	dir, err := n.directory()
	if err != nil {
		return nil, err
	}
	voters := n.Membership().Voters
	out := make(map[uint64]string, len(t.Replicas))
	for _, id := range t.Replicas {
		addr := dir[id].RaftAddr
		if addr == "" {
			addr = voters[id]
		}
		if addr == "" && id == n.cfg.ReplicaID {
			addr = n.cfg.PeerAddr
		}
		if addr == "" {
			addr = n.cfg.Peers[id]
		}
		if addr == "" {
			return nil, fmt.Errorf("tenant %s: no Raft address known for replica %d", t.Name, id)
		}
		out[id] = addr
	}
	return out, nil
}
