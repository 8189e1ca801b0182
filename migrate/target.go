package migrate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// The zkbridge side: the native API's Import calls (server/native/import.go).

// Target is a zkbridge node's native API.
type Target struct {
	Addr string
	cc   *grpc.ClientConn
	api  zkbridgev1.BridgeClient
}

// DialTarget connects to a zkbridge node's native API address, with TLS
// when tlsCfg is set (a node whose ssl.* settings protect the native port).
func DialTarget(addr string, tlsCfg ...*tls.Config) (*Target, error) {
	creds := insecure.NewCredentials()
	if len(tlsCfg) > 0 && tlsCfg[0] != nil {
		creds = credentials.NewTLS(tlsCfg[0])
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("native API %s: %w", addr, err)
	}
	return &Target{Addr: addr, cc: cc, api: zkbridgev1.NewBridgeClient(cc)}, nil
}

// Close closes the connection.
func (t *Target) Close() error { return t.cc.Close() }

// NextZxidBase is the zxidBase that puts zkbridge's zxids above every zxid
// of the source's epoch: (epoch + 1) << 32.
func NextZxidBase(lastZxid int64) int64 { return (lastZxid>>32 + 1) << 32 }

// Begin checks that subtree is empty in the target (unless merge) and
// raises its zxidBase above lastZxid's epoch.
func (t *Target) Begin(ctx context.Context, subtree string, merge bool, lastZxid int64) error {
	_, err := t.api.ImportBegin(ctx, &zkbridgev1.ImportBeginRequest{Subtrees: []string{subtree}, Merge: merge, MinZxidBase: NextZxidBase(lastZxid)})
	if err != nil {
		return fmt.Errorf("import begin on %s: %w", t.Addr, err)
	}
	return nil
}

// Finish raises zxidBase above lastZxid's epoch (if the source moved on)
// and returns the target's last zxid.
func (t *Target) Finish(ctx context.Context, lastZxid int64) (int64, error) {
	r, err := t.api.ImportFinish(ctx, &zkbridgev1.ImportFinishRequest{MinZxidBase: NextZxidBase(lastZxid)})
	if err != nil {
		return 0, fmt.Errorf("import finish on %s: %w", t.Addr, err)
	}
	return r.LastZxid, nil
}

// Batch limits: a batch is one Raft entry.
const (
	defaultBatchNodes = 5000
	batchBytes        = 768 << 10
)

// ImportStats counts what an import sent.
type ImportStats struct {
	Nodes    int64 `json:"nodes"`
	Sessions int64 `json:"sessions"`
	Batches  int64 `json:"batches"`
	LastZxid int64 `json:"last_zxid"`
	// Retries counts the streams reopened after a lost one (a leader
	// change, a node that stalled): their unanswered batches were sent
	// again with merge.
	Retries int `json:"retries"`
}

// Importer streams sessions and nodes to the target in batches. It is a
// Sink: feed it an export (sessions before the ephemerals they own,
// parents before children), then Close. The root's stat is sent last
// (its child count is only right once its children are in). The server
// answers every applied batch; when the stream is lost (Unavailable: the
// outcome of the batches in flight is unknown), the Importer opens a new
// one and sends the unanswered batches again with merge set, which skips
// what was applied: batches are atomic.
type Importer struct {
	t          *Target
	ctx        context.Context
	merge      bool
	update     bool
	batchNodes int
	batch      *zkbridgev1.ImportBatch
	bytes      int
	root       *Node
	ancestors  bool // the batch holds ancestors
	stats      ImportStats
	progress   func(int64)
	err        error
	// The last ACL converted, and its messages (protoNode).
	lastACL      []ACL
	lastProtoACL []*zkbridgev1.ACL

	// The current stream and its unanswered batches, oldest first.
	mu       sync.Mutex
	cond     *sync.Cond
	stream   zkbridgev1.Bridge_ImportClient
	unacked  []*zkbridgev1.ImportBatch
	applied  int64 // nodes of answered batches
	recvErr  error // the current stream's end (io.EOF: closed cleanly)
	recvDone bool
}

// ImporterOptions shape an Importer.
type ImporterOptions struct {
	// Merge leaves nodes the target has as they are; Update overwrites
	// them (a catch-up pass).
	Merge, Update bool
	BatchNodes    int
	Progress      func(nodes int64)
}

// maxUnacked bounds the batches sent and not answered (memory, and what a
// lost stream makes the Importer send again).
const maxUnacked = 16

// maxRetries bounds the streams reopened in a row without progress.
const maxRetries = 8

// NewImporter opens an Import stream.
func (t *Target) NewImporter(ctx context.Context, o ImporterOptions) (*Importer, error) {
	if o.BatchNodes <= 0 {
		o.BatchNodes = defaultBatchNodes
	}
	im := &Importer{t: t, ctx: ctx, merge: o.Merge, update: o.Update, batchNodes: o.BatchNodes, progress: o.Progress,
		batch: &zkbridgev1.ImportBatch{Merge: o.Merge, Update: o.Update}}
	im.cond = sync.NewCond(&im.mu)
	if err := im.open(); err != nil {
		return nil, err
	}
	return im, nil
}

