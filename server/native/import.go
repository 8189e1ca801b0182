package native

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zkbridge/zkbridge/wallclock"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// The migration import: `zkbridge migrate import|convert|live` load a
// ZooKeeper ensemble's tree and sessions through these calls, on any node
// (the writes are proposed through Raft like every native write). They are
// protected like the rest of the native port: bind it to a trusted network,
// and use its TLS settings where the server has them.

// importWindow is how many batches one Import stream keeps in flight:
// enough to overlap Raft round trips, few enough to bound memory. Batches
// from one proposer are applied in the order proposed.
const importWindow = 4

// ImportBegin checks the target subtrees and raises zxidBase.
func (s *Server) ImportBegin(ctx context.Context, r *zkbridgev1.ImportBeginRequest) (*zkbridgev1.ImportBeginResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	for _, p := range r.Subtrees {
		if err := checkPath("import begin", p); err != nil {
			return nil, err
		}
	}
	v, err := s.view(ctx, false)
	if err != nil {
		return nil, err
	}
	if !r.Merge {
		for _, p := range r.Subtrees {
			if msg, err := nonEmpty(v, p); err != nil || msg != "" {
				v.Close()
				if err != nil {
					return nil, status.Errorf(codes.Internal, "import begin %s: %v", p, err)
				}
				return nil, status.Errorf(codes.FailedPrecondition, "import begin: the target is not empty: %s (import into an empty subtree, or pass --merge to keep the nodes there and add the missing ones)", msg)
			}
		}
	}
	v.Close()
	last, err := s.raiseZxidBase(ctx, r.MinZxidBase)
	if err != nil {
		return nil, err
	}
	s.log.Info().Strs("subtrees", r.Subtrees).Bool("merge", r.Merge).Int64("last_zxid", last).Msg("migration import begins")
	return &zkbridgev1.ImportBeginResponse{LastZxid: last}, nil
}

