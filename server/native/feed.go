package native

import (
	"errors"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// The change feed reads the state machine's change log (sm, retained by
// count and bytes): one record per successful transaction, keyed by zxid.
// Streams wait on appliedSignal, which the node's Applied hook fires after
// every batch.

// appliedSignal is closed and replaced after each applied batch.
type appliedSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newAppliedSignal() *appliedSignal { return &appliedSignal{ch: make(chan struct{})} }

// fire runs on the apply path: it must not block.
func (a *appliedSignal) fire() {
	a.mu.Lock()
	close(a.ch)
	a.ch = make(chan struct{})
	a.mu.Unlock()
}

func (a *appliedSignal) wait() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ch
}

// feedBatch bounds the records read from the log at a time.
const feedBatch = 256

// cleanPrefixes checks and normalises subtree prefixes.
func cleanPrefixes(op string, prefixes []string) ([]string, error) {
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		if err := checkPath(op, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// under reports whether path is in one of the subtrees (all: none given).
func under(path string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if p == "/" || path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

var changeTypes = map[sm.ChangeType]zkbridgev1.ChangeType{
	sm.ChangeCreated:        zkbridgev1.ChangeType_CHANGE_TYPE_CREATED,
	sm.ChangeDeleted:        zkbridgev1.ChangeType_CHANGE_TYPE_DELETED,
	sm.ChangeData:           zkbridgev1.ChangeType_CHANGE_TYPE_DATA,
	sm.ChangeACL:            zkbridgev1.ChangeType_CHANGE_TYPE_ACL,
	sm.ChangeSessionCreated: zkbridgev1.ChangeType_CHANGE_TYPE_SESSION_CREATED,
	sm.ChangeSessionClosed:  zkbridgev1.ChangeType_CHANGE_TYPE_SESSION_CLOSED,
}

// filterRecord keeps the changes under the prefixes (session changes only
// for the whole tree); nil when none is left.
func filterRecord(r *sm.ChangeRecord, prefixes []string) *zkbridgev1.ChangeRecord {
	var out []*zkbridgev1.Change
	for i := range r.Changes {
		c := &r.Changes[i]
		session := c.Type == sm.ChangeSessionCreated || c.Type == sm.ChangeSessionClosed
		if session && len(prefixes) > 0 || !session && !under(c.Path, prefixes) {
			continue
		}
		pc := &zkbridgev1.Change{Type: changeTypes[c.Type], Path: c.Path, Session: c.Session}
		if c.Type == sm.ChangeCreated || c.Type == sm.ChangeData || c.Type == sm.ChangeACL {
			pc.Stat = statOf(c.Stat)
		}
		if c.Type == sm.ChangeCreated || c.Type == sm.ChangeData {
			pc.Data, pc.DataSuperseded = c.Data, c.DataSuperseded
		}
		out = append(out, pc)
	}
	if len(out) == 0 {
		return nil
	}
	return &zkbridgev1.ChangeRecord{Offset: r.Zxid, Time: r.Time, Changes: out}
}

// importPoint reports whether r is a migration import's record
// (sm.ChangeImported) of nodes that may lie under the prefixes: its
// subtree is under one of them, or holds one. Such a record does not list
// the nodes, so a feed cannot go past it from records: the stream ends as
// after compaction, and the reader takes a snapshot (which holds the
// import) and resumes after it.
func importPoint(r *sm.ChangeRecord, prefixes []string) bool {
	for i := range r.Changes {
		c := &r.Changes[i]
		if c.Type != sm.ChangeImported {
			continue
		}
		if under(c.Path, prefixes) {
			return true
		}
		for _, p := range prefixes {
			if under(p, []string{c.Path}) {
				return true
			}
		}
	}
	return false
}

// imported is the end of a stream at a migration import's record.
func imported(from, zxid int64) error {
	st := status.Newf(codes.OutOfRange, "fetch metadata from offset %d: offset %d is a migration import, which the change log holds as a snapshot point; the oldest offset readable as records is %d (take a snapshot and resume from its offset + 1)", from, zxid, zxid+1)
	if d, err := st.WithDetails(&zkbridgev1.OffsetCompacted{OldestOffset: zxid + 1}); err == nil {
		st = d
	}
	return st.Err()
}

func compacted(from, trimmed int64) error {
	st := status.Newf(codes.OutOfRange, "fetch metadata from offset %d: compacted; the oldest retained offset is %d (take a snapshot and resume from its offset + 1)", from, trimmed+1)
	if d, err := st.WithDetails(&zkbridgev1.OffsetCompacted{OldestOffset: trimmed + 1}); err == nil {
		st = d
	}
	return st.Err()
}

// FetchMetadata streams the change log under the prefixes.
func (s *Server) FetchMetadata(r *zkbridgev1.FetchMetadataRequest, stream zkbridgev1.Bridge_FetchMetadataServer) error {
	if err := checkTenant(r.Tenant); err != nil {
		return err
	}
	prefixes, err := cleanPrefixes("fetch metadata", r.Prefixes)
	if err != nil {
		return err
	}
	if r.FromOffset < 0 || r.MaxWaitMs < 0 {
		return status.Errorf(codes.InvalidArgument, "fetch metadata: from_offset %d and max_wait_ms %d must not be negative", r.FromOffset, r.MaxWaitMs)
	}
	maxWait := time.Duration(r.MaxWaitMs) * time.Millisecond
	if maxWait == 0 {
		maxWait = time.Second
	}
	ctx := stream.Context()
	if err := s.serving(); err != nil {
		return err
	}
	// Catch up with the leader first: a stream resumed here after another
	// node served it up to from_offset-1 must not go back.
	if err := s.node.CatchUp(ctx); err != nil {
		return status.Errorf(codes.Unavailable, "fetch metadata: catch up with the leader: %v", err)
	}
	next := r.FromOffset
	sub, done := s.activity.subscribe(ctx, prefixes, r.FromOffset)
	defer done()
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		wake := s.applied.wait() // before reading: no batch is missed
		v, err := s.node.View()
		if err != nil {
			return status.Errorf(codes.Internal, "fetch metadata: read view: %v", err)
		}
		recs, trimmed, err := v.ChangeLog(next, feedBatch)
		last, _ := v.LastZxid()
		v.Close()
		if err != nil {
			return status.Errorf(codes.Internal, "fetch metadata: read the change log: %v", err)
		}
		if next > 0 && next <= trimmed {
			return compacted(next, trimmed)
		}
		var batch []*zkbridgev1.ChangeRecord
		importAt := int64(0) // a migration import's record ends the stream
		for _, rec := range recs {
			if importPoint(rec, prefixes) {
				importAt = rec.Zxid
				break
			}
			if pr := filterRecord(rec, prefixes); pr != nil {
				batch = append(batch, pr)
			}
			next = rec.Zxid + 1
		}
		full := len(recs) == feedBatch
		if !full && importAt == 0 {
			next = max(next, last+1) // everything up to last has been read
		}
		if len(batch) > 0 {
			if err := stream.Send(&zkbridgev1.FetchMetadataResponse{Records: batch, ProgressOffset: next - 1}); err != nil {
				return err
			}
			sub.records.Add(int64(len(batch)))
			sub.offset.Store(next - 1)
			timer.Reset(maxWait)
		}
		if importAt > 0 {
			return imported(next, importAt)
		}
		if full {
			continue
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.closing:
			return status.Error(codes.Unavailable, "fetch metadata: this node is shutting down: resume from progress_offset + 1 on another node")
		case <-wake:
		case <-timer.C:
			if err := stream.Send(&zkbridgev1.FetchMetadataResponse{ProgressOffset: next - 1}); err != nil {
				return err
			}
			sub.offset.Store(next - 1)
			timer.Reset(maxWait)
		}
	}
}

// snapshotChunk bounds one snapshot message: nodes and data bytes.
const (
	snapshotChunkNodes = 1000
	snapshotChunkBytes = 1 << 20
)

// FetchMetadataSnapshot streams a consistent image of the subtrees: one
// read view (a Pebble snapshot) walked depth first, children read one
// parent at a time, sent in chunks.
func (s *Server) FetchMetadataSnapshot(r *zkbridgev1.FetchMetadataSnapshotRequest, stream zkbridgev1.Bridge_FetchMetadataSnapshotServer) error {
	if err := checkTenant(r.Tenant); err != nil {
		return err
	}
	prefixes, err := cleanPrefixes("fetch metadata snapshot", r.Prefixes)
	if err != nil {
		return err
	}
	if len(prefixes) == 0 {
		prefixes = []string{"/"}
	}
	v, err := s.view(stream.Context(), false)
	if err != nil {
		return err
	}
	defer v.Close()
	offset, _ := v.LastZxid()
	chunk := &zkbridgev1.FetchMetadataSnapshotResponse{Offset: offset}
	size := 0
	flush := func(last bool) error {
		chunk.Last = last
		if err := stream.Send(chunk); err != nil {
			return err
		}
		chunk, size = &zkbridgev1.FetchMetadataSnapshotResponse{Offset: offset}, 0
		return nil
	}
	var walk func(path string) error
	walk = func(path string) error {
		if err := stream.Context().Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		n, err := v.Get(path)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil // a prefix that does not exist
		}
		if err != nil {
			return codeOf("fetch metadata snapshot", path, err)
		}
		chunk.Nodes = append(chunk.Nodes, &zkbridgev1.SnapshotNode{Path: path, Data: n.Data, Stat: statOf(n.Stat)})
		size += len(path) + len(n.Data) + 64
		if len(chunk.Nodes) >= snapshotChunkNodes || size >= snapshotChunkBytes {
			if err := flush(false); err != nil {
				return err
			}
		}
		names, _, err := v.Children(path)
		if err != nil {
			return codeOf("fetch metadata snapshot", path, err)
		}
		for _, name := range names {
			child := path + "/" + name
			if path == "/" {
				child = "/" + name
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	seen := map[string]bool{}
	for _, p := range prefixes {
		if seen[p] || coveredBy(p, prefixes) {
			continue
		}
		seen[p] = true
		if err := walk(p); err != nil {
			return err
		}
	}
	return flush(true)
}

// coveredBy reports whether p lies under another of the prefixes (walked
// with it).
func coveredBy(p string, prefixes []string) bool {
	for _, q := range prefixes {
		if q != p && under(p, []string{q}) {
			return true
		}
	}
	return false
}
