package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lni/dragonboat/v4"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/sm"
)

// A tenant's Node is the same object as the default one, over another
// shard of the same NodeHost: its own replica, state machine and Pebble
// directory, its own sessions (tracker, touches, expiry), reaper, leader
// watch and metrics. What is the cluster's rather than the shard's (the
// replica directory, static observers, the NodeHost itself) stays with the
// default tenant's Node, its parent.
type tenantShard struct {
	name    string
	shard   uint64
	parent  *Node
	members map[uint64]string // replica id → Raft address, the bootstrap membership
	join    bool              // added to the running shard: joins as a non-voting member
}

// TenantSpec is what NewTenant needs of a registry entry.
type TenantSpec struct {
	Name  string
	Shard uint64
	// Members are the hosting nodes' replica ids and Raft addresses (the
	// placement recorded in the registry).
	Members map[uint64]string
	// Join: this replica was added to the running shard by a rebalance
	// (the registry lists it as joining): it starts as a non-voting member
	// that waits to be contacted, not by bootstrapping Members.
	Join bool
}

// TenantDir is where a tenant's state lives under a node's data dir.
func TenantDir(dataDir string, shard uint64) string {
	return filepath.Join(dataDir, "tenants", strconv.FormatUint(shard, 10))
}

// NewTenant prepares this node's replica of a tenant's shard, on the
// NodeHost of n (the default tenant's node, already started). Subscribe a
// front door to it, then Start it.
func (n *Node) NewTenant(spec TenantSpec) *Node {
	cfg := n.cfg
	cfg.DataDir = TenantDir(n.cfg.DataDir, spec.Shard)
	cfg.DataLogDir = ""
	cfg.Peers = spec.Members
	cfg.Observers, cfg.Observer, cfg.Join = nil, false, false
	t := New(cfg, n.log.With().Str("tenant", spec.Name).Uint64("shard", spec.Shard).Logger())
	t.tenant = &tenantShard{name: spec.Name, shard: spec.Shard, parent: n, members: spec.Members, join: spec.Join}
	t.progress = n.progress
	return t
}

// Tenant names the tenant this node serves ("default" for shard 1).
func (n *Node) Tenant() string {
	if n.tenant == nil {
		return sm.DefaultTenant
	}
	return n.tenant.name
}

// Shard is the Raft shard of this node's tenant.
func (n *Node) Shard() uint64 {
	if n.tenant == nil {
		return dataShard
	}
	return n.tenant.shard
}

// startReplica starts the Raft replica: the default tenant's starts the
// NodeHost too; a tenant's starts its shard on the parent's NodeHost.
func (n *Node) startReplica(smCfg sm.Config, fsync func(time.Duration)) (*raftNode, *sm.StateMachine, error) {
	if n.tenant == nil {
		return startRaft(&n.cfg, smCfg, &n.applyMu, n.barriers, fsync, n.log)
	}
	p := n.tenant.parent
	if p.raft == nil {
		return nil, nil, fmt.Errorf("tenant %s: the default tenant's replica is not started", n.tenant.name)
	}
	smCfg.Pebble = tenantPebble
	members := make(map[uint64]dragonboat.Target, len(n.tenant.members))
	for id, addr := range n.tenant.members {
		members[id] = addr
	}
	// A joiner starts non-voting (dragonboat: a replica added with
	// RequestAddNonVoting must start with IsNonVoting) until promoted.
	r, store, err := p.raft.host.startShard(&n.cfg, shardSpec{id: n.tenant.shard, members: members, quiesce: true, log: n.log,
		join: n.tenant.join, observer: n.tenant.join},
		smCfg, &n.applyMu, n.barriers)
	if err != nil {
		return nil, nil, fmt.Errorf("tenant %s: %w", n.tenant.name, err)
	}
	// The directory is the default tenant's; nothing to register here.
	n.cluster.registered.Store(true)
	return r, store, nil
}

// tenantPebble keeps an idle tenant's Pebble small: many tenants share a
// node, and the default options size one DB for a whole machine.
func tenantPebble(o *pebble.Options) {
	const memTableSize = 4 << 20
	o.MemTableSize = memTableSize
	o.MemTableStopWritesThreshold = 4
	o.CacheSize = 8<<20 + 4*memTableSize
}

// RemoveTenantData removes a stopped tenant replica's data from this node:
// its Raft log and snapshots (dragonboat) and its state directory.
func (n *Node) RemoveTenantData(ctx context.Context, shard uint64) error {
	if shard == dataShard {
		return fmt.Errorf("shard %d is the default tenant's", shard)
	}
	if n.raft == nil {
		return fmt.Errorf("remove tenant shard %d: the node is not started", shard)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	if n.raft.nh.HasNodeInfo(shard, n.cfg.ReplicaID) {
		if err := n.raft.nh.SyncRemoveData(ctx, shard, n.cfg.ReplicaID); err != nil {
			return fmt.Errorf("remove the Raft data of shard %d: %w", shard, err)
		}
	}
	if err := os.RemoveAll(TenantDir(n.cfg.DataDir, shard)); err != nil {
		return fmt.Errorf("remove the state of shard %d: %w", shard, err)
	}
	return nil
}

// HostsShardData reports whether this node still holds any Raft data of a
// shard (its bootstrap record), for tests and `tenant delete` checks.
func (n *Node) HostsShardData(shard uint64) bool {
	return n.raft != nil && n.raft.nh.HasNodeInfo(shard, n.cfg.ReplicaID)
}

// tenantLogger is the logger of a tenant's node (for the wiring's own
// lines about it).
func (n *Node) Logger() zerolog.Logger { return n.log }

// Config is the node's effective configuration (a tenant's: its own data
// dir and members).
func (n *Node) Config() config.Config { return n.cfg }

// RequestLeaderTransfer asks the shard to make replica id its leader and
// returns at once (leader spreading; TransferLeader waits and records a
// configuration change).
func (n *Node) RequestLeaderTransfer(id uint64) error {
	if n.raft == nil {
		return fmt.Errorf("leader transfer: the node is not started")
	}
	return n.raft.nh.RequestLeaderTransfer(n.raft.shard, id)
}