// open starts a stream and its receiver.
func (im *Importer) open() error {
	st, err := im.t.api.Import(im.ctx)
	if err != nil {
		return fmt.Errorf("import on %s: %w", im.t.Addr, err)
	}
	im.mu.Lock()
	im.stream, im.recvErr, im.recvDone = st, nil, false
	im.mu.Unlock()
	go func() {
		for {
			r, err := st.Recv()
			im.mu.Lock()
			if im.stream != st { // replaced
				im.mu.Unlock()
				return
			}
			if err != nil {
				im.recvErr, im.recvDone = err, true
				im.cond.Broadcast()
				im.mu.Unlock()
				return
			}
			if len(im.unacked) > 0 {
				b := im.unacked[0]
				im.unacked = im.unacked[1:]
				im.applied += int64(len(b.Nodes) + len(b.Deletes))
			}
			im.stats.LastZxid = max(im.stats.LastZxid, r.LastZxid)
			applied := im.applied
			im.cond.Broadcast()
			im.mu.Unlock()
			if im.progress != nil {
				im.progress(applied)
			}
		}
	}()
	return nil
}

// retryable: the stream was lost with batches whose outcome is unknown.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted:
		return true
	}
	return false
}

// recover waits for the lost stream's status and, when it is worth it,
// opens a new stream and sends the unanswered batches again with merge.
func (im *Importer) recover() error {
	for attempt := 0; ; attempt++ {
		im.mu.Lock()
		for !im.recvDone {
			im.cond.Wait()
		}
		err := im.recvErr
		if errors.Is(err, io.EOF) {
			err = errors.New("the server ended the import stream early")
		}
		pending := append([]*zkbridgev1.ImportBatch(nil), im.unacked...)
		im.mu.Unlock()
		if !retryable(err) || attempt >= maxRetries || im.ctx.Err() != nil {
			return err
		}
		im.stats.Retries++
		select {
		case <-time.After(time.Duration(attempt+1) * 500 * time.Millisecond):
		case <-im.ctx.Done():
			return im.ctx.Err()
		}
		if err := im.open(); err != nil {
			continue
		}
		im.mu.Lock()
		im.unacked = nil
		im.mu.Unlock()
		ok := true
		for _, b := range pending {
			if !b.Update {
				b.Merge = true // skips what the lost stream applied
			}
			if err := im.sendOne(b); err != nil {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
}

// sendOne sends b on the current stream, waiting while maxUnacked are
// unanswered.
func (im *Importer) sendOne(b *zkbridgev1.ImportBatch) error {
	im.mu.Lock()
	for len(im.unacked) >= maxUnacked && !im.recvDone {
		im.cond.Wait()
	}
	if im.recvDone {
		im.mu.Unlock()
		return errors.New("stream ended")
	}
	im.unacked = append(im.unacked, b)
	st := im.stream
	im.mu.Unlock()
	return st.Send(b)
}

// send sends b, recovering from a lost stream.
func (im *Importer) send(b *zkbridgev1.ImportBatch) error {
	for {
		if err := im.sendOne(b); err == nil {
			return nil
		}
		// b is among the unanswered batches (or was not queued: then the
		// wait ended on a lost stream and b is sent after recovery).
		im.mu.Lock()
		queued := slices.Contains(im.unacked, b)
		im.mu.Unlock()
		if err := im.recover(); err != nil {
			return err
		}
		if queued {
			return nil
		}
	}
}

// Session queues a session for the next batch.
func (im *Importer) Session(s Session) error {
	im.batch.Sessions = append(im.batch.Sessions, &zkbridgev1.ImportedSession{Id: s.ID, TimeoutMs: s.Timeout, Password: ZooKeeperPassword(s.ID)})
	im.stats.Sessions++
	return nil
}

// Node queues a node.
func (im *Importer) Node(n *Node) error {
	if n.Path == "/" {
		if !n.Ancestor {
			im.root = n
		}
		return nil
	}
	size := len(n.Data) + len(n.Path) + 64
	full := len(im.batch.Nodes) >= im.batchNodes || im.bytes+size > batchBytes
	// Ancestors of the subtree go in merge batches of their own.
	if len(im.batch.Nodes) > 0 && (full || n.Ancestor != im.ancestors) {
		if err := im.flush(); err != nil {
			return err
		}
	}
	im.ancestors = n.Ancestor
	im.batch.Merge = im.merge || n.Ancestor
	im.batch.Nodes = append(im.batch.Nodes, im.protoNode(n))
	im.bytes += size
	im.stats.Nodes++
	return nil
}

// Delete queues a delete (update importers only): children before parents.
func (im *Importer) Delete(p string) error {
	if !im.update {
		return errors.New("delete in an import that is not an update")
	}
	im.batch.Deletes = append(im.batch.Deletes, p)
	im.stats.Nodes++
	return nil
}

func (im *Importer) flush() error {
	if im.err != nil {
		return im.err
	}
	b := im.batch
	im.batch = &zkbridgev1.ImportBatch{Merge: im.merge, Update: im.update}
	im.bytes = 0
	if len(b.Nodes) == 0 && len(b.Sessions) == 0 && len(b.Deletes) == 0 {
		return nil
	}
	if err := im.send(b); err != nil {
		im.err = err
		return err
	}
	im.stats.Batches++
	return nil
}

// Close sends what is queued, then the root's stat, and waits until every
// batch is answered.
func (im *Importer) Close() (ImportStats, error) {
	if err := im.flush(); err != nil {
		return im.stats, err
	}
	if im.root != nil {
		im.batch = &zkbridgev1.ImportBatch{Update: true, Nodes: []*zkbridgev1.ImportedNode{im.protoNode(im.root)}}
		im.stats.Nodes++
		if err := im.flush(); err != nil {
			return im.stats, err
		}
	}
	for {
		im.mu.Lock()
		st := im.stream
		im.mu.Unlock()
		_ = st.CloseSend()
		im.mu.Lock()
		for !im.recvDone {
			im.cond.Wait()
		}
		err, left := im.recvErr, len(im.unacked)
		im.mu.Unlock()
		if errors.Is(err, io.EOF) && left == 0 {
			return im.stats, nil
		}
		if err := im.recover(); err != nil {
			return im.stats, err
		}
	}
}

// Abort ends the stream without waiting (after a failure elsewhere).
func (im *Importer) Abort() {
	im.mu.Lock()
	st := im.stream
	im.mu.Unlock()
	_ = st.CloseSend()
}

// protoNode converts n. Nodes that share an ACL slice (a Reader's do when
// their ACLs are the same) share its converted messages too: the messages
// are only marshalled, never changed.
func (im *Importer) protoNode(n *Node) *zkbridgev1.ImportedNode {
	out := &zkbridgev1.ImportedNode{Path: n.Path, Data: n.Data, NullData: n.Data == nil, Czxid: n.Czxid, Mzxid: n.Mzxid,
		Pzxid: n.Pzxid, Ctime: n.Ctime, Mtime: n.Mtime, Version: n.Version, Aversion: n.Aversion,
		EphemeralOwner: n.EphemeralOwner, Creates: n.Creates}
	if len(n.ACL) == 0 {
		return out
	}
	if len(im.lastACL) != len(n.ACL) || &im.lastACL[0] != &n.ACL[0] {
		im.lastACL, im.lastProtoACL = n.ACL, make([]*zkbridgev1.ACL, 0, len(n.ACL))
		for _, a := range n.ACL {
			im.lastProtoACL = append(im.lastProtoACL, &zkbridgev1.ACL{Perms: a.Perms, Scheme: a.Scheme, Id: a.ID})
		}
	}
	out.Acl = im.lastProtoACL
	return out
}

// ImportFile imports an export file into the target: begin (the subtree
// must be empty unless merge), every record, finish (zxidBase above the
// source's last zxid).
func ImportFile(ctx context.Context, t *Target, name string, merge bool, progress func(int64)) (ImportStats, error) {
	r, err := Open(name)
	if err != nil {
		return ImportStats{}, err
	}
	defer r.Close()
	if err := CheckComplete(name); err != nil {
		return ImportStats{}, fmt.Errorf("%w; nothing was imported", err)
	}
	if err := t.Begin(ctx, r.Header.Path, merge, r.Header.LastZxid); err != nil {
		return ImportStats{}, err
	}
	im, err := t.NewImporter(ctx, ImporterOptions{Merge: merge, Progress: progress})
	if err != nil {
		return ImportStats{}, err
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			im.Abort()
			return im.stats, fmt.Errorf("%w (the batches before it are imported: rerun with --merge once the file is fixed)", err)
		}
		if rec.Session != nil {
			err = im.Session(*rec.Session)
		} else {
			err = im.Node(rec.Node)
		}
		if err != nil {
			return im.stats, importFailed(err)
		}
	}
	stats, err := im.Close()
	if err != nil {
		return stats, importFailed(err)
	}
	last, err := t.Finish(ctx, max(r.Header.LastZxid, r.End().LastZxid))
	if err != nil {
		return stats, err
	}
	stats.LastZxid = last
	return stats, nil
}

// importFailed says what to do after a failed batch.
func importFailed(err error) error {
	return fmt.Errorf("import: %w (batches before the failing one are applied; fix the cause and rerun with --merge to add the rest)", err)
}

// callTimeout bounds one unary call.
const callTimeout = 30 * time.Second
