package native

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// TenantAdmin is the tenant registry as the native API serves it (the
// wiring implements it over the registry; its errors are gRPC statuses).
type TenantAdmin interface {
	CreateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error)
	UpdateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error)
	ListTenants(ctx context.Context) ([]*zkbridgev1.TenantInfo, error)
	DeleteTenant(ctx context.Context, name string, force bool) error
	// RebalanceTenants runs a tenant rebalance, passing each step to send.
	RebalanceTenants(ctx context.Context, dryRun bool, send func(*zkbridgev1.RebalanceEvent) error) error
}

// SetTenantAdmin serves the tenant registry RPCs (call before Serve).
func (s *Server) SetTenantAdmin(a TenantAdmin) { s.tenantAdmin = a }

func (s *Server) registry() (TenantAdmin, error) {
	if s.tenantAdmin == nil {
		return nil, status.Error(codes.Unimplemented, "this door does not serve the tenant registry (ask the node's native address)")
	}
	if err := s.serving(); err != nil {
		return nil, err
	}
	return s.tenantAdmin, nil
}

func (s *Server) CreateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error) {
	a, err := s.registry()
	if err != nil {
		return nil, err
	}
	return a.CreateTenant(ctx, r)
}

func (s *Server) UpdateTenant(ctx context.Context, r *zkbridgev1.TenantSettings) (*zkbridgev1.TenantInfo, error) {
	a, err := s.registry()
	if err != nil {
		return nil, err
	}
	return a.UpdateTenant(ctx, r)
}

func (s *Server) ListTenants(ctx context.Context, _ *zkbridgev1.ListTenantsRequest) (*zkbridgev1.ListTenantsResponse, error) {
	a, err := s.registry()
	if err != nil {
		return nil, err
	}
	list, err := a.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	return &zkbridgev1.ListTenantsResponse{Tenants: list}, nil
}

func (s *Server) DeleteTenant(ctx context.Context, r *zkbridgev1.DeleteTenantRequest) (*zkbridgev1.DeleteTenantResponse, error) {
	a, err := s.registry()
	if err != nil {
		return nil, err
	}
	return &zkbridgev1.DeleteTenantResponse{}, a.DeleteTenant(ctx, r.Name, r.Force)
}

func (s *Server) RebalanceTenants(r *zkbridgev1.RebalanceTenantsRequest, stream zkbridgev1.Bridge_RebalanceTenantsServer) error {
	a, err := s.registry()
	if err != nil {
		return err
	}
	return a.RebalanceTenants(stream.Context(), r.DryRun, stream.Send)
}
