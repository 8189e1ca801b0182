package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/admin"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/native"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/server/zk"
)

// Config is one node's configuration (server/config).
type Config = config.Config

// RaftStatus is one node's view of the data shard (server/node).
type RaftStatus = node.RaftStatus

// ReplicaStatus is one member of the shard as RaftStatus lists it.
type ReplicaStatus = node.ReplicaStatus

// Defaults of a node started with no configuration at all.
const (
	DefaultDataDir         = config.DefaultDataDir
	DefaultClientAddr      = config.DefaultClientAddr
	DefaultAdminAddr       = config.DefaultAdminAddr
	DefaultNativeAddr      = config.DefaultNativeAddr
	DefaultPeerAddr        = config.DefaultPeerAddr
	DefaultSnapshotEntries = config.DefaultSnapshotEntries
	DefaultSnapshotBytes   = config.DefaultSnapshotBytes
	DefaultElectionTimeout = config.DefaultElectionTimeout
)

// LoadConfigFile reads a zoo.cfg or a YAML configuration.
func LoadConfigFile(path string) (Config, error) { return config.LoadConfigFile(path) }

// ZooKeeperVersion is the version zkbridge reports where ZooKeeper reports
// its own.
const ZooKeeperVersion = zk.ZooKeeperVersion

// Server is one zkbridge node: the replicated core and its front doors.
type Server struct {
	cfg    Config
	log    zerolog.Logger
	node   *node.Node
	zk     *zk.Server
	native *native.Server // nil when off
	admin  *admin.Server
	// tenants are the other tenants this node serves (tenants.go).
	tenants *tenantSet
	// identityFwd forwards TLS clients whose identity selects a tenant
	// hosted by other nodes (tenant_identity.go).
	identityFwd *forwarder
	// remotes carry native requests for tenants hosted elsewhere
	// (tenant_native.go).
	remotes nativeRemotes

	stopOnce sync.Once
}

// New prepares a node from cfg (Normalize and Validate are applied).
func New(cfg Config, log zerolog.Logger) (*Server, error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log}
	s.node = node.New(cfg, log)
	s.zk = zk.New(cfg, s.node, log)
	s.tenants = newTenantSet(s)
	// Tenants selected by TLS identity on the node's secure port.
	s.identityFwd = newConnForwarder(log.With().Str("component", "tenant-identity").Logger())
	s.zk.SetIdentityRouter(s.identityRouter())
	if cfg.NativeAddr != "" {
		s.native = native.New(cfg, s.node, log)
		s.native.SetTenantRouter(s.nativeTenantDoor)
		s.native.SetTenantRemote(s.nativeTenantRemote)
		s.native.SetTenantAdmin(tenantNative{s})
	}
	if !cfg.AdminDisabled {
		s.admin = admin.New(cfg.AdminAddr, s.node, s.zk, s.Status, log)
		console := admin.ConsoleOptions{Users: cfg.AdminUsers, Writes: cfg.ConsoleWrites, SuperDigest: cfg.SuperDigest,
			X509SuperUser: cfg.TLS.X509SuperUser, Version: zk.ZooKeeperVersion}
		if s.native != nil {
			console.Bridge = s.native.Activity
		}
		s.admin.EnableConsole(console)
		s.admin.SetTenants(tenantAdmin{s})
		s.node.SetProgressSource(admin.FetchProgress)
	}
	return s, nil
}

// Config returns the node's effective configuration.
func (s *Server) Config() Config { return s.cfg }

// Node is the replicated core, for a front door or a test that works
// through it alone.
func (s *Server) Node() *node.Node { return s.node }

