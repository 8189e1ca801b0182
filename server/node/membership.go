package node

import (
	"context"

	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/sm"
)

// RaftStatus is one node's view of the data shard, as `zkbridge raft
// status` shows it.
type RaftStatus struct {
	ReplicaID    uint64            `json:"replica_id"`
	RaftAddress  string            `json:"raft_address"`
	Role         string            `json:"role"` // leader, follower, or candidate (no leader known)
	LeaderID     uint64            `json:"leader_id"`
	Term         uint64            `json:"term"`
	AppliedIndex uint64            `json:"applied_index"`
	LastZxid     int64             `json:"last_zxid"`
	Voters       map[uint64]string `json:"voters"`
	NonVoters    map[uint64]string `json:"non_voters,omitempty"`
	Sessions     int               `json:"sessions"`
	// Connections is the client connections of this node's front doors
	// (filled in by the wiring).
	Connections int `json:"connections"`
	// CommitIndex is the highest index this node knows committed.
	CommitIndex uint64 `json:"commit_index"`
	// Replicas lists every member with its own report of its progress.
	Replicas []ReplicaStatus `json:"replicas"`
}

// Status returns this node's Raft status; the membership is read with a
// quorum round, so it fails without a leader.
func (n *Node) Status(ctx context.Context) (RaftStatus, error) {
	st := n.raft.status()
	local := n.LocalProgress()
	out := RaftStatus{
		ReplicaID: st.ReplicaID, RaftAddress: st.RaftAddress, LeaderID: st.LeaderID, Term: st.Term,
		Role: local.Role, AppliedIndex: local.AppliedIndex, CommitIndex: local.CommitIndex, LastZxid: n.LastZxid(),
		Sessions: n.sessions.count(),
	}
	m, err := n.membership(ctx)
	if err != nil {
		return out, err
	}
	n.updateMembership(m)
	out.Voters, out.NonVoters = m.Nodes, m.NonVotings
	out.Replicas = n.replicaStatuses(ctx, m)
	return out, nil
}

// TransferLeader asks the shard to make replica id its leader and waits
// (bounded) until it is.
func (n *Node) TransferLeader(ctx context.Context, id uint64) error {
	for {
		if err := n.raft.nh.RequestLeaderTransfer(n.raft.shard, id); err != nil {
			return fmt.Errorf("transfer leadership to %d: %w", id, err)
		}
		// Dragonboat gives no completion signal and sometimes needs a retry.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if lead, _, ok := n.raft.leader(); ok && lead == id {
				// A new leader answers ReadIndex only once it has committed
				// an entry of its term.
				return n.settle()
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("transfer leadership to %d: not done: %w", id, ctx.Err())
		}
	}
}

// AddVoter adds replica id at Raft address addr; start that node with
// --join afterwards (or before: it waits to be contacted).
func (n *Node) AddVoter(ctx context.Context, id uint64, addr string) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return fmt.Errorf("replica %d is already a voter", id)
	}
	if err := n.raft.nh.SyncRequestAddReplica(ctx, n.raft.shard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("add voter %d at %s: %w", id, addr, err)
	}
	return n.settleConfig()
}

// AddObserver adds replica id at Raft address addr as a non-voting member:
// it receives the log and serves reads, forwards writes, and never counts
// toward a quorum. Start that node with --observer --join.
func (n *Node) AddObserver(ctx context.Context, id uint64, addr string) error {
	return n.addObserver(ctx, id, addr, n.settleConfig)
}

// addObserver adds the observer, then commits settle's entry (a
// configuration change, or a plain no-op for a statically configured one).
func (n *Node) addObserver(ctx context.Context, id uint64, addr string, settle func() error) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return fmt.Errorf("replica %d is a voter; remove it first to make it an observer", id)
	}
	if _, ok := m.NonVotings[id]; ok {
		return fmt.Errorf("replica %d is already an observer", id)
	}
	if err := n.raft.nh.SyncRequestAddNonVoting(ctx, n.raft.shard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("add observer %d at %s: %w", id, addr, err)
	}
	return settle()
}

// ErrBelowQuorum refuses a removal that would leave fewer voters than a
// majority of the current ones.
var ErrBelowQuorum = errors.New("removing it would leave the shard without a safe majority; use --force to insist")

// RemoveVoter removes replica id. Unless force, it refuses when the
// voters left could not outvote a failure (fewer than a majority of today's).
func (n *Node) RemoveVoter(ctx context.Context, id uint64, force bool) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	_, observer := m.NonVotings[id]
	if _, ok := m.Nodes[id]; !ok && !observer {
		return fmt.Errorf("replica %d is not a member (voters: %v, observers: %v)", id, config.SortedIDs(m.Nodes), config.SortedIDs(m.NonVotings))
	}
	if observer { // an observer counts toward no quorum
		if err := n.raft.nh.SyncRequestDeleteReplica(ctx, n.raft.shard, id, m.ConfigChangeID); err != nil {
			return fmt.Errorf("remove observer %d: %w", id, err)
		}
		return n.settleConfig()
	}
	if left := len(m.Nodes) - 1; !force && (left < 1 || left < len(m.Nodes)/2+1) {
		return fmt.Errorf("remove voter %d of %d: %w", id, len(m.Nodes), ErrBelowQuorum)
	}
	if err := n.raft.nh.SyncRequestDeleteReplica(ctx, n.raft.shard, id, m.ConfigChangeID); err != nil {
		return fmt.Errorf("remove voter %d: %w", id, err)
	}
	return n.settleConfig()
}

// membership reads the shard's membership with a quorum round, asked again
// while the shard is briefly not ready (a leader change in progress) or an
// attempt goes unanswered (a lost read index message, see retryRead).
func (n *Node) membership(ctx context.Context) (*dragonboat.Membership, error) {
	read := func(ctx context.Context) (*dragonboat.Membership, error) {
		return n.raft.nh.SyncGetShardMembership(ctx, n.raft.shard)
	}
	m, err := retryRead(ctx, read, func(err error) bool { return !dragonboat.IsTempError(err) })
	if err != nil {
		return nil, fmt.Errorf("read membership: %w", err)
	}
	return m, nil
}

// settle commits a no-op after a leadership or membership change, so every
// replica's ReadIndex can complete again (see Start).
func (n *Node) settle() error { return n.settleWith(noopCommand()) }

// settleConfig is settle after a membership change made by an operator or
// reconfig: its entry is a ConfigChanged, whose zxid versions the config.
func (n *Node) settleConfig() error {
	return n.settleWith(&sm.Command{Op: &sm.ConfigChanged{}})
}

// RecordConfig records a reconfig's outcome: the configuration's new
// version (this entry's zxid) and its members in the order ZooKeeper lists
// them.
func (n *Node) RecordConfig(order []uint64) error {
	return n.settleWith(&sm.Command{Op: &sm.ConfigChanged{Order: order}})
}

func (n *Node) settleWith(cmd *sm.Command) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ { // safe to retry: at worst one more version
		if _, err = n.raft.proposeSync(cmd); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("membership changed, but the entry after it failed: %w", err)
}

// ContentHash is a SHA-256 over the local state machine's keys and values
// and the applied index it covers: replicas at one index must agree.
func (n *Node) ContentHash() (index uint64, hash string, err error) {
	n.applyMu.RLock() // no batch lands between the index and the hash
	defer n.applyMu.RUnlock()
	h, err := n.store.ContentHash()
	if err != nil {
		return 0, "", fmt.Errorf("content hash: %w", err)
	}
	return n.store.AppliedIndex(), hex.EncodeToString(h[:]), nil
}
