package native

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
)

// ListSessions lists every session, leases included, with its ephemerals.
func (s *Server) ListSessions(ctx context.Context, r *zkbridgev1.ListSessionsRequest) (*zkbridgev1.ListSessionsResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	v, err := s.view(ctx, false)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	deadlines := s.node.SessionDeadlines()
	now := time.Now()
	out := &zkbridgev1.ListSessionsResponse{}
	err = v.Sessions(func(info *sm.SessionInfo) error {
		si := &zkbridgev1.SessionInfo{Id: info.ID, TtlMs: int64(info.Timeout), OwnerReplica: info.Owner, ExpiresInMs: -1}
		if d, ok := deadlines[info.ID]; ok {
			si.ExpiresInMs = max(0, d.Sub(now).Milliseconds())
		}
		eph, err := v.Ephemerals(info.ID)
		if err != nil {
			return err
		}
		si.Ephemerals = eph
		out.Sessions = append(out.Sessions, si)
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "list sessions: %v", err)
	}
	return out, nil
}
