package server

import (
	"context"

	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lni/dragonboat/v4"
	"github.com/zkbridge/zkbridge/sm"
	"net/http"
	"sort"
	"strconv"
	"time"
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
	Connections  int               `json:"connections"`
	// CommitIndex is the highest index this node knows committed.
	CommitIndex uint64 `json:"commit_index"`
	// Replicas lists every member with its own report of its progress.
	Replicas []ReplicaStatus `json:"replicas"`
}

// Status returns this node's Raft status; the membership is read with a
// quorum round, so it fails without a leader.
func (s *Server) Status(ctx context.Context) (RaftStatus, error) {
	st := s.node.status()
	local := s.localProgress()
	out := RaftStatus{
		ReplicaID: st.ReplicaID, RaftAddress: st.RaftAddress, LeaderID: st.LeaderID, Term: st.Term,
		Role: local.Role, AppliedIndex: local.AppliedIndex, CommitIndex: local.CommitIndex, LastZxid: s.lastZxid(),
		Sessions: s.sessions.count(), Connections: len(s.snapshotConns()),
	}
	m, err := s.membership(ctx)
	if err != nil {
		return out, err
	}
	s.updateMembership(m)
	out.Voters, out.NonVoters = m.Nodes, m.NonVotings
	out.Replicas = s.replicaStatuses(ctx, m)
	return out, nil
}