// Open binds the ports, starts Raft and the front doors, and returns
// without waiting for a quorum: like a ZooKeeper server, the node keeps
// looking for its peers for as long as it runs, refusing sessions (and
// answering "not currently serving" to most four-letter words) until a
// leader is known.
func (s *Server) Open() error {
	started := time.Now()
	for _, w := range s.cfg.Warnings {
		s.log.Warn().Str("config", s.cfg.Source).Msg(w)
	}
	// Bind first: a port in use should fail fast, before Raft opens its logs.
	if err := s.zk.Listen(); err != nil {
		return err
	}
	addrs := node.Addresses{Client: s.zk.Addr()}
	closeAll := func() {
		s.zk.Close()
		if s.native != nil {
			s.native.Close()
		}
		if s.admin != nil {
			s.admin.Shutdown()
		}
	}
	if s.native != nil {
		if err := s.native.Listen(); err != nil {
			if !s.cfg.NativeOptional {
				closeAll()
				return err
			}
			s.log.Warn().Err(err).Msg("serving without the native API: its default address is in use (set --native-addr)")
			s.native = nil
		}
	}
	if s.admin != nil {
		if err := s.admin.Listen(); err != nil {
			closeAll()
			return err
		}
		addrs.Admin = s.admin.Addr()
		s.cfg.AdminAddr = addrs.Admin
	}
	if err := s.secureDoors(); err != nil {
		closeAll()
		return err
	}
	if err := s.node.Start(addrs); err != nil {
		closeAll()
		return err
	}
	s.zk.Serve()
	s.tenants.start()
	if s.native != nil {
		s.native.Serve()
	}
	if s.admin != nil {
		s.admin.Serve()
	}
	s.log.Info().Str("client_addr", addrs.Client).Str("admin_addr", addrs.Admin).Str("native_addr", s.NativeAddr()).
		Str("data_dir", s.cfg.DataDir).Uint64("replica_id", s.cfg.ReplicaID).
		Dur("startup", time.Since(started)).Msg("zkbridge listening")
	return nil
}

// Start is Open, then waits until the node serves or ctx ends; then it
// stops the node and returns the error.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Open(); err != nil {
		return err
	}
	if err := s.WaitServing(ctx); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// WaitServing blocks until the node has a leader and serves, or ctx ends.
func (s *Server) WaitServing(ctx context.Context) error { return s.node.WaitServing(ctx) }

// ClientAddr returns the address the client listener is bound to.
func (s *Server) ClientAddr() string { return s.zk.Addr() }

// AdminAddr returns the bound admin address ("" when disabled).
func (s *Server) AdminAddr() string {
	if s.admin == nil {
		return ""
	}
	return s.admin.Addr()
}

// NativeAddr returns the bound native gRPC address ("" when off).
func (s *Server) NativeAddr() string {
	if s.native == nil {
		return ""
	}
	return s.native.Addr()
}

// Ready reports why this node is not ready yet (nil when it is).
func (s *Server) Ready() error { return s.node.Ready() }

// Status returns this node's Raft status with its client connections; the
// membership is read with a quorum round, so it fails without a leader.
func (s *Server) Status(ctx context.Context) (RaftStatus, error) {
	st, err := s.node.Status(ctx)
	st.Connections = s.zk.Connections()
	return st, err
}

// TransferLeader asks the shard to make replica id its leader.
func (s *Server) TransferLeader(ctx context.Context, id uint64) error {
	return s.node.TransferLeader(ctx, id)
}

// ContentHash is a SHA-256 over the local state and the applied index it
// covers: replicas at one index must agree.
func (s *Server) ContentHash() (uint64, string, error) { return s.node.ContentHash() }

// Stop stops accepting, lets in-flight replies leave, syncs the state and
// stops Raft. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.admin != nil {
			s.admin.Shutdown()
		}
		if s.native != nil {
			s.native.Close()
		}
		s.remotes.close()
		s.zk.Close()
		s.identityFwd.close()
		s.tenants.close() // before the NodeHost their replicas run on
		s.node.Stop()
		s.zk.Wait()
		s.log.Info().Msg("zkbridge stopped")
	})
}

// String names the node in logs and test failures.
func (s *Server) String() string {
	return fmt.Sprintf("zkbridge node %d (%s)", s.cfg.ReplicaID, s.zk.Addr())
}
