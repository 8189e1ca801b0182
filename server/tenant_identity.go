package server

import (
	"net"
	"slices"
	"strings"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/sm"
)

// The node's secure client port is shared by the tenants that have TLS
// identities in the registry (`tenant create --identity NAME`): the door
// asks lookupIdentity which tenant a server name or certificate name
// selects (server/zk/identity.go says how the connection then goes).

// identityRouter is the default door's tenant selection by TLS identity.
func (s *Server) identityRouter() *zk.IdentityRouter {
	return &zk.IdentityRouter{
		Lookup:        s.lookupIdentity,
		RefuseUnknown: s.cfg.TLS.TenantUnknownIdentity == config.UnknownIdentityRefuse,
	}
}

// lookupIdentity finds the tenant with identity id (case-insensitive, as
// host names are) in the registry as this node has applied it.
func (s *Server) lookupIdentity(id string) (zk.IdentityRoute, bool) {
	list, err := s.node.Tenants()
	if err != nil {
		s.log.Warn().Err(err).Msg("tenant selection by TLS identity: reading the tenant registry")
		return zk.IdentityRoute{}, false
	}
	var spec *sm.Tenant
	for i := range list {
		if slices.ContainsFunc(list[i].Identities, func(x string) bool { return strings.EqualFold(x, id) }) {
			spec = &list[i]
			break
		}
	}
	if spec == nil {
		return zk.IdentityRoute{}, false
	}
	rt := zk.IdentityRoute{Tenant: spec.Name}
	if t := s.tenants.get(spec.Name); t != nil {
		rt.Door = t.door
		return rt, true
	}
	if slices.Contains(spec.Replicas, s.cfg.ReplicaID) {
		// Placed here, not started yet: closed (the client retries), never
		// forwarded, so that only nodes outside the placement forward and
		// a connection cannot go round between nodes.
		return rt, true
	}
	// Hosted elsewhere: the same secure port of the hosting nodes (as a
	// tenant's own ports, every node's secure port is the same number).
	targets := s.identityTargets(spec)
	rt.Hosts = strings.Join(targets, ",")
	rt.Forward = func(c net.Conn) { s.identityFwd.forwardAsync(c, targets) }
	return rt, true
}

// identityTargets are the secure client addresses of the nodes hosting a
// tenant (this node is not one of them).
func (s *Server) identityTargets(spec *sm.Tenant) []string {
	_, port, err := net.SplitHostPort(s.zk.SecureAddr())
	if err != nil {
		return nil
	}
	dir := s.node.Membership().Directory
	var out []string
	for _, id := range spec.Replicas {
		if host, _, err := net.SplitHostPort(dir[id].ClientAddr); err == nil {
			out = append(out, net.JoinHostPort(host, port))
		}
	}
	return out
}
