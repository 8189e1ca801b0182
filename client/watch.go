package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// Event is one item of a Watcher's feed: a change record, a snapshot (the
// feed restarted from an image after compaction), or, with WithProgress,
// progress alone.
type Event struct {
	// Record is one committed transaction's changes under the prefixes.
	Record *zkbridgev1.ChangeRecord
	// Snapshot replaces everything known under the prefixes: the feed
	// could not resume where it was (the change log was compacted past
	// it) and goes on from Snapshot.Offset + 1.
	Snapshot *Snapshot
	// Progress: every change up to this offset has been delivered (set on
	// every event; alone, with WithProgress, when nothing changed for the
	// max wait).
	Progress int64
}

// Snapshot is a consistent image of the subtrees at one offset, parents
// before children.
type Snapshot struct {
	Offset int64
	Nodes  []*zkbridgev1.SnapshotNode
}

// WatchOption modifies Watch.
type WatchOption func(*watchOpts)

type watchOpts struct {
	progress bool
	maxWait  time.Duration
	buffer   int
}

// WithProgress delivers progress-only events too: when nothing changed
// under the prefixes for the max wait, an event with only Progress set.
func WithProgress() WatchOption { return func(o *watchOpts) { o.progress = true } }

// WithMaxWait is how long the server waits with nothing new before it
// reports progress (default 1 s).
func WithMaxWait(d time.Duration) WatchOption { return func(o *watchOpts) { o.maxWait = d } }

// WithBuffer sets the capacity of the Events channel (default 128).
func WithBuffer(n int) WatchOption { return func(o *watchOpts) { o.buffer = n } }

// Watcher is a resilient change feed (see Watch).
type Watcher struct {
	c        *Client
	prefixes []string
	opts     watchOpts
	events   chan Event
	cancel   context.CancelCauseFunc
	done     chan struct{}

	mu     sync.Mutex
	err    error
	offset int64 // everything up to here delivered
}

// Watch streams every change under the prefixes (subtrees; none: the whole
// tree, session openings and closings included) from offset from (0: the
// oldest change retained), in offset order. When a node fails the feed
// resumes on the next one from the last offset delivered + 1: no change is
// missed or repeated. When the change log no longer holds the next offset
// (compacted), the watcher takes a snapshot, delivers it as a Snapshot
// event and resumes after it. The feed ends when ctx ends, on Close, or on
// an error no other node could change (a bad prefix, an unknown tenant):
// then Events is closed and Err says why.
func (c *Client) Watch(ctx context.Context, prefixes []string, from int64, opts ...WatchOption) *Watcher {
	o := watchOpts{buffer: 128}
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watcher{c: c, prefixes: append([]string(nil), prefixes...), opts: o, events: make(chan Event, o.buffer),
		cancel: cancel, done: make(chan struct{}), offset: max(from-1, 0)}
	go w.run(ctx, from)
	return w
}

// Events is the feed; it is closed when the watcher ends.
func (w *Watcher) Events() <-chan Event { return w.events }

// Err is why the feed ended: nil after Close, the context's error when it
// ended, or the error that stopped it.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Offset is the offset up to which every change has been delivered: a
// new Watch from Offset()+1 continues this one.
func (w *Watcher) Offset() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.offset
}

// Close ends the feed and waits for it to stop.
func (w *Watcher) Close() error {
	w.cancel(errClosed)
	<-w.done
	return nil
}

var errClosed = errors.New("watcher closed")

