package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// configNode is ZooKeeper's dynamic configuration znode.
const configNode = "/zookeeper/config"

// clusterInterval is how often a node refreshes its picture of the shard.
const clusterInterval = time.Second

// replicaProgress is what one replica says of itself on /raft/local: no
// quorum round, so it answers even without a leader.
type replicaProgress struct {
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
// quorum round each time: the membership, the rendered /zookeeper/config and,
// on the leader, the progress last polled from every replica.
type clusterView struct {
	mu          sync.Mutex
	voters      map[uint64]string
	observers   map[uint64]string
	configID    uint64
	configText  string
	configMtime int64
	lag         map[uint64]int64 // leader only: replica → entries behind
	// refresh asks clusterLoop for a refresh now (a replica's addresses
	// changed); registered is set once this node's own entry is applied.
	refresh    chan struct{}
	registered atomic.Bool
}

// Ready reports why this node is not ready yet (nil when it is): it knows a
// Raft leader and its own addresses are in the replica directory (until
// then /zookeeper/config and raft status lack its client address).
func (s *Server) Ready() error {
	if !s.serving() {
		return errors.New("not serving: no raft leader")
	}
	if !s.cluster.registered.Load() {
		return errors.New("not ready: this node's addresses are not in the replica directory yet")
	}
	return nil
}

// refreshSoon asks clusterLoop to refresh without waiting for its tick.
func (s *Server) refreshSoon() {
	select {
	case s.cluster.refresh <- struct{}{}:
	default:
	}
}

// localProgress reports this replica's own Raft progress.
func (s *Server) localProgress() replicaProgress {
	st := s.node.status()
	p := replicaProgress{ReplicaID: st.ReplicaID, LeaderID: st.LeaderID, Term: st.Term,
		AppliedIndex: s.store.AppliedIndex(), CommitIndex: s.node.commitIndex()}
	p.CommitIndex = max(p.CommitIndex, p.AppliedIndex) // the persisted commit may trail
	switch {
	case st.IsLeader:
		p.Role = "leader"
	case s.cfg.Observer || s.isObserver():
		p.Role = "observer"
	case st.HasLeader:
		p.Role = "follower"
	default:
		p.Role = "candidate"
	}
	return p
}

// isObserver reports whether the cached membership lists this node as
// non-voting (a replica added with raft add-observer).
func (s *Server) isObserver() bool {
	s.cluster.mu.Lock()
	defer s.cluster.mu.Unlock()
	_, ok := s.cluster.observers[s.cfg.ReplicaID]
	return ok
}

// directory returns the replicated replica directory by ID.
func (s *Server) directory() (map[uint64]sm.ReplicaInfo, error) {
	v, err := s.store.View()
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

func (s *Server) selfInfo() sm.ReplicaInfo {
	return sm.ReplicaInfo{ID: s.cfg.ReplicaID, RaftAddr: s.cfg.PeerAddr, ClientAddr: s.ClientAddr(),
		AdminAddr: s.AdminAddr(), Observer: s.cfg.Observer}
}

// registerSelf puts this node's addresses in the directory if they are not
// there yet (first start, or a move to new ports).
func (s *Server) registerSelf() error {
	dir, err := s.directory()
	if err != nil {
		return err
	}
	me := s.selfInfo()
	if dir[me.ID] == me {
		s.cluster.registered.Store(true)
		return nil
	}
	res, err := s.node.proposeSync(&sm.Command{Op: &sm.RegisterReplica{Replica: me}})
	if err == nil && res.Err == zkproto.ErrOK {
		s.cluster.registered.Store(true)
	}
	return err
}

// clusterLoop keeps the cached membership, the directory entry and (on the
// leader) the static observers and replica lag up to date.
func (s *Server) clusterLoop(stop <-chan struct{}) {
	t := time.NewTicker(clusterInterval)
	defer t.Stop()
	for {
		s.refreshCluster()
		select {
		case <-stop:
			return
		case <-t.C:
		case <-s.cluster.refresh:
		}
	}
}

func (s *Server) refreshCluster() {
	if !s.serving() {
		return
	}
	if err := s.registerSelf(); err != nil {
		s.log.Debug().Err(err).Msg("register in the replica directory: will retry")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := s.membership(ctx)
	if err != nil {
		s.log.Debug().Err(err).Msg("refresh membership: will retry")
		return
	}
	s.updateMembership(m)
	if !s.node.isLeader() {
		return
	}
	s.addStaticObservers(ctx, m)
	lag := map[uint64]int64{}
	for _, r := range s.replicaStatuses(ctx, m) {
		if r.ReplicaID != s.cfg.ReplicaID {
			lag[r.ReplicaID] = r.Lag
		}
	}
	s.cluster.mu.Lock()
	s.cluster.lag = lag
	s.cluster.mu.Unlock()
}

// updateMembership caches m and, when the rendered configuration changed,
// fires NodeDataChanged on /zookeeper/config as a reconfig does.
func (s *Server) updateMembership(m *dragonboat.Membership) {
	dir, err := s.directory()
	if err != nil {
		return
	}
	v, err := s.store.View()
	if err != nil {
		return
	}
	version, _ := v.ConfigZxid()
	v.Close()
	text := renderConfig(m.Nodes, m.NonVotings, uint64(version), dir)
	s.cluster.mu.Lock()
	changed := s.cluster.configText != text
	s.cluster.voters, s.cluster.observers, s.cluster.configID = copyAddrs(m.Nodes), copyAddrs(m.NonVotings), m.ConfigChangeID
	if changed {
		s.cluster.configText, s.cluster.configMtime = text, time.Now().UnixMilli()
	}
	s.cluster.mu.Unlock()
	if changed {
		s.watches.trigger(zkproto.EventNodeDataChanged, configNode, nil)
	}
}

func copyAddrs(m map[uint64]string) map[uint64]string {
	out := make(map[uint64]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// renderConfig writes the membership in ZooKeeper's dynamic-config format:
// server.N=host:peerPort:electionPort:role;clientAddr lines in id order, then
// version=<hex zxid of the last change, 0 for the first membership>. Raft has one peer port, so it stands for both ports. A
// single voter renders as nothing, as a standalone ZooKeeper's empty node.
func renderConfig(voters, observers map[uint64]string, version uint64, dir map[uint64]sm.ReplicaInfo) string {
	if len(voters)+len(observers) <= 1 {
		return ""
	}
	ids := append(sortedIDs(voters), sortedIDs(observers)...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		addr, role := voters[id], "participant"
		if a, ok := observers[id]; ok {
			addr, role = a, "observer"
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, "0"
		}
		fmt.Fprintf(&b, "server.%d=%s:%s:%s:%s", id, host, port, port, role)
		if c := dir[id].ClientAddr; c != "" {
			b.WriteString(";" + c)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "version=%x", version)
	return b.String()
}

// overlayConfig replaces the stored, empty /zookeeper/config with the
// membership, as a ZooKeeper ensemble serves it (version and aversion -1).
func (s *Server) overlayConfig(path string, n *sm.Node) {
	if path != configNode || n == nil {
		return
	}
	s.cluster.mu.Lock()
	text, mtime := s.cluster.configText, s.cluster.configMtime
	s.cluster.mu.Unlock()
	if text == "" {
		return
	}
	n.Data = []byte(text)
	n.Stat.DataLength = int32(len(text))
	n.Stat.Version = -1
	n.Stat.Mtime = mtime
}

// addStaticObservers adds the configured observers that are not members
// yet (and were never removed): they start with --join and wait for it.
func (s *Server) addStaticObservers(ctx context.Context, m *dragonboat.Membership) {
	for _, id := range sortedIDs(s.cfg.Observers) {
		_, voter := m.Nodes[id]
		_, observer := m.NonVotings[id]
		_, removed := m.Removed[id]
		if voter || observer || removed {
			continue
		}
		if err := s.addObserver(ctx, id, s.cfg.Observers[id], s.settle); err != nil {
			s.log.Warn().Err(err).Uint64("replica_id", id).Msg("adding a configured observer failed; will retry")
			return
		}
		s.log.Info().Uint64("replica_id", id).Str("raft_address", s.cfg.Observers[id]).Msg("configured observer added")
	}
}

// replicaStatuses asks every member for its progress (this node answers
// locally) and computes each one's lag behind the highest commit seen.
func (s *Server) replicaStatuses(ctx context.Context, m *dragonboat.Membership) []ReplicaStatus {
	dir, _ := s.directory()
	var out []ReplicaStatus
	for _, group := range []struct {
		addrs  map[uint64]string
		voting bool
	}{{m.Nodes, true}, {m.NonVotings, false}} {
		for _, id := range sortedIDs(group.addrs) {
			out = append(out, ReplicaStatus{ReplicaID: id, Voting: group.voting, RaftAddress: group.addrs[id],
				ClientAddress: dir[id].ClientAddr, AdminAddress: dir[id].AdminAddr, Role: "unknown", Lag: -1})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		r := &out[i]
		if r.ReplicaID == s.cfg.ReplicaID {
			r.fill(s.localProgress(), nil)
			continue
		}
		if r.AdminAddress == "" {
			r.Error = "no admin address in the directory (admin disabled, or not registered yet)"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fill(fetchProgress(ctx, r.AdminAddress))
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

func (r *ReplicaStatus) fill(p replicaProgress, err error) {
	if err != nil {
		r.Error = err.Error()
		return
	}
	r.Role, r.Term, r.CommitIndex, r.AppliedIndex = p.Role, p.Term, p.CommitIndex, p.AppliedIndex
}

// fetchProgress reads another replica's /raft/local (loopback or cluster
// network; bounded by ctx and a short timeout).
func fetchProgress(ctx context.Context, adminAddr string) (replicaProgress, error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/raft/local", nil)
	if err != nil {
		return replicaProgress{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return replicaProgress{}, fmt.Errorf("ask %s: %w", adminAddr, err)
	}
	defer resp.Body.Close()
	var p replicaProgress
	if resp.StatusCode != http.StatusOK {
		return p, fmt.Errorf("ask %s: %s", adminAddr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return p, fmt.Errorf("ask %s: %w", adminAddr, err)
	}
	return p, nil
}

// followerLag returns the leader's last polled lag per replica (empty on
// followers).
func (s *Server) followerLag() map[uint64]int64 {
	s.cluster.mu.Lock()
	defer s.cluster.mu.Unlock()
	if !s.node.isLeader() {
		return nil
	}
	return s.cluster.lag
}
