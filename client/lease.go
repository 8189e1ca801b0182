package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
)

// RegisterSpec describes a registration: the member MemberID of Group,
// mapped to a znode by Profile ("generic", the default: /<group>/ids/<id>;
// "fluss": /fluss/tabletservers/ids/<id> with TabletServerRegistration
// JSON as the payload).
type RegisterSpec struct {
	Profile  string
	Group    string
	MemberID string
	Payload  []byte
	// TTL is the lease's TTL; the server clamps it to its session timeout
	// bounds (Lease.TTL is the one granted).
	TTL time.Duration
	// ExpectedEpoch, when set, takes over a live registration of the same
	// member whose epoch it names (its lease ends).
	ExpectedEpoch *int64
}

// ConflictError is Register's error when the member is registered already
// (gRPC AlreadyExists): the holder's epoch is what ExpectedEpoch must name
// to take it over.
type ConflictError struct {
	Path        string
	HolderEpoch int64
	HolderLease int64
	err         error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is registered already, epoch %d, lease 0x%x (to take it over, register with that expected epoch)", e.Path, e.HolderEpoch, e.HolderLease)
}

// Unwrap returns the gRPC status error.
func (e *ConflictError) Unwrap() error { return e.err }

// GRPCStatus makes status.Code(err) AlreadyExists.
func (e *ConflictError) GRPCStatus() *status.Status { return status.Convert(e.err) }

// ErrLeaseExpired is Lease.Err when the server says the lease is gone
// (it expired, was taken over, or deregistered elsewhere).
var ErrLeaseExpired = errors.New("lease expired: the server no longer knows it (expired, taken over or deregistered); its registration is gone")

// Lease is a live registration. It renews itself until Close or until it
// is lost.
type Lease struct {
	c     *Client
	id    int64
	token []byte
	epoch int64
	path  string
	ttl   time.Duration

	stop      chan struct{}
	stopOnce  sync.Once
	done      chan struct{} // the keep-alive loop ended
	lost      chan struct{}
	mu        sync.Mutex
	err       error
	lastRenew time.Time
}

// Register adds a member: an ephemeral znode owned by a new lease, which
// the returned Lease keeps alive. A live registration of the same member
// is a *ConflictError.
func (c *Client) Register(ctx context.Context, spec RegisterSpec) (*Lease, error) {
	if spec.TTL <= 0 {
		return nil, fmt.Errorf("register: TTL %v (want a positive TTL)", spec.TTL)
	}
	req := &zkbridgev1.RegisterRequest{Tenant: c.opts.tenant, Profile: spec.Profile, Group: spec.Group, MemberId: spec.MemberID,
		Payload: spec.Payload, LeaseTtlMs: max(spec.TTL.Milliseconds(), 1), ExpectedEpoch: spec.ExpectedEpoch}
	var resp *zkbridgev1.RegisterResponse
	sent := time.Now()
	node, err := c.call(ctx, false, func(ctx context.Context, s zkbridgev1.BridgeClient) (err error) {
		resp, err = s.Register(ctx, req)
		return err
	})
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			for _, d := range status.Convert(err).Details() {
				if rc, ok := d.(*zkbridgev1.RegisterConflict); ok {
					return nil, &ConflictError{Path: rc.Path, HolderEpoch: rc.HolderEpoch, HolderLease: rc.HolderLease, err: err}
				}
			}
		}
		return nil, err
	}
	l := &Lease{c: c, id: resp.Lease.GetId(), token: resp.Lease.GetToken(), epoch: resp.Epoch, path: resp.Path,
		ttl: time.Duration(resp.TtlMs) * time.Millisecond, stop: make(chan struct{}), done: make(chan struct{}),
		lost: make(chan struct{}), lastRenew: sent}
	go l.keepAlive(node)
	return l, nil
}

// ID is the lease id (the znode's ephemeralOwner, a session id).
func (l *Lease) ID() int64 { return l.id }

// Epoch is the registration's epoch: its znode's czxid.
func (l *Lease) Epoch() int64 { return l.epoch }

// Path is the registration's znode.
func (l *Lease) Path() string { return l.path }

// TTL is the TTL the server granted.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Lost is closed when the lease is lost: the server said it is gone, or no
// heartbeat succeeded within the TTL (then the server expires it, if it
// has not already). Err says which. Close does not close it.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is why the lease was lost (nil while it is not).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// LastRenewed is when the last successful heartbeat was sent (the
// registration's time at first).
func (l *Lease) LastRenewed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastRenew
}

// Close stops the heartbeats and deregisters the lease: its znode is
// deleted at once. A lease already lost has nothing left to end: Close
// returns nil.
func (l *Lease) Close(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	if l.Err() != nil {
		return nil
	}
	attempt := 0
	_, err := l.c.call(ctx, true, func(ctx context.Context, s zkbridgev1.BridgeClient) error {
		attempt++
		_, err := s.Deregister(ctx, &zkbridgev1.DeregisterRequest{Tenant: l.c.opts.tenant, Lease: &zkbridgev1.Lease{Id: l.id, Token: l.token}})
		if status.Code(err) == codes.NotFound && attempt > 1 {
			return nil // an earlier attempt whose answer was lost ended it
		}
		return err
	})
	return err
}

