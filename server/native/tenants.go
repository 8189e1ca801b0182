package native

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// Every request names its tenant (empty: the default tenant). The node's
// one gRPC listener serves them all: an interceptor reads the request's
// tenant field and hands a named tenant's call to that tenant's door, a
// Server over the tenant's node that has no listener of its own, with the
// field cleared (to that door, its tenant is the only one). So every
// handler stays written for one tenant, as the ZooKeeper door is.

// TenantRouter finds the door of a tenant this node serves; it returns an
// error (a gRPC status) for a tenant unknown or not hosted here.
type TenantRouter func(name string) (*Server, error)

// SetTenantRouter routes requests naming a tenant (call before Serve).
func (s *Server) SetTenantRouter(r TenantRouter) { s.router = r }

// UnknownTenant is the status of a request naming a tenant the registry
// does not have.
func UnknownTenant(name string) error {
	return status.Errorf(codes.InvalidArgument, "unknown tenant %q (zkbridge tenant list shows them; \"\" is the default tenant)", name)
}

// tenantField is the request's top-level string field "tenant", if any.
func tenantField(m proto.Message) (protoreflect.FieldDescriptor, string) {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("tenant")
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
		return nil, ""
	}
	return fd, r.Get(fd).String()
}

// route returns the door for a request's tenant (nil: this one, the
// default tenant's) and clears the field in the request it hands on; or,
// for a tenant hosted by other nodes, the connection to proxy the request
// over (the field kept).
func (s *Server) route(ctx context.Context, req any) (*Server, grpc.ClientConnInterface, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return nil, nil, nil
	}
	fd, name := tenantField(m)
	if name == "" {
		return nil, nil, nil
	}
	if s.router == nil {
		return nil, nil, UnknownTenant(name)
	}
	door, err := s.router(name)
	if err != nil {
		cc, err := s.remoteFor(ctx, name, err)
		return nil, cc, err
	}
	m.ProtoReflect().Clear(fd)
	return door, nil, nil
}

var (
	methodsOnce sync.Once
	unary       map[string]grpc.MethodDesc
	streams     map[string]grpc.StreamDesc
)

func bridgeMethods() {
	methodsOnce.Do(func() {
		unary, streams = map[string]grpc.MethodDesc{}, map[string]grpc.StreamDesc{}
		prefix := "/" + zkbridgev1.Bridge_ServiceDesc.ServiceName + "/"
		for _, m := range zkbridgev1.Bridge_ServiceDesc.Methods {
			unary[prefix+m.MethodName] = m
		}
		for _, st := range zkbridgev1.Bridge_ServiceDesc.Streams {
			streams[prefix+st.StreamName] = st
		}
	})
}

// tenantUnary hands a unary call naming a tenant to its door.
func (s *Server) tenantUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !strings.HasPrefix(info.FullMethod, "/"+zkbridgev1.Bridge_ServiceDesc.ServiceName+"/") {
		return handler(ctx, req)
	}
	door, remote, err := s.route(ctx, req)
	if err != nil {
		return nil, err
	}
	if remote != nil {
		return s.forwardUnary(ctx, remote, info.FullMethod, req)
	}
	if door == nil {
		return handler(ctx, req)
	}
	if err := door.admitRequest(info.FullMethod); err != nil {
		return nil, err
	}
	bridgeMethods()
	md, ok := unary[info.FullMethod]
	if !ok {
		return handler(ctx, req)
	}
	dec := func(v any) error {
		proto.Merge(v.(proto.Message), req.(proto.Message))
		return nil
	}
	return md.Handler(door, ctx, dec, nil)
}

// tenantStream hands a stream whose first message names a tenant to its
// door; the first message is read here and replayed to the handler, and
// the tenant field of every later message is cleared too.
func (s *Server) tenantStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	bridgeMethods()
	sd, ok := streams[info.FullMethod]
	first := requestOf(info.FullMethod)
	if !ok || first == nil {
		return handler(srv, ss)
	}
	if err := ss.RecvMsg(first); err != nil {
		if errors.Is(err, io.EOF) {
			// The client closed its side without a message (an import
			// pass with nothing to send): the handler sees that end too.
			return handler(srv, ss)
		}
		return err
	}
	_, name := tenantField(first)
	door, remote, err := s.route(ss.Context(), first)
	if err != nil {
		return err
	}
	if remote != nil {
		return s.forwardStream(ss, remote, info.FullMethod, sd, first)
	}
	peek := &peekStream{ServerStream: ss, first: first}
	if door == nil {
		return handler(srv, peek)
	}
	peek.tenant = name
	if err := door.admitRequest(info.FullMethod); err != nil {
		return err
	}
	return sd.Handler(door, peek)
}

func bridgeServiceName() protoreflect.Name {
	full := zkbridgev1.Bridge_ServiceDesc.ServiceName
	return protoreflect.Name(full[strings.LastIndex(full, ".")+1:])
}

// requestOf is a new request message of a Bridge method, nil if unknown.
func requestOf(fullMethod string) proto.Message {
	name := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	svc := zkbridgev1.File_zkbridge_v1_bridge_proto.Services().ByName(bridgeServiceName())
	if svc == nil {
		return nil
	}
	md := svc.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil
	}
	return mt.New().Interface()
}

// peekStream is a ServerStream whose first RecvMsg is the message read
// ahead; on a routed stream, later messages of the same tenant have their
// field cleared and another tenant is refused.
type peekStream struct {
	grpc.ServerStream
	first  proto.Message
	tenant string
}

func (p *peekStream) RecvMsg(m any) error {
	if p.first != nil {
		proto.Merge(m.(proto.Message), p.first)
		p.first = nil
		return nil
	}
	if err := p.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if p.tenant == "" {
		return nil
	}
	msg, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	fd, name := tenantField(msg)
	switch {
	case fd == nil || name == "":
	case name == p.tenant:
		msg.ProtoReflect().Clear(fd)
	default:
		return status.Errorf(codes.InvalidArgument, "a stream of tenant %q carried a message of tenant %q", p.tenant, name)
	}
	return nil
}
