package native

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Server is the native gRPC door of one node.
type Server struct {
	zkbridgev1.UnimplementedBridgeServer

	cfg  config.Config
	log  zerolog.Logger
	node *node.Node

	applied *appliedSignal
	// activity is what the web console's Bridge page shows of this door.
	activity *activity
	// closing is closed when Close begins: streams end.
	closing   chan struct{}
	closeOnce sync.Once

	ln     net.Listener
	grpc   *grpc.Server
	health *health.Server
	wg     sync.WaitGroup

	// router finds the door of a tenant a request names (tenants.go).
	router TenantRouter
	// tenantAdmin serves the registry RPCs (tenantapi.go); nil on a
	// tenant's own door.
	tenantAdmin TenantAdmin
	// limiter is a tenant's limits, shared with its ZooKeeper door
	// (limits.go).
	limiter limiterSlot
	// remote proxies requests for tenants hosted elsewhere (forward.go).
	remote TenantRemote
}

// New creates the door of node n. Call it before n.Start.
func New(cfg config.Config, n *node.Node, log zerolog.Logger) *Server {
	s := &Server{cfg: cfg, log: log.With().Str("door", "native").Logger(), node: n, health: health.NewServer(), applied: newAppliedSignal(), closing: make(chan struct{}), activity: newActivity()}
	n.Subscribe(node.Hooks{
		Applied:    func([]*sm.Result) { s.applied.fire() },
		LeaderLost: func(_ time.Duration) { s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING) },
		LeaderBack: func() { s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING) },
	})
	return s
}

// Listen binds cfg.NativeAddr.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.NativeAddr)
	if err != nil {
		return fmt.Errorf("listen on native address %s: %w (use --native-addr to move it, or --native-addr= to turn it off)", s.cfg.NativeAddr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Close.
func (s *Server) Serve() {
	// ConnectionTimeout bounds a connection that never completes its
	// HTTP/2 (or TLS) handshake, as the ZooKeeper port's sessionless
	// timeout does (grpc-go's own default is 120 s).
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(s.cfg.MaxBuffer+64<<10), grpc.MaxSendMsgSize(s.cfg.MaxBuffer+64<<10),
		grpc.ConnectionTimeout(s.cfg.Limits.SessionlessTimeout),
		grpc.ChainUnaryInterceptor(s.tenantUnary), grpc.ChainStreamInterceptor(s.tenantStream))
	zkbridgev1.RegisterBridgeServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(s.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error().Err(err).Msg("native API stopped")
		}
	}()
}

// closeGrace bounds how long Close lets in-flight calls finish.
const closeGrace = 2 * time.Second

// Close stops the door: the change-feed streams end at once, in-flight
// unary calls may finish for closeGrace, then every connection is closed
// (a client holding a keep-alive stream open cannot hold up a shutdown).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	if s.grpc != nil {
		s.health.Shutdown()
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeGrace):
			s.grpc.Stop()
			<-done
		}
	} else if s.ln != nil {
		s.ln.Close()
	}
	s.wg.Wait()
}

// checkTenant refuses a request that still names a tenant: the
// interceptor (tenants.go) routed a known one and cleared its field, so a
// name here is one it could not place.
func checkTenant(t string) error {
	if t != "" {
		return UnknownTenant(t)
	}
	return nil
}

// checkPath refuses a path ZooKeeper would refuse.
func checkPath(op, p string) error {
	if err := zkproto.ValidatePath(p); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: %v", op, err)
	}
	return nil
}

// codeOf maps a ZooKeeper error code to a gRPC status.
func codeOf(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var zc zkproto.ErrCode
	if !errors.As(err, &zc) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return status.Errorf(codes.DeadlineExceeded, "%s %s: %v", op, path, err)
		}
		return status.Errorf(codes.Unavailable, "%s %s: %v (the outcome is unknown; retry where that is safe)", op, path, err)
	}
	c := codes.Internal
	switch zc {
	case zkproto.ErrNoNode:
		c = codes.NotFound
	case zkproto.ErrNodeExists:
		c = codes.AlreadyExists
	case zkproto.ErrBadVersion:
		c = codes.Aborted
	case zkproto.ErrNoAuth, zkproto.ErrAuthFailed:
		c = codes.PermissionDenied
	case zkproto.ErrBadArguments, zkproto.ErrNoChildrenForEphemerals, zkproto.ErrInvalidACL:
		c = codes.InvalidArgument
	case zkproto.ErrNotEmpty:
		c = codes.FailedPrecondition
	case zkproto.ErrSessionExpired:
		c = codes.NotFound
	case zkproto.ErrQuotaExceeded:
		c = codes.ResourceExhausted
	case zkproto.ErrConnectionLoss, zkproto.ErrOperationTimeout:
		c = codes.Unavailable
	}
	return status.Errorf(c, "%s %s: %v", op, path, zc)
}

// serving refuses requests while the node has no leader.
func (s *Server) serving() error {
	if !s.node.Serving() {
		return status.Error(codes.Unavailable, "this node has no Raft leader: try another node")
	}
	return nil
}

// randomID is a nonzero random connection id for a lease's writes.
func randomID() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return binary.BigEndian.Uint64(b[:]) | 1
}