func (l *Lease) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
		close(l.lost)
	}
	l.mu.Unlock()
}

func (l *Lease) renewed(at time.Time) {
	l.mu.Lock()
	if at.After(l.lastRenew) {
		l.lastRenew = at
	}
	l.mu.Unlock()
}

// keepAlive heartbeats every TTL/3 over a KeepAlive stream, starting on
// node n; a broken stream moves to the next node at once.
func (l *Lease) keepAlive(n int) {
	defer close(l.done)
	interval := max(l.ttl/3, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	type answer struct {
		r   *zkbridgev1.HeartbeatResponse
		err error
	}
	var (
		stream       zkbridgev1.Bridge_KeepAliveClient
		streamCancel context.CancelFunc
		answers      chan answer
		backoff      = 20 * time.Millisecond
	)
	drop := func() {
		if streamCancel != nil {
			streamCancel()
		}
		stream, streamCancel, answers = nil, nil, nil
		n = l.c.next(n)
	}
	defer func() {
		if streamCancel != nil {
			streamCancel()
		}
	}()
	deadline := func() time.Time { return l.LastRenewed().Add(l.ttl) }
	// pause waits d, or less when the lease would be lost before; false
	// when the lease is closed or lost meanwhile.
	pause := func(d time.Duration) bool {
		if until := time.Until(deadline()); until < d {
			d = max(until, 0)
		}
		select {
		case <-l.stop:
			return false
		case <-time.After(d):
		}
		if !time.Now().Before(deadline()) {
			l.fail(fmt.Errorf("lease 0x%x lost: no heartbeat succeeded within its TTL (%v) on any of %v", l.id, l.ttl, l.c.targets))
			return false
		}
		return true
	}
	next := time.Now().Add(interval)
	for {
		if !pause(time.Until(next)) {
			return
		}
		if stream == nil {
			sctx, scancel := l.c.streamContext(ctx, n)
			s, err := l.c.stubs[n].KeepAlive(sctx)
			if err != nil {
				scancel()
				drop()
				if !pause(backoff) {
					return
				}
				backoff = min(2*backoff, interval)
				continue
			}
			stream, streamCancel, answers = s, scancel, make(chan answer, 1)
			go func(sctx context.Context, s zkbridgev1.Bridge_KeepAliveClient, out chan<- answer) {
				for {
					r, err := s.Recv()
					select {
					case out <- answer{r, err}:
					case <-sctx.Done():
						return
					}
					if err != nil {
						return
					}
				}
			}(sctx, stream, answers)
		}
		sent := time.Now()
		if err := stream.Send(&zkbridgev1.HeartbeatRequest{Tenant: l.c.opts.tenant, LeaseId: l.id}); err != nil {
			drop()
			next = time.Now()
			continue
		}
		// Wait for the answer at most until the next heartbeat is due
		// (a node that stopped answering is left for another).
		wait := time.NewTimer(interval)
		var a answer
		select {
		case <-l.stop:
			wait.Stop()
			return
		case a = <-answers:
		case <-wait.C:
			a.err = status.Error(codes.DeadlineExceeded, "no keep-alive answer")
		}
		wait.Stop()
		switch {
		case a.err == nil && a.r.TtlMs > 0:
			l.renewed(sent)
			backoff = 20 * time.Millisecond
			next = sent.Add(interval)
		case a.err == nil || status.Code(a.err) == codes.NotFound:
			// Gone, says this node. A node that has not applied the
			// lease's creation yet says so too: ask once more, shortly.
			gone, at := l.confirmGone(ctx, n)
			if gone {
				l.fail(fmt.Errorf("lease 0x%x of %s: %w", l.id, l.path, ErrLeaseExpired))
				return
			}
			if !at.IsZero() {
				l.renewed(at)
			}
			next = time.Now().Add(interval / 2)
		case status.Code(a.err) == codes.InvalidArgument || status.Code(a.err) == codes.PermissionDenied || status.Code(a.err) == codes.Unimplemented:
			l.fail(fmt.Errorf("lease 0x%x: keep-alive refused: %w", l.id, a.err))
			return
		default:
			// The stream broke or the node cannot serve: the next node, now.
			drop()
			if !pause(backoff) {
				return
			}
			backoff = min(2*backoff, interval)
			next = time.Now()
		}
	}
}

// confirmGone asks node n again, after a short pause, whether the lease is
// gone; a node that cannot answer does not confirm it. When the heartbeat
// succeeds, at is when it was sent.
func (l *Lease) confirmGone(ctx context.Context, n int) (gone bool, at time.Time) {
	select {
	case <-ctx.Done():
		return false, time.Time{}
	case <-time.After(min(200*time.Millisecond, l.ttl/4)):
	}
	cctx, cancel := context.WithTimeout(ctx, max(l.ttl/3, 100*time.Millisecond))
	defer cancel()
	sent := time.Now()
	r, err := l.c.stubs[n].Heartbeat(cctx, &zkbridgev1.HeartbeatRequest{Tenant: l.c.opts.tenant, LeaseId: l.id})
	switch {
	case status.Code(err) == codes.NotFound:
		return true, time.Time{}
	case err == nil && r.TtlMs > 0:
		return false, sent
	}
	return false, time.Time{}
}
