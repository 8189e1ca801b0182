package sm

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Tenant is one entry of the tenant registry, which the default tenant's
// shard (shard 1) holds: an independent ZooKeeper namespace served by its
// own Raft shard. The registry is replicated like any other state, so every
// node learns of a tenant (and opens its listeners, starts its replica) when
// it applies the entry that created it.
type Tenant struct {
	Name  string
	Shard uint64 // its Raft shard, allocated in apply (never reused)
	// Port and SecurePort are the client ports the tenant is served on, on
	// every node (0: none).
	Port, SecurePort int
	// Replicas are the nodes (replica ids) hosting the shard, chosen by the
	// proposer and recorded here so that every node agrees.
	Replicas []uint64
	// Limits; 0 means unlimited.
	MaxZnodes, MaxBytes, MaxSessions, MaxOpsPerSec int64
	// Identities are the TLS server names (SNI) and client certificate
	// subjects that select this tenant on a shared secure port.
	Identities []string
	// A replica move in progress (tenant rebalance), recorded before
	// dragonboat's membership changes so that the registry always lists
	// every member: Joining are replicas (also in Replicas) added to the
	// running shard as non-voting members, started by joining rather than
	// bootstrapping, until promoted; Leaving are replicas (also in
	// Replicas) the same move removes once the new one has caught up.
	Joining, Leaving []uint64

	// PlacementOnly and ExpectReplicas are never stored: an update with
	// PlacementOnly changes the placement alone (Replicas, Joining,
	// Leaving; the other settings stay), and only while the stored
	// Replicas still equal ExpectReplicas (else BadVersion), so that two
	// rebalances, or a rebalance and a settings update, never undo each
	// other.
	PlacementOnly  bool
	ExpectReplicas []uint64
}

// DefaultTenant is the name of shard 1's namespace, which every existing
// deployment uses.
const DefaultTenant = "default"

// FirstTenantShard is the shard the first created tenant gets.
const FirstTenantShard uint64 = 2

var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidTenantName reports whether name may name a tenant: 1-63 of a-z, 0-9,
// '-' and '_', starting with a letter or digit; "default" is taken.
func ValidTenantName(name string) error {
	if name == DefaultTenant {
		return fmt.Errorf("tenant name %q is the default tenant's", name)
	}
	if !tenantName.MatchString(name) {
		return fmt.Errorf("tenant name %q: use 1-63 of a-z, 0-9, '-' and '_', starting with a letter or digit", name)
	}
	return nil
}

// PutTenant creates a tenant (Create: the name must be new, and its shard is
// allocated in apply) or replaces an existing one's settings (its Shard is
// kept). A port or identity another tenant has is refused with
// BadArguments, an existing name on create with NodeExists, a missing one on
// update with NoNode. Like RegisterReplica it is no ZooKeeper transaction of
// the default tenant and consumes no zxid.
type PutTenant struct {
	Create bool
	Tenant Tenant
}

// DeleteTenant removes a tenant from the registry; every node then stops
// its listeners and its replica and removes the shard's data. NoNode if it
// does not exist. It consumes no zxid.
type DeleteTenant struct {
	Name string
}

var keyTenantNext = []byte("mtenantnext")

func tenantKey(name string) []byte { return append([]byte{spaceTenant}, name...) }

func encodeTenant(e *enc, t *Tenant) {
	e.str(t.Name)
	e.uvar(t.Shard)
	e.uvar(uint64(t.Port))
	e.uvar(uint64(t.SecurePort))
	e.uvar(uint64(len(t.Replicas)))
	for _, id := range t.Replicas {
		e.uvar(id)
	}
	e.svar(t.MaxZnodes)
	e.svar(t.MaxBytes)
	e.svar(t.MaxSessions)
	e.svar(t.MaxOpsPerSec)
	e.uvar(uint64(len(t.Identities)))
	for _, s := range t.Identities {
		e.str(s)
	}
	// The placement extension; entries written before it end above.
	for _, ids := range [][]uint64{t.Joining, t.Leaving} {
		encodeIDList(e, ids)
	}
	e.boolean(t.PlacementOnly)
	encodeIDList(e, t.ExpectReplicas)
}

func encodeIDList(e *enc, ids []uint64) {
	e.uvar(uint64(len(ids)))
	for _, id := range ids {
		e.uvar(id)
	}
}

func decodeIDList(d *dec) []uint64 {
	var out []uint64
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.uvar())
	}
	return out
}

