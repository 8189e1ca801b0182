package server

import (
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/zkbridge/zkbridge/server/native"
	"github.com/zkbridge/zkbridge/server/tlsconf"
)

// nativeTenantDoor is the native API's router: the door of a tenant this
// node serves, with the tenant's limits (shared with its ZooKeeper door,
// so both APIs draw on one budget and one set of counters).
func (s *Server) nativeTenantDoor(name string) (*native.Server, error) {
	door, err := s.tenants.nativeDoor(name)
	if err != nil {
		return nil, err
	}
	if t := s.tenants.get(name); t != nil && t.bridge == door {
		door.SetLimiter(t.door)
	}
	return door, nil
}

// nativeRemotes are the gRPC connections to other nodes' native ports,
// over which requests for tenants this node does not host are proxied.
type nativeRemotes struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
	tls   *tlsconf.Source // the node's ssl.* when the native port is TLS
}

// nativeTenantRemote returns a connection to a node hosting tenant name:
// its native port is this node's port number on the host of its client
// address (as a tenant's own ports, the native port is the same number
// on every node).
func (s *Server) nativeTenantRemote(name string) (grpc.ClientConnInterface, error) {
	spec, err := s.node.LookupTenant(name)
	if err != nil {
		return nil, native.UnknownTenant(name)
	}
	_, port, err := net.SplitHostPort(s.native.Addr())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "tenant %q: this node's native address: %v", name, err)
	}
	dir := s.node.Membership().Directory
	for _, id := range spec.Replicas {
		if id == s.cfg.ReplicaID {
			continue // placed here but not serving yet: not a target
		}
		host, _, err := net.SplitHostPort(dir[id].ClientAddr)
		if err != nil {
			continue
		}
		cc, err := s.remotes.conn(s, net.JoinHostPort(host, port))
		if err != nil {
			s.log.Warn().Err(err).Str("tenant", name).Uint64("replica", id).Msg("native API: connecting to a node hosting the tenant")
			continue
		}
		return cc, nil
	}
	return nil, status.Errorf(codes.Unavailable, "tenant %q is not served by this node and no node hosting it (replicas %v) can be reached; retry, or ask one of them", name, spec.Replicas)
}

// conn returns the (shared, lazily connecting) connection to addr.
func (r *nativeRemotes) conn(s *Server, addr string) (*grpc.ClientConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cc := r.conns[addr]; cc != nil {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if s.cfg.TLS.NativeTLS() {
		// The node's own certificate as the client's: every node's native
		// port trusts the store the nodes' certificates chain to.
		if r.tls == nil {
			src, err := tlsconf.NewSource(s.cfg.TLS.Client, "ssl", s.log.With().Str("component", "tls").Logger())
			if err != nil {
				return nil, fmt.Errorf("native API proxy TLS: %w", err)
			}
			r.tls = src
		}
		creds = credentials.NewTLS(r.tls.ClientConfig(addr, "h2"))
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	if r.conns == nil {
		r.conns = map[string]*grpc.ClientConn{}
	}
	r.conns[addr] = cc
	return cc, nil
}

func (r *nativeRemotes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for addr, cc := range r.conns {
		cc.Close()
		delete(r.conns, addr)
	}
}
