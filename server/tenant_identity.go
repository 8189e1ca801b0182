package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/tlsconf"
	"github.com/zkbridge/zkbridge/server/zk"
	"github.com/zkbridge/zkbridge/sm"
)

// The node's secure client port is shared by the tenants that have TLS
// identities in the registry (`tenant create --identity NAME`): the door
// asks lookupIdentity which tenant a server name or certificate name
// selects (server/zk/identity.go says how the connection then goes).

// identityRouter is the default door's tenant selection by TLS identity.
// With peer TLS (sslQuorum) it also relays clients selected by their
// certificate to hosting nodes, and takes such clients from other nodes,
// over TLS under the peers' settings (server/zk/relay.go).
func (s *Server) identityRouter() *zk.IdentityRouter {
	r := &zk.IdentityRouter{
		Lookup:        s.lookupIdentity,
		RefuseUnknown: s.cfg.TLS.TenantUnknownIdentity == config.UnknownIdentityRefuse,
	}
	if s.cfg.TLS.QuorumEnabled && s.cfg.TLS.ClientTLSEnabled() {
		src, err := tlsconf.NewSource(s.cfg.TLS.Quorum, "ssl.quorum", s.log.With().Str("component", "tenant-relay").Logger())
		if err != nil {
			// The Raft transport loads the same stores at Open and
			// fails the start with this error.
			s.log.Warn().Err(err).Msg("tenant relay: the peers' TLS stores do not load; clients selected by certificate are not relayed")
			return r
		}
		s.identityFwd.nodeTLS = src
		r.RelayTLS = relayServerConfig(src)
		if !s.cfg.TLS.Quorum.HostnameVerificationDisabled {
			r.RelayFrom = s.relayFromMember
		}
	}
	return r
}

// relayFromMember admits a relaying node whose peer certificate names the
// host of a cluster member (its Raft or client address), as a dialing
// peer checks the node it dials: a certificate the peer CA signed for
// something else is not a node. With ssl.quorum.hostnameVerification=false
// the chain to the peer CA alone admits it.
func (s *Server) relayFromMember(cert *x509.Certificate) error {
	var hosts []string
	for _, m := range s.node.Membership().Directory {
		for _, addr := range []string{m.RaftAddr, m.ClientAddr} {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || host == "" {
				continue
			}
			if cert.VerifyHostname(host) == nil {
				return nil
			}
			if !slices.Contains(hosts, host) {
				hosts = append(hosts, host)
			}
		}
	}
	slices.Sort(hosts)
	return fmt.Errorf("its certificate %q names none of the members' hosts %v (ssl.quorum.hostnameVerification=false admits any certificate of the peer CA)", tlsconf.JavaDN(cert), hosts)
}

// relayServerConfig is the server side of the node-to-node relay
// channel: the peers' certificate and trust store, the relay protocol, and
// a peer certificate always required and verified, whatever
// ssl.quorum.clientAuth says: it is what makes the other end a node.
func relayServerConfig(src *tlsconf.Source) *tls.Config {
	base := src.ServerConfig(zk.NodeRelayALPN)
	return &tls.Config{
		MinVersion: base.MinVersion,
		NextProtos: base.NextProtos,
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			cfg, err := base.GetConfigForClient(h)
			if err != nil {
				return nil, err
			}
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
			return cfg, nil
		},
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
	if s.identityFwd.nodeTLS != nil {
		relays := s.relayTargets(spec, targets)
		rt.Relay = func(c *tls.Conn) { s.identityFwd.relayAsync(c, spec.Name, relays) }
	}
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

// relayTargets pairs the hosting nodes' secure client addresses with their
// Raft addresses, whose host their peer certificate names (the peers
// check it when they dial each other): a relay verifies the hosting node
// by that name, even where its client address has another host.
func (s *Server) relayTargets(spec *sm.Tenant, addrs []string) []relayTarget {
	dir := s.node.Membership().Directory
	var out []relayTarget
	for _, id := range spec.Replicas {
		m := dir[id]
		host, _, err := net.SplitHostPort(m.ClientAddr)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if h, _, _ := net.SplitHostPort(a); h == host {
				out = append(out, relayTarget{addr: a, peerName: m.RaftAddr})
				break
			}
		}
	}
	return out
}