func decodeTenant(d *dec) Tenant {
	t := Tenant{Name: d.str(), Shard: d.uvar(), Port: int(d.uvar()), SecurePort: int(d.uvar())}
	t.Replicas = decodeIDList(d)
	t.MaxZnodes, t.MaxBytes, t.MaxSessions, t.MaxOpsPerSec = d.svar(), d.svar(), d.svar(), d.svar()
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		t.Identities = append(t.Identities, d.str())
	}
	if d.err == nil && len(d.b) > 0 { // the placement extension (a tenant is always last)
		t.Joining, t.Leaving = decodeIDList(d), decodeIDList(d)
		t.PlacementOnly = d.boolean()
		t.ExpectReplicas = decodeIDList(d)
	}
	return t
}

// Tenants returns the registry in name order.
func (v *View) Tenants() ([]Tenant, error) { return scanTenants(v.snap) }

func scanTenants(r pebble.Reader) ([]Tenant, error) {
	var out []Tenant
	err := scanKV(r, []byte{spaceTenant}, []byte{spaceTenant + 1}, func(k, val []byte) error {
		d := &dec{b: val}
		t := decodeTenant(d)
		if err := d.done(); err != nil {
			return fmt.Errorf("tenant %q entry: %w", k[1:], err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// tenants reads the registry inside apply, earlier entries of the batch
// included (an op checks before it writes, so this entry has written
// nothing yet).
func (a *applier) tenants() ([]Tenant, error) {
	if err := a.t.flush(); err != nil { // the scan reads the batch
		return nil, err
	}
	return scanTenants(a.t.r)
}

// noZxid makes an entry consume no zxid (see setSessionOwner).
func (a *applier) noZxid(res *Result) {
	a.zxidBase--
	a.zxid--
	res.Zxid = a.zxid
	a.t.set(keyZxidBase, encodeInt(a.zxidBase))
}

func (a *applier) putTenant(o *PutTenant, res *Result) error {
	a.noZxid(res)
	t := o.Tenant
	if ValidTenantName(t.Name) != nil || t.Port < 0 || t.Port > 65535 || t.SecurePort < 0 || t.SecurePort > 65535 {
		res.Err = zkproto.ErrBadArguments
		return nil
	}
	list, err := a.tenants()
	if err != nil {
		return err
	}
	var old *Tenant
	for i := range list {
		other := &list[i]
		if other.Name == t.Name {
			old = other
			continue
		}
		clash := (t.Port != 0 && (t.Port == other.Port || t.Port == other.SecurePort)) ||
			(t.SecurePort != 0 && (t.SecurePort == other.Port || t.SecurePort == other.SecurePort))
		for _, id := range t.Identities {
			clash = clash || slices.Contains(other.Identities, id)
		}
		if clash {
			res.Err = zkproto.ErrBadArguments
			return nil
		}
	}
	switch {
	case o.Create && old != nil:
		res.Err = zkproto.ErrNodeExists
		return nil
	case !o.Create && old == nil:
		res.Err = zkproto.ErrNoNode
		return nil
	case o.Create:
		next, err := a.t.get(keyTenantNext)
		if err != nil {
			return err
		}
		t.Shard = FirstTenantShard
		if next != nil {
			t.Shard = uint64(decodeInt(next))
		}
		a.t.set(keyTenantNext, encodeInt(int64(t.Shard+1)))
	case t.PlacementOnly:
		if !slices.Equal(old.Replicas, t.ExpectReplicas) {
			res.Err = zkproto.ErrBadVersion // moved by someone else meanwhile
			return nil
		}
		if len(t.Replicas) == 0 {
			res.Err = zkproto.ErrBadArguments
			return nil
		}
		placed := *old
		placed.Replicas, placed.Joining, placed.Leaving = t.Replicas, t.Joining, t.Leaving
		t = placed
	default:
		t.Shard = old.Shard
		if len(t.Replicas) == 0 { // a settings update keeps the placement
			t.Replicas, t.Joining, t.Leaving = old.Replicas, old.Joining, old.Leaving
		}
	}
	t.PlacementOnly, t.ExpectReplicas = false, nil
	e := &enc{}
	encodeTenant(e, &t)
	a.t.set(tenantKey(t.Name), e.b)
	res.TenantsChanged = true
	return nil
}

func (a *applier) deleteTenant(o *DeleteTenant, res *Result) error {
	a.noZxid(res)
	old, err := a.t.get(tenantKey(o.Name))
	if err != nil {
		return err
	}
	if old == nil {
		res.Err = zkproto.ErrNoNode
		return nil
	}
	a.t.del(tenantKey(o.Name))
	res.TenantsChanged = true
	return nil
}
