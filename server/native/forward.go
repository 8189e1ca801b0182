package native

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// A request for a tenant this node does not host is proxied to a node
// that hosts it, as the tenant's ZooKeeper connections are forwarded: the
// call goes on, unchanged (its tenant field kept, for the hosting node to
// route), with the caller's deadline, cancellation and metadata; the
// answer, its status, headers and trailers come back as the hosting node
// gave them. Streams are proxied message by message in both directions.

// TenantRemote returns a connection to a node hosting a tenant this node
// does not host (an error status when none can be had).
type TenantRemote func(name string) (grpc.ClientConnInterface, error)

// SetTenantRemote makes requests for tenants hosted elsewhere proxied
// through remote (call before Serve).
func (s *Server) SetTenantRemote(remote TenantRemote) { s.remote = remote }

// forwardedBy marks a proxied call, so that a node never proxies it again
// (placement views differ for a moment while the registry changes).
const forwardedBy = "x-zkbridge-forwarded-by"

// remoteFor returns the connection a call for tenant name is proxied
// over, or nil when it is not to be proxied (ctx is already a proxied
// call, or proxying is off): notHere is then the answer.
func (s *Server) remoteFor(ctx context.Context, name string, notHere error) (grpc.ClientConnInterface, error) {
	if s.remote == nil || status.Code(notHere) != codes.Unavailable {
		return nil, notHere
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get(forwardedBy)) > 0 {
		return nil, notHere
	}
	return s.remote(name)
}

// outgoing carries the caller's metadata (less the transport's own
// headers) and the proxy mark onto the proxied call; the deadline and
// cancellation come with ctx.
func (s *Server) outgoing(ctx context.Context) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" {
			continue
		}
		out[k] = v
	}
	out.Set(forwardedBy, s.cfg.PeerAddr)
	return metadata.NewOutgoingContext(ctx, out)
}

// forwardUnary proxies a unary call.
func (s *Server) forwardUnary(ctx context.Context, cc grpc.ClientConnInterface, method string, req any) (any, error) {
	reply := responseOf(method)
	if reply == nil {
		return nil, status.Errorf(codes.Unimplemented, "%s cannot be proxied to the node hosting its tenant", method)
	}
	var header, trailer metadata.MD
	err := cc.Invoke(s.outgoing(ctx), method, req, reply, grpc.Header(&header), grpc.Trailer(&trailer))
	if len(header) > 0 {
		_ = grpc.SetHeader(ctx, header)
	}
	if len(trailer) > 0 {
		grpc.SetTrailer(ctx, trailer)
	}
	if err != nil {
		return nil, err
	}
	return reply, nil
}

// forwardStream proxies a stream whose first message was read already.
func (s *Server) forwardStream(ss grpc.ServerStream, cc grpc.ClientConnInterface, method string, sd grpc.StreamDesc, first proto.Message) error {
	ctx, cancel := context.WithCancel(s.outgoing(ss.Context()))
	defer cancel()
	cs, err := cc.NewStream(ctx, &grpc.StreamDesc{StreamName: sd.StreamName, ServerStreams: sd.ServerStreams, ClientStreams: sd.ClientStreams}, method)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(first); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if !sd.ClientStreams {
		if err := cs.CloseSend(); err != nil {
			return err
		}
	} else {
		go func() {
			for {
				m := requestOf(method)
				if err := ss.RecvMsg(m); err != nil {
					if errors.Is(err, io.EOF) {
						_ = cs.CloseSend()
					} else {
						cancel() // the caller went: end the proxied call
					}
					return
				}
				if err := cs.SendMsg(m); err != nil {
					return // the proxied call ended; its status comes below
				}
			}
		}()
	}
	headerSent := false
	for {
		m := responseOf(method)
		err := cs.RecvMsg(m)
		if !headerSent {
			if h, herr := cs.Header(); herr == nil && len(h) > 0 {
				_ = ss.SetHeader(h)
			}
			headerSent = true
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}

// responseOf is a new response message of a Bridge method, nil if unknown.
func responseOf(fullMethod string) proto.Message {
	name := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	svc := zkbridgev1.File_zkbridge_v1_bridge_proto.Services().ByName(bridgeServiceName())
	if svc == nil {
		return nil
	}
	md := svc.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil
	}
	return mt.New().Interface()
}