func (w *Watcher) run(ctx context.Context, from int64) {
	defer close(w.done)
	defer close(w.events)
	err := w.feed(ctx, from)
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// deliver hands an event over, false when the watcher is closed.
func (w *Watcher) deliver(ctx context.Context, ev Event) bool {
	select {
	case w.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// feed runs streams until one fails for good.
func (w *Watcher) feed(ctx context.Context, from int64) error {
	next := from // the first offset wanted
	n := w.c.first()
	backoff := 50 * time.Millisecond
	for {
		if ctx.Err() != nil {
			return w.stopped(ctx)
		}
		got, err := w.stream(ctx, n, &next)
		if ctx.Err() != nil {
			return w.stopped(ctx)
		}
		if got {
			backoff = 50 * time.Millisecond
		}
		switch status.Code(err) {
		case codes.OutOfRange:
			snap, serr := w.snapshot(ctx, n)
			if serr != nil {
				if ctx.Err() != nil {
					return w.stopped(ctx)
				}
				if !retryable(serr) {
					return fmt.Errorf("feed compacted past offset %d, and the snapshot failed: %w", next, serr)
				}
				break // retried below, on the next node
			}
			if snap.Offset+1 > next {
				next = snap.Offset + 1
			}
			w.setOffset(next - 1)
			if !w.deliver(ctx, Event{Snapshot: snap, Progress: next - 1}) {
				return w.stopped(ctx)
			}
			continue
		case codes.InvalidArgument, codes.PermissionDenied, codes.Unimplemented, codes.Unauthenticated, codes.FailedPrecondition:
			return err
		}
		// Any other end (the node failed, lost its leader, the stream
		// broke): resume on the next node.
		n = w.c.next(n)
		select {
		case <-ctx.Done():
			return w.stopped(ctx)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// stopped is the end of a feed whose context ended: nil when Close ended
// it, the caller's context's error otherwise.
func (w *Watcher) stopped(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errClosed) {
		return nil
	}
	return ctx.Err()
}

func (w *Watcher) setOffset(o int64) {
	w.mu.Lock()
	if o > w.offset {
		w.offset = o
	}
	w.mu.Unlock()
}

// stream reads one FetchMetadata stream from node n, advancing *next; got
// reports whether it delivered anything.
func (w *Watcher) stream(ctx context.Context, n int, next *int64) (got bool, err error) {
	sctx, cancel := w.c.streamContext(ctx, n)
	defer cancel()
	st, err := w.c.stubs[n].FetchMetadata(sctx, &zkbridgev1.FetchMetadataRequest{Tenant: w.c.opts.tenant, Prefixes: w.prefixes,
		FromOffset: *next, MaxWaitMs: w.opts.maxWait.Milliseconds()})
	if err != nil {
		return false, err
	}
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return got, status.Error(codes.Unavailable, "the feed ended")
		}
		if err != nil {
			return got, err
		}
		delivered := false
		for i, rec := range r.Records {
			if rec.Offset < *next {
				continue // never a duplicate
			}
			progress := rec.Offset
			if i == len(r.Records)-1 {
				progress = max(progress, r.ProgressOffset) // the response's last record: all of it
			}
			*next = progress + 1
			w.setOffset(progress)
			if !w.deliver(ctx, Event{Record: rec, Progress: progress}) {
				return got, ctx.Err()
			}
			got, delivered = true, true
		}
		if r.ProgressOffset+1 > *next {
			*next = r.ProgressOffset + 1
			w.setOffset(r.ProgressOffset)
			if !delivered && w.opts.progress {
				if !w.deliver(ctx, Event{Progress: r.ProgressOffset}) {
					return got, ctx.Err()
				}
			}
			got = true
		}
	}
}

// snapshot reads a whole FetchMetadataSnapshot, from node n or the next
// ones when n cannot serve it.
func (w *Watcher) snapshot(ctx context.Context, n int) (*Snapshot, error) {
	var snap *Snapshot
	_, err := w.c.callFrom(ctx, n, true, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := s.FetchMetadataSnapshot(sctx, &zkbridgev1.FetchMetadataSnapshotRequest{Tenant: w.c.opts.tenant, Prefixes: w.prefixes})
		if err != nil {
			return err
		}
		out := &Snapshot{}
		for {
			r, err := st.Recv()
			if err == io.EOF {
				return status.Error(codes.Unavailable, "the snapshot ended without its last chunk")
			}
			if err != nil {
				return err
			}
			out.Offset = r.Offset
			out.Nodes = append(out.Nodes, r.Nodes...)
			if r.Last {
				snap = out
				return nil
			}
		}
	})
	return snap, err
}

// Snapshot reads a consistent image of the subtrees (none: the whole
// tree) at one offset; a Watch from its Offset + 1 continues it.
func (c *Client) Snapshot(ctx context.Context, prefixes []string) (*Snapshot, error) {
	w := &Watcher{c: c, prefixes: prefixes}
	return w.snapshot(ctx, c.first())
}
