package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// The membership operations a tenant rebalance runs on a tenant's shard,
// from a node hosting a replica of it (dragonboat changes a shard's
// membership only through a replica of that shard).

// ShardMembers is a shard's membership as Raft has committed it.
type ShardMembers struct {
	Voters    map[uint64]string // replica id → Raft address
	NonVoting map[uint64]string
	// Removed are replica ids deleted from the shard: dragonboat never lets
	// one of them back in, so a rebalance never places the shard there.
	Removed map[uint64]bool
}

// Has reports whether id is a voting or non-voting member.
func (m ShardMembers) Has(id uint64) bool {
	_, v := m.Voters[id]
	_, nv := m.NonVoting[id]
	return v || nv
}

// ShardMembers reads the membership of this node's shard with a quorum
// round.
func (n *Node) ShardMembers(ctx context.Context) (ShardMembers, error) {
	m, err := n.membership(ctx)
	if err != nil {
		return ShardMembers{}, err
	}
	out := ShardMembers{Voters: maps.Clone(m.Nodes), NonVoting: maps.Clone(m.NonVotings), Removed: map[uint64]bool{}}
	for id := range m.Removed {
		out.Removed[id] = true
	}
	return out, nil
}

// AddNonVotingReplica adds replica id at Raft address addr to the shard as
// a non-voting member: it catches up (by snapshot streaming and the log)
// without counting toward a quorum. Already a member: nothing to do.
func (n *Node) AddNonVotingReplica(ctx context.Context, id uint64, addr string) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return nil
	}
	if _, ok := m.NonVotings[id]; ok {
		return nil
	}
	if _, ok := m.Removed[id]; ok {
		return fmt.Errorf("replica %d was removed from shard %d before and cannot rejoin it", id, n.Shard())
	}
	if err := n.raft.nh.SyncRequestAddNonVoting(ctx, n.raft.shard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("add non-voting replica %d at %s to shard %d: %w", id, addr, n.Shard(), err)
	}
	return n.settleConfig()
}

// PromoteReplica makes non-voting replica id a voter (a voter already:
// nothing to do).
func (n *Node) PromoteReplica(ctx context.Context, id uint64) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return nil
	}
	addr, ok := m.NonVotings[id]
	if !ok {
		return fmt.Errorf("replica %d is not a member of shard %d", id, n.Shard())
	}
	if err := n.raft.nh.SyncRequestAddReplica(ctx, n.raft.shard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("promote replica %d of shard %d: %w", id, n.Shard(), err)
	}
	return n.settleConfig()
}

// ErrLastVoter refuses removing a shard's only voter.
var ErrLastVoter = errors.New("it is the shard's only voter")

// RemoveReplica deletes replica id from the shard (not a member: nothing to
// do). The removed replica keeps running until its node stops it; its data
// can then be removed.
func (n *Node) RemoveReplica(ctx context.Context, id uint64) error {
	m, err := n.membership(ctx)
	if err != nil {
		return err
	}
	_, voter := m.Nodes[id]
	_, nonVoting := m.NonVotings[id]
	if !voter && !nonVoting {
		return nil
	}
	if voter && len(m.Nodes) == 1 {
		return fmt.Errorf("remove replica %d of shard %d: %w", id, n.Shard(), ErrLastVoter)
	}
	if err := n.raft.nh.SyncRequestDeleteReplica(ctx, n.raft.shard, id, m.ConfigChangeID); err != nil {
		return fmt.Errorf("remove replica %d of shard %d: %w", id, n.Shard(), err)
	}
	if id == n.cfg.ReplicaID {
		return nil // this replica takes no more entries: nothing to settle through it
	}
	return n.settleConfig()
}

// ReplicaProgress is replica id's own report of its progress in this
// node's shard (this node answers locally, another through its admin
// address in the directory).
func (n *Node) ReplicaProgress(ctx context.Context, id uint64) (Progress, error) {
	if id == n.cfg.ReplicaID {
		return n.LocalProgress(), nil
	}
	dir, err := n.directory()
	if err != nil {
		return Progress{}, err
	}
	addr := dir[id].AdminAddr
	if addr == "" {
		return Progress{}, fmt.Errorf("replica %d has no admin address in the directory (admin disabled?)", id)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return n.fetchProgress(ctx, addr)
}

// ReplicaAddr is the Raft address of replica id from the replicated
// directory (or the default shard's membership).
func (n *Node) ReplicaAddr(id uint64) (string, error) {
	dir, err := n.directory()
	if err != nil {
		return "", err
	}
	if a := dir[id].RaftAddr; a != "" {
		return a, nil
	}
	if n.tenant != nil {
		n = n.tenant.parent
	}
	if a := n.Membership().Voters[id]; a != "" {
		return a, nil
	}
	return "", fmt.Errorf("no Raft address known for replica %d", id)
}
