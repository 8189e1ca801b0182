package node

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// clusterInterval is how often a node refreshes its picture of the shard.
const clusterInterval = time.Second

// Progress is what one replica says of itself on /raft/local: no
// quorum round, so it answers even without a leader.
type Progress struct {
	ReplicaID    uint64 `json:"replica_id"`
	Role         string `json:"role"` // leader, follower, observer, candidate
	LeaderID     uint64 `json:"leader_id"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
}

// ReplicaStatus is one member of the shard as `raft status` lists it.
type ReplicaStatus struct {
	ReplicaID     uint64 `json:"replica_id"`
	Voting        bool   `json:"voting"`
	RaftAddress   string `json:"raft_address"`
	ClientAddress string `json:"client_address,omitempty"`
	AdminAddress  string `json:"admin_address,omitempty"`
	Role          string `json:"role"` // as the replica reports it; "unknown" if it did not answer
	Term          uint64 `json:"term"`
	CommitIndex   uint64 `json:"commit_index"`
	AppliedIndex  uint64 `json:"applied_index"`
	// Lag is how many entries the replica has still to apply behind the
	// highest commit index any replica reported; -1 when unknown.
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

// clusterView caches what reads and metrics need about the shard without a
// quorum round each time: the membership and, on the leader, the progress
// last polled from every replica.
type clusterView struct {
	mu      sync.Mutex
	current Membership
	known   bool             // current holds a membership read from the shard
	lag     map[uint64]int64 // leader only: replica → entries behind
	// refresh asks clusterLoop for a refresh now (a replica's addresses
	// changed); registered is set once this node's own entry is applied.
	refresh    chan struct{}
	registered atomic.Bool
}

// Membership is the shard's membership as last read, with what ZooKeeper's
// /zookeeper/config is rendered from.
type Membership struct {
	// Voters and Observers map replica ids to Raft addresses.
	Voters, Observers map[uint64]string
	// ConfigChangeID is Raft's id of the last membership change (reconfig's
	// fromConfig).
	ConfigChangeID uint64
	// ConfigZxid is the zxid of the last configuration change (the config's
	// version; 0 for the first membership).
	ConfigZxid int64
	// Directory is the replicated replica directory: every member's
	// addresses, by id.
	Directory map[uint64]sm.ReplicaInfo
	// ConfigOrder is the member order the last reconfig recorded
	// (RecordConfig); nil before any.
	ConfigOrder []uint64
}

func (m Membership) equal(o Membership) bool {
	return m.ConfigChangeID == o.ConfigChangeID && m.ConfigZxid == o.ConfigZxid &&
		maps.Equal(m.Voters, o.Voters) && maps.Equal(m.Observers, o.Observers) && maps.Equal(m.Directory, o.Directory) &&
		slices.Equal(m.ConfigOrder, o.ConfigOrder)
}

// ProgressSource asks the replica whose admin address is adminAddr for its
// own Raft progress in a shard (the admin door's /raft/local; shard 1 is
// the default tenant's, another a tenant's).
type ProgressSource func(ctx context.Context, adminAddr string, shard uint64) (Progress, error)

// refreshSoon asks clusterLoop to refresh without waiting for its tick.
func (n *Node) refreshSoon() {
	select {
	case n.cluster.refresh <- struct{}{}:
	default:
	}
}

// LocalProgress reports this replica's own Raft progress.
func (n *Node) LocalProgress() Progress {
	st := n.raft.status()
	p := Progress{ReplicaID: st.ReplicaID, LeaderID: st.LeaderID, Term: st.Term,
		AppliedIndex: n.store.AppliedIndex(), CommitIndex: n.raft.commitIndex()}
	p.CommitIndex = max(p.CommitIndex, p.AppliedIndex) // the persisted commit may trail
	switch {
	case st.IsLeader:
		p.Role = "leader"
	case n.IsObserver():
		p.Role = "observer"
	case st.HasLeader:
		p.Role = "follower"
	default:
		p.Role = "candidate"
	}
	return p
}

// IsObserver reports whether this node is non-voting: started as an
// observer, or listed as one in the cached membership (a replica added with
// raft add-observer).
func (n *Node) IsObserver() bool {
	if n.cfg.Observer {
		return true
	}
	n.cluster.mu.Lock()
	defer n.cluster.mu.Unlock()
	_, ok := n.cluster.current.Observers[n.cfg.ReplicaID]
	return ok
}

// directory returns the replicated replica directory by ID.
func (n *Node) directory() (map[uint64]sm.ReplicaInfo, error) {
	if n.tenant != nil {
		return n.tenant.parent.directory()
	}
	v, err := n.store.View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	list, err := v.Replicas()
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]sm.ReplicaInfo, len(list))
	for _, r := range list {
		out[r.ID] = r
	}
	return out, nil
}

func (n *Node) selfInfo() sm.ReplicaInfo {
	return sm.ReplicaInfo{ID: n.cfg.ReplicaID, RaftAddr: n.cfg.PeerAddr, ClientAddr: n.addrs.Client,
		AdminAddr: n.addrs.Admin, Observer: n.cfg.Observer}
}

// registerSelf puts this node's addresses in the directory if they are not
// there yet (first start, or a move to new ports).
func (n *Node) registerSelf() error {
	dir, err := n.directory()
	if err != nil {
		return err
	}
	me := n.selfInfo()
	me.Spec = dir[me.ID].Spec // a reconfig's spec stays (RegisterReplica keeps it)
	if dir[me.ID] == me {
		n.cluster.registered.Store(true)
		return nil
	}
	res, err := n.raft.proposeSync(&sm.Command{Op: &sm.RegisterReplica{Replica: me}})
	if err == nil && res.Err == zkproto.ErrOK {
		n.cluster.registered.Store(true)
	}
	return err
}

// clusterLoop keeps the cached membership, the directory entry and (on the
// leader) the static observers and replica lag up to date.
func (n *Node) clusterLoop(stop <-chan struct{}) {
	t := time.NewTicker(clusterInterval)
	defer t.Stop()
	for {
		n.refreshCluster()
		select {
		case <-stop:
			return
		case <-t.C:
		case <-n.cluster.refresh:
		}
	}
}

func (n *Node) refreshCluster() {
	if !n.Serving() {
		return
	}
	if n.tenant == nil { // the directory is the default tenant's
		if err := n.registerSelf(); err != nil {
			n.log.Debug().Err(err).Msg("register in the replica directory: will retry")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := n.membership(ctx)
	if err != nil {
		n.log.Debug().Err(err).Msg("refresh membership: will retry")
		return
	}
	n.updateMembership(m)
	if !n.raft.isLeader() {
		return
	}
	if n.tenant == nil {
		n.addStaticObservers(ctx, m)
	}
	lag := map[uint64]int64{}
	for _, r := range n.replicaStatuses(ctx, m) {
		if r.ReplicaID != n.cfg.ReplicaID {
			lag[r.ReplicaID] = r.Lag
		}
	}
	n.cluster.mu.Lock()
	n.cluster.lag = lag
	n.cluster.mu.Unlock()
}

// updateMembership caches m with the directory and the configuration's
// version, and tells the front doors when any of it changed.
func (n *Node) updateMembership(m *dragonboat.Membership) Membership {
	dir, err := n.directory()
	if err != nil {
		return n.Membership()
	}
	v, err := n.store.View()
	if err != nil {
		return n.Membership()
	}
	version, _ := v.ConfigZxid()
	order, _ := v.ConfigOrder()
	v.Close()
	cur := Membership{Voters: maps.Clone(m.Nodes), Observers: maps.Clone(m.NonVotings),
		ConfigChangeID: m.ConfigChangeID, ConfigZxid: version, Directory: dir, ConfigOrder: order}
	n.cluster.mu.Lock()
	changed := !n.cluster.known || !n.cluster.current.equal(cur)
	n.cluster.current, n.cluster.known = cur, true
	n.cluster.mu.Unlock()
	if changed {
		for _, h := range n.hooks {
			if h.MembershipChanged != nil {
				h.MembershipChanged(cur)
			}
		}
	}
	return cur
}

// Membership returns the membership last read (empty maps before the
// first read).
func (n *Node) Membership() Membership {
	n.cluster.mu.Lock()
	defer n.cluster.mu.Unlock()
	return n.cluster.current
}

// RefreshMembership reads the membership with a quorum round and caches it.
func (n *Node) RefreshMembership(ctx context.Context) (Membership, error) {
	m, err := n.membership(ctx)
	if err != nil {
		return Membership{}, err
	}
	return n.updateMembership(m), nil
}

// Voters is the number of voting replicas: the last membership seen, or
// before one was read, the configured peers.
func (n *Node) Voters() int {
	n.cluster.mu.Lock()
	c := len(n.cluster.current.Voters)
	n.cluster.mu.Unlock()
	if c == 0 {
		c = len(n.cfg.Peers)
	}
	return max(1, c)
}

// addStaticObservers adds the configured observers that are not members
// yet (and were never removed): they start with --join and wait for it.
func (n *Node) addStaticObservers(ctx context.Context, m *dragonboat.Membership) {
	for _, id := range config.SortedIDs(n.cfg.Observers) {
		_, voter := m.Nodes[id]
		_, observer := m.NonVotings[id]
		_, removed := m.Removed[id]
		if voter || observer || removed {
			continue
		}
		if err := n.addObserver(ctx, id, n.cfg.Observers[id], n.settle); err != nil {
			n.log.Warn().Err(err).Uint64("replica_id", id).Msg("adding a configured observer failed; will retry")
			return
		}
		n.log.Info().Uint64("replica_id", id).Str("raft_address", n.cfg.Observers[id]).Msg("configured observer added")
	}
}

// replicaStatuses asks every member for its progress (this node answers
// locally) and computes each one's lag behind the highest commit seen.
func (n *Node) replicaStatuses(ctx context.Context, m *dragonboat.Membership) []ReplicaStatus {
	dir, _ := n.directory()
	var out []ReplicaStatus
	for _, group := range []struct {
		addrs  map[uint64]string
		voting bool
	}{{m.Nodes, true}, {m.NonVotings, false}} {
		for _, id := range config.SortedIDs(group.addrs) {
			out = append(out, ReplicaStatus{ReplicaID: id, Voting: group.voting, RaftAddress: group.addrs[id],
				ClientAddress: dir[id].ClientAddr, AdminAddress: dir[id].AdminAddr, Role: "unknown", Lag: -1})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		r := &out[i]
		if r.ReplicaID == n.cfg.ReplicaID {
			r.fill(n.LocalProgress(), nil)
			continue
		}
		if r.AdminAddress == "" {
			r.Error = "no admin address in the directory (admin disabled, or not registered yet)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fill(n.fetchProgress(ctx, r.AdminAddress))
		}()
	}
	wg.Wait()
	var top uint64
	for _, r := range out {
		top = max(top, r.CommitIndex)
	}
	for i := range out {
		if out[i].Role != "unknown" {
			out[i].Lag = int64(top) - int64(out[i].AppliedIndex)
		}
	}
	return out
}

func (r *ReplicaStatus) fill(p Progress, err error) {
	if err != nil {
		r.Error = err.Error()
		return
	}
	r.Role, r.Term, r.CommitIndex, r.AppliedIndex = p.Role, p.Term, p.CommitIndex, p.AppliedIndex
}

// fetchProgress asks another replica for its progress through the
// ProgressSource the wiring set.
func (n *Node) fetchProgress(ctx context.Context, adminAddr string) (Progress, error) {
	if n.progress == nil {
		return Progress{}, errors.New("no way to ask other replicas (no progress source)")
	}
	return n.progress(ctx, adminAddr, n.Shard())
}

// FollowerLag returns the leader's last polled lag per replica (empty on
// followers).
func (n *Node) FollowerLag() map[uint64]int64 {
	n.cluster.mu.Lock()
	defer n.cluster.mu.Unlock()
	if !n.raft.isLeader() {
		return nil
	}
	return n.cluster.lag
}