// TransferLeader asks the shard to make replica id its leader and waits
// (bounded) until it is.
func (s *Server) TransferLeader(ctx context.Context, id uint64) error {
	for {
		if err := s.node.nh.RequestLeaderTransfer(dataShard, id); err != nil {
			return fmt.Errorf("transfer leadership to %d: %w", id, err)
		}
		// Dragonboat gives no completion signal and sometimes needs a retry.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if lead, _, ok := s.node.leader(); ok && lead == id {
				// A new leader answers ReadIndex only once it has committed
				// an entry of its term.
				return s.settle()
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
func (s *Server) AddVoter(ctx context.Context, id uint64, addr string) error {
	m, err := s.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return fmt.Errorf("replica %d is already a voter", id)
	}
	if err := s.node.nh.SyncRequestAddReplica(ctx, dataShard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("add voter %d at %s: %w", id, addr, err)
	}
	return s.settleConfig()
}

// AddObserver adds replica id at Raft address addr as a non-voting member:
// it receives the log and serves reads, forwards writes, and never counts
// toward a quorum. Start that node with --observer --join.
func (s *Server) AddObserver(ctx context.Context, id uint64, addr string) error {
	return s.addObserver(ctx, id, addr, s.settleConfig)
}

// addObserver adds the observer, then commits settle's entry (a
// configuration change, or a plain no-op for a statically configured one).
func (s *Server) addObserver(ctx context.Context, id uint64, addr string, settle func() error) error {
	m, err := s.membership(ctx)
	if err != nil {
		return err
	}
	if _, ok := m.Nodes[id]; ok {
		return fmt.Errorf("replica %d is a voter; remove it first to make it an observer", id)
	}
	if _, ok := m.NonVotings[id]; ok {
		return fmt.Errorf("replica %d is already an observer", id)
	}
	if err := s.node.nh.SyncRequestAddNonVoting(ctx, dataShard, id, addr, m.ConfigChangeID); err != nil {
		return fmt.Errorf("add observer %d at %s: %w", id, addr, err)
	}
	return settle()
}

// ErrBelowQuorum refuses a removal that would leave fewer voters than a
// majority of the current ones.
var ErrBelowQuorum = errors.New("removing it would leave the shard without a safe majority; use --force to insist")

// RemoveVoter removes replica id. Unless force, it refuses when the
// voters left could not outvote a failure (fewer than a majority of today's).
func (s *Server) RemoveVoter(ctx context.Context, id uint64, force bool) error {
	m, err := s.membership(ctx)
	if err != nil {
		return err
	}
	_, observer := m.NonVotings[id]
	if _, ok := m.Nodes[id]; !ok && !observer {
		return fmt.Errorf("replica %d is not a member (voters: %v, observers: %v)", id, sortedIDs(m.Nodes), sortedIDs(m.NonVotings))
	}
	if observer { // an observer counts toward no quorum
		if err := s.node.nh.SyncRequestDeleteReplica(ctx, dataShard, id, m.ConfigChangeID); err != nil {
			return fmt.Errorf("remove observer %d: %w", id, err)
		}
		return s.settleConfig()
	}
	if left := len(m.Nodes) - 1; !force && (left < 1 || left < len(m.Nodes)/2+1) {
		return fmt.Errorf("remove voter %d of %d: %w", id, len(m.Nodes), ErrBelowQuorum)
	}
	if err := s.node.nh.SyncRequestDeleteReplica(ctx, dataShard, id, m.ConfigChangeID); err != nil {
		return fmt.Errorf("remove voter %d: %w", id, err)
	}
	return s.settleConfig()
}

// membership reads the shard's membership with a quorum round, asked again
// while the shard is briefly not ready (a leader change in progress) or an
// attempt goes unanswered (a lost read index message, see retryRead).
func (s *Server) membership(ctx context.Context) (*dragonboat.Membership, error) {
	read := func(ctx context.Context) (*dragonboat.Membership, error) {
		return s.node.nh.SyncGetShardMembership(ctx, dataShard)
	}
	m, err := retryRead(ctx, read, func(err error) bool { return !dragonboat.IsTempError(err) })
	if err != nil {
		return nil, fmt.Errorf("read membership: %w", err)
	}
	return m, nil
}

// settle commits a no-op after a leadership or membership change, so every
// replica's ReadIndex can complete again (see Start).
func (s *Server) settle() error { return s.settleWith(noopCommand()) }

// settleConfig is settle after a membership change made by an operator or
// reconfig: its entry is a ConfigChanged, whose zxid versions the config.
func (s *Server) settleConfig() error {
	return s.settleWith(&sm.Command{Op: &sm.ConfigChanged{}})
}

func (s *Server) settleWith(cmd *sm.Command) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ { // safe to retry: at worst one more version
		if _, err = s.node.proposeSync(cmd); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("membership changed, but the entry after it failed: %w", err)
}

func sortedIDs(m map[uint64]string) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// ContentHash is a SHA-256 over the local state machine's keys and values
// and the applied index it covers: replicas at one index must agree.
func (s *Server) ContentHash() (index uint64, hash string, err error) {
	s.applyMu.RLock() // no batch lands between the index and the hash
	defer s.applyMu.RUnlock()
	h, err := s.store.ContentHash()
	if err != nil {
		return 0, "", fmt.Errorf("content hash: %w", err)
	}
	return s.store.AppliedIndex(), hex.EncodeToString(h[:]), nil
}

// raftHandlers serves /raft/* on the admin listener for `zkbridge raft`.
func (s *Server) raftHandlers(mux *http.ServeMux) {
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	ctxOf := func(r *http.Request) (context.Context, context.CancelFunc) {
		return context.WithTimeout(r.Context(), 15*time.Second)
	}
	id := func(r *http.Request) (uint64, error) {
		n, err := strconv.ParseUint(r.FormValue("id"), 10, 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("id=%q is not a replica id", r.FormValue("id"))
		}
		return n, nil
	}
	mux.HandleFunc("/raft/status", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := ctxOf(r)
		defer cancel()
		st, err := s.Status(ctx)
		reply(w, st, err)
	})
	mux.HandleFunc("/raft/hash", func(w http.ResponseWriter, r *http.Request) {
		index, hash, err := s.ContentHash()
		reply(w, map[string]any{"applied_index": index, "content_hash": hash}, err)
	})
	post := func(path string, f func(ctx context.Context, r *http.Request) error) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "use POST", http.StatusMethodNotAllowed)
				return
			}
			ctx, cancel := ctxOf(r)
			defer cancel()
			reply(w, map[string]string{"result": "ok"}, f(ctx, r))
		})
	}
	post("/raft/transfer-leader", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return s.TransferLeader(ctx, n)
	})
	post("/raft/add-voter", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return s.AddVoter(ctx, n, r.FormValue("addr"))
	})
	mux.HandleFunc("/raft/local", func(w http.ResponseWriter, r *http.Request) {
		reply(w, s.localProgress(), nil)
	})
	post("/raft/add-observer", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return s.AddObserver(ctx, n, r.FormValue("addr"))
	})
	post("/raft/remove-voter", func(ctx context.Context, r *http.Request) error {
		n, err := id(r)
		if err != nil {
			return err
		}
		return s.RemoveVoter(ctx, n, r.FormValue("force") == "true")
	})
}
