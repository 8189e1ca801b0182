package native

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/server/node"
)

// Status is the node's view of its shard, as `zkbridge raft status`.
func (s *Server) Status(ctx context.Context, _ *zkbridgev1.StatusRequest) (*zkbridgev1.StatusResponse, error) {
	st, err := s.node.Status(ctx)
	out := &zkbridgev1.StatusResponse{ReplicaId: st.ReplicaID, RaftAddress: st.RaftAddress, Role: st.Role, LeaderId: st.LeaderID,
		Term: st.Term, AppliedIndex: st.AppliedIndex, CommitIndex: st.CommitIndex, LastZxid: st.LastZxid, Sessions: int64(st.Sessions)}
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "status: %v (this node's own progress: role %s, term %d, applied %d)", err, st.Role, st.Term, st.AppliedIndex)
	}
	for _, r := range st.Replicas {
		out.Replicas = append(out.Replicas, &zkbridgev1.ReplicaStatus{ReplicaId: r.ReplicaID, Voting: r.Voting, RaftAddress: r.RaftAddress,
			ClientAddress: r.ClientAddress, Role: r.Role, Term: r.Term, CommitIndex: r.CommitIndex, AppliedIndex: r.AppliedIndex, Lag: r.Lag, Error: r.Error})
	}
	return out, nil
}

func membershipError(op string, id uint64, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, node.ErrBelowQuorum) {
		return status.Errorf(codes.FailedPrecondition, "%s %d: %v", op, id, err)
	}
	return status.Errorf(codes.Unavailable, "%s %d: %v", op, id, err)
}

func checkMember(op string, id uint64, addr string, needAddr bool) error {
	if id == 0 {
		return status.Errorf(codes.InvalidArgument, "%s: replica_id 0 (ids start at 1)", op)
	}
	if needAddr && addr == "" {
		return status.Errorf(codes.InvalidArgument, "%s %d: no raft_address", op, id)
	}
	return nil
}

// AddVoter adds a voting replica; start it with --join.
func (s *Server) AddVoter(ctx context.Context, r *zkbridgev1.AddMemberRequest) (*zkbridgev1.MembershipResponse, error) {
	if err := checkMember("add-voter", r.ReplicaId, r.RaftAddress, true); err != nil {
		return nil, err
	}
	return &zkbridgev1.MembershipResponse{}, membershipError("add-voter", r.ReplicaId, s.node.AddVoter(ctx, r.ReplicaId, r.RaftAddress))
}

// AddObserver adds a non-voting replica; start it with --observer --join.
func (s *Server) AddObserver(ctx context.Context, r *zkbridgev1.AddMemberRequest) (*zkbridgev1.MembershipResponse, error) {
	if err := checkMember("add-observer", r.ReplicaId, r.RaftAddress, true); err != nil {
		return nil, err
	}
	return &zkbridgev1.MembershipResponse{}, membershipError("add-observer", r.ReplicaId, s.node.AddObserver(ctx, r.ReplicaId, r.RaftAddress))
}

// RemoveVoter removes a replica (voter or observer).
func (s *Server) RemoveVoter(ctx context.Context, r *zkbridgev1.RemoveMemberRequest) (*zkbridgev1.MembershipResponse, error) {
	if err := checkMember("remove-voter", r.ReplicaId, "", false); err != nil {
		return nil, err
	}
	return &zkbridgev1.MembershipResponse{}, membershipError("remove-voter", r.ReplicaId, s.node.RemoveVoter(ctx, r.ReplicaId, r.Force))
}

// TransferLeader makes a replica the leader.
func (s *Server) TransferLeader(ctx context.Context, r *zkbridgev1.TransferLeaderRequest) (*zkbridgev1.MembershipResponse, error) {
	if err := checkMember("transfer-leader", r.ReplicaId, "", false); err != nil {
		return nil, err
	}
	return &zkbridgev1.MembershipResponse{}, membershipError("transfer-leader", r.ReplicaId, s.node.TransferLeader(ctx, r.ReplicaId))
}
