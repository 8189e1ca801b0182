package native

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
)

// SetCutoverPolicy sets a subtree's cutover mode.
func (s *Server) SetCutoverPolicy(ctx context.Context, r *zkbridgev1.SetCutoverPolicyRequest) (*zkbridgev1.SetCutoverPolicyResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	if err := checkPath("set cutover policy", r.Subtree); err != nil {
		return nil, err
	}
	mode := sm.CutoverMode(r.Mode)
	if mode > sm.CutoverReadOnly {
		return nil, status.Errorf(codes.InvalidArgument, "set cutover policy %s: unknown mode %d", r.Subtree, r.Mode)
	}
	if _, err := s.propose(&sm.SetCutover{Path: r.Subtree, Mode: mode}); err != nil {
		return nil, codeOf("set cutover policy", r.Subtree, err)
	}
	s.log.Info().Str("subtree", r.Subtree).Str("mode", mode.String()).Msg("cutover policy set")
	return &zkbridgev1.SetCutoverPolicyResponse{}, nil
}

// ListCutoverPolicies lists the policies (linearizable).
func (s *Server) ListCutoverPolicies(ctx context.Context, r *zkbridgev1.ListCutoverPoliciesRequest) (*zkbridgev1.ListCutoverPoliciesResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	v, err := s.view(ctx, false)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	ps, err := v.CutoverPolicies()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "list cutover policies: %v", err)
	}
	out := &zkbridgev1.ListCutoverPoliciesResponse{}
	for _, p := range ps {
		out.Policies = append(out.Policies, &zkbridgev1.CutoverPolicy{Subtree: p.Path, Mode: zkbridgev1.CutoverMode(p.Mode)})
	}
	return out, nil
}