// nonEmpty describes why subtree p is not empty ("" when it is): / is
// empty with only /zookeeper's special nodes in it.
func nonEmpty(v *sm.View, p string) (string, error) {
	kids, _, err := v.Children(p)
	if errors.Is(err, zkproto.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if p != zkproto.RootPath {
		return fmt.Sprintf("%s exists", p), nil
	}
	for _, k := range kids {
		if k != "zookeeper" {
			return fmt.Sprintf("/%s exists", k), nil
		}
	}
	return "", nil
}

// raiseZxidBase makes the target's next zxid at least base and returns the
// last zxid after it.
func (s *Server) raiseZxidBase(ctx context.Context, base int64) (int64, error) {
	v, err := s.view(ctx, false)
	if err != nil {
		return 0, err
	}
	last, err := v.LastZxid()
	v.Close()
	if err != nil {
		return 0, status.Errorf(codes.Internal, "read the last zxid: %v", err)
	}
	if base <= 0 || last >= base {
		return last, nil
	}
	res, err := s.propose(&sm.SetZxidBase{Base: base})
	if err != nil {
		return 0, codeOf("raise zxid base", fmt.Sprintf("to %#x", base), err)
	}
	s.log.Info().Str("zxid_base", fmt.Sprintf("%#x", base)).Msg("zxidBase raised for a migration")
	return res.Zxid, nil
}

// ImportFinish raises zxidBase once more (the source may have moved on).
func (s *Server) ImportFinish(ctx context.Context, r *zkbridgev1.ImportFinishRequest) (*zkbridgev1.ImportFinishResponse, error) {
	if err := checkTenant(r.Tenant); err != nil {
		return nil, err
	}
	last, err := s.raiseZxidBase(ctx, r.MinZxidBase)
	if err != nil {
		return nil, err
	}
	return &zkbridgev1.ImportFinishResponse{LastZxid: last}, nil
}

// importResult is the outcome of one proposed batch.
type importResult struct {
	nodes, sessions int64
	zxid            int64
	err             error
}

// Import applies the streamed batches in order, importWindow at a time,
// and answers each applied batch with the running totals.
func (s *Server) Import(stream zkbridgev1.Bridge_ImportServer) error {
	out := &zkbridgev1.ImportResponse{}
	inflight := make(chan chan importResult, importWindow)
	// collect waits for the oldest batch in flight and acknowledges it.
	collect := func() error {
		r := <-<-inflight
		if r.err != nil {
			return r.err
		}
		out.Batches++
		out.Nodes += r.nodes
		out.Sessions += r.sessions
		out.LastZxid = max(out.LastZxid, r.zxid)
		return stream.Send(&zkbridgev1.ImportResponse{Batches: out.Batches, Nodes: out.Nodes, Sessions: out.Sessions, LastZxid: out.LastZxid})
	}
	drain := func(first error) error {
		for len(inflight) > 0 {
			if err := collect(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return drain(err)
		}
		ops, nodes, err := importOps(b)
		if err != nil {
			return drain(err)
		}
		if err := s.serving(); err != nil {
			return drain(err)
		}
		if len(inflight) == cap(inflight) {
			if err := collect(); err != nil {
				return drain(err)
			}
		}
		done := make(chan importResult, 1)
		inflight <- done
		s.proposeBatch(ops, nodes, int64(len(b.Sessions)), done)
	}
	return drain(nil)
}

// proposeBatch proposes a batch's commands in order (the proposals are
// queued before it returns, so batches apply in stream order) and reports
// on done once all are applied.
func (s *Server) proposeBatch(ops []sm.Op, nodes, sessions int64, done chan<- importResult) {
	results := make([]chan importResult, len(ops))
	for i, op := range ops {
		ch := make(chan importResult, 1)
		results[i] = ch
		// Into a tenant, a batch is a write like any other: its limits
		// are checked in apply, the whole batch refused past them.
		limitedOp, limited := s.limited(op)
		s.node.Propose(&sm.Command{Header: sm.Header{Time: wallclock.NowMilli(), Auth: nativeAuth}, Op: limitedOp}, func(res *sm.Result, err error) {
			s.countQuota(limited, res)
			if err == nil && res.Err != zkproto.ErrOK {
				err = res.Err
			}
			var r importResult
			switch {
			case err != nil && limited && errors.Is(err, zkproto.ErrQuotaExceeded):
				maxZnodes, maxBytes := s.limits().QuotaLimits()
				r.err = status.Errorf(codes.ResourceExhausted, "import: this batch would take the tenant past its limits (max-znodes %d, max-bytes %d; 0 is none); nothing of it was imported, the batches before it were; raise them with `zkbridge tenant update --max-znodes N --max-bytes B` and run the import again with --merge", maxZnodes, maxBytes)
			case err != nil:
				path := ""
				if res != nil {
					path = res.Path
				}
				r.err = codeOf(fmt.Sprintf("import (%T)", op), path, err)
			default:
				r.zxid = res.Zxid
			}
			ch <- r
		})
	}
	go func() {
		r := importResult{nodes: nodes, sessions: sessions}
		for _, ch := range results {
			x := <-ch
			if x.err != nil && r.err == nil {
				r.err = x.err
			}
			r.zxid = max(r.zxid, x.zxid)
		}
		done <- r
	}()
}

// importOps converts a batch to its replicated commands.
func importOps(b *zkbridgev1.ImportBatch) ([]sm.Op, int64, error) {
	if err := checkTenant(b.Tenant); err != nil {
		return nil, 0, err
	}
	var ops []sm.Op
	if len(b.Sessions) > 0 {
		in := &sm.ImportSessions{Sessions: make([]sm.ImportedSession, 0, len(b.Sessions))}
		for _, x := range b.Sessions {
			in.Sessions = append(in.Sessions, sm.ImportedSession{ID: x.Id, Timeout: x.TimeoutMs, Password: x.Password})
		}
		ops = append(ops, in)
	}
	nodes := make([]sm.ImportedNode, 0, len(b.Nodes))
	var acl []zkproto.ACL // the previous node's: nodes mostly share one
	for _, n := range b.Nodes {
		if !sameACL(acl, n.Acl) {
			acl = nil
			for _, a := range n.Acl {
				acl = append(acl, zkproto.ACL{Perms: a.Perms, ID: zkproto.Id{Scheme: a.Scheme, ID: a.Id}})
			}
		}
		nodes = append(nodes, importedNode(n, acl))
	}
	switch {
	case b.Update:
		if len(nodes) > 0 || len(b.Deletes) > 0 {
			ops = append(ops, &sm.ImportUpdate{Deletes: b.Deletes, Nodes: nodes})
		}
	case len(b.Deletes) > 0:
		return nil, 0, status.Error(codes.InvalidArgument, "import: deletes are only allowed in an update batch")
	case len(nodes) > 0:
		ops = append(ops, &sm.ImportNodes{Nodes: nodes, Merge: b.Merge})
	}
	return ops, int64(len(nodes) + len(b.Deletes)), nil
}

// importedNode converts n, whose ACL is acl (read-only: nodes share it).
func importedNode(n *zkbridgev1.ImportedNode, acl []zkproto.ACL) sm.ImportedNode {
	out := sm.ImportedNode{Path: n.Path, Data: n.Data, Czxid: n.Czxid, Mzxid: n.Mzxid, Pzxid: n.Pzxid, Ctime: n.Ctime,
		Mtime: n.Mtime, Version: n.Version, Aversion: n.Aversion, EphemeralOwner: n.EphemeralOwner, Creates: n.Creates, ACL: acl}
	if n.NullData {
		out.Data = nil
	} else if out.Data == nil {
		out.Data = []byte{}
	}
	return out
}

// sameACL reports whether acl is the converted pb.
func sameACL(acl []zkproto.ACL, pb []*zkbridgev1.ACL) bool {
	if len(acl) != len(pb) || acl == nil {
		return false
	}
	for i, a := range pb {
		if acl[i].Perms != a.Perms || acl[i].ID.Scheme != a.Scheme || acl[i].ID.ID != a.Id {
			return false
		}
	}
	return true
}
