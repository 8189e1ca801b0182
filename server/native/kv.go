package native

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/wallclock"
	"github.com/zkbridge/zkbridge/zkproto"
)

// view opens a read view: after a read index (linearizable) unless
// serializable.
func (s *Server) view(ctx context.Context, serializable bool) (*sm.View, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	if !serializable {
		if err := s.node.CatchUp(ctx); err != nil {
			return nil, status.Errorf(codes.Unavailable, "read index: %v", err)
		}
	}
	v, err := s.node.View()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "read view: %v", err)
	}
	return v, nil
}

func statOf(st zkproto.Stat) *zkbridgev1.Stat {
	return &zkbridgev1.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version,
		Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner, DataLength: st.DataLength,
		NumChildren: st.NumChildren, Pzxid: st.Pzxid}
}

// readable checks READ on n for a caller without identities (world).
func readable(n *sm.Node, op, path string) error {
	if !sm.CheckACL(n.ACL, zkproto.PermRead, nil, "") {
		return status.Errorf(codes.PermissionDenied, "%s %s: no READ permission for an unauthenticated caller", op, path)
	}
	return nil
}

// readNode checks a read's tenant and path, opens a view and reads the
// node, which the caller must be allowed to READ. Close the view.
func (s *Server) readNode(ctx context.Context, op, tenant, path string, serializable bool) (*sm.View, *sm.Node, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, nil, err
	}
	if err := checkPath(op, path); err != nil {
		return nil, nil, err
	}
	v, err := s.view(ctx, serializable)
	if err != nil {
		return nil, nil, err
	}
	n, err := v.Get(path)
	if err == nil {
		err = readable(n, op, path)
	} else {
		err = codeOf(op, path, err)
	}
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	return v, n, nil
}

// Get reads one znode.
func (s *Server) Get(ctx context.Context, r *zkbridgev1.GetRequest) (*zkbridgev1.GetResponse, error) {
	v, n, err := s.readNode(ctx, "get", r.Tenant, r.Path, r.Serializable)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	zxid, _ := v.LastZxid()
	return &zkbridgev1.GetResponse{Data: n.Data, Stat: statOf(n.Stat), Zxid: zxid}, nil
}

// List reads a znode's children.
func (s *Server) List(ctx context.Context, r *zkbridgev1.ListRequest) (*zkbridgev1.ListResponse, error) {
	v, _, err := s.readNode(ctx, "list", r.Tenant, r.Path, r.Serializable)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	names, st, err := v.Children(r.Path)
	if err != nil {
		return nil, codeOf("list", r.Path, err)
	}
	zxid, _ := v.LastZxid()
	return &zkbridgev1.ListResponse{Children: names, Stat: statOf(st), Zxid: zxid}, nil
}

// nativeAuth marks a write as the native API's: cutover policies in mode
// native admit only these (sm.NativeOrigin).
var nativeAuth = []zkproto.Id{sm.NativeOrigin}

// propose proposes a write without a session and maps its outcome.
func (s *Server) propose(op sm.Op) (*sm.Result, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	op, limited := s.limited(op)
	res, err := s.node.ProposeSync(&sm.Command{Header: sm.Header{Time: wallclock.NowMilli(), Auth: nativeAuth}, Op: op})
	if err != nil {
		return nil, err
	}
	s.countQuota(limited, res)
	if res.Err != zkproto.ErrOK {
		return res, res.Err
	}
	return res, nil
}

// Put creates or replaces a persistent znode's data.
func (s *Server) Put(ctx context.Context, r *zkbridgev1.PutRequest) (*zkbridgev1.PutResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	if err := checkPath("put", r.Path); err != nil {
		return nil, err
	}
	if int64(len(r.Data)) > int64(s.cfg.MaxBuffer) {
		return nil, status.Errorf(codes.InvalidArgument, "put %s: %d bytes of data, more than jute.maxbuffer (%d)", r.Path, len(r.Data), s.cfg.MaxBuffer)
	}
	if r.ExpectedVersion < -1 {
		return nil, status.Errorf(codes.InvalidArgument, "put %s: expected_version %d (want -1 or a version)", r.Path, r.ExpectedVersion)
	}
	for {
		if !r.CreateOnly {
			res, err := s.propose(&sm.SetData{Path: r.Path, Data: r.Data, Version: r.ExpectedVersion})
			if err == nil {
				return &zkbridgev1.PutResponse{Stat: statOf(*res.Stat)}, nil
			}
			if !errors.Is(err, zkproto.ErrNoNode) || r.ExpectedVersion > 0 {
				return nil, codeOf("put", r.Path, err)
			}
		}
		res, err := s.propose(&sm.Create{OpCode: zkproto.OpCreate2, Path: r.Path, Data: r.Data, ACL: zkproto.OpenACLUnsafe()})
		switch {
		case err == nil:
			return &zkbridgev1.PutResponse{Stat: statOf(*res.Stat), Created: true}, nil
		case errors.Is(err, zkproto.ErrNodeExists) && r.CreateOnly:
			return nil, status.Errorf(codes.FailedPrecondition, "put %s: the znode exists (create_only)", r.Path)
		case errors.Is(err, zkproto.ErrNodeExists):
			continue // created meanwhile: set it
		}
		return nil, codeOf("put", r.Path, err)
	}
}

// Delete removes a znode.
func (s *Server) Delete(ctx context.Context, r *zkbridgev1.DeleteRequest) (*zkbridgev1.DeleteResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	if err := checkPath("delete", r.Path); err != nil {
		return nil, err
	}
	if _, err := s.propose(&sm.Delete{Path: r.Path, Version: r.ExpectedVersion}); err != nil {
		return nil, codeOf("delete", r.Path, err)
	}
	return &zkbridgev1.DeleteResponse{}, nil
}

// AllocateID reserves [first, first+count) from a counter znode in one
// replicated entry (sm.Increment): the counter's setData as Curator's
// DistributedAtomicLong would write it, applied atomically, so concurrent
// AllocateIDs never retry and ZooKeeper-mode compare-and-set increments of
// the same counter never overlap with them.
func (s *Server) AllocateID(ctx context.Context, r *zkbridgev1.AllocateIDRequest) (*zkbridgev1.AllocateIDResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	if err := checkPath("allocate-id", r.CounterPath); err != nil {
		return nil, err
	}
	if r.Count < 1 {
		return nil, status.Errorf(codes.InvalidArgument, "allocate-id %s: count %d (want at least 1)", r.CounterPath, r.Count)
	}
	res, err := s.propose(&sm.Increment{Path: r.CounterPath, Delta: r.Count})
	if errors.Is(err, zkproto.ErrBadArguments) {
		return nil, status.Errorf(codes.FailedPrecondition, "allocate-id %s: the znode is not an 8-byte counter, or adding %d would overflow it", r.CounterPath, r.Count)
	}
	if err != nil {
		return nil, codeOf("allocate-id", r.CounterPath, err)
	}
	s.activity.counter(r.CounterPath)
	return &zkbridgev1.AllocateIDResponse{First: res.Counter, Last: res.Counter + r.Count - 1}, nil
}
