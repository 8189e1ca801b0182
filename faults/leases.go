package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	native "github.com/zkbridge/zkbridge/client"
)

// leases (zkbridge's native API): each client registers a member with a
// lease that the Go client renews, holds it, then either deregisters it
// (its znode must be gone at once) or stops renewing it (its znode must go
// once the TTL passed without heartbeats). Watched through the ZooKeeper
// port, as a ZooKeeper-mode server would see the registration.
//
// A lease must never end less than its TTL after a heartbeat the server
// acknowledged: the last acknowledged heartbeat was sent at s (the
// client's LastRenewed), so an end seen before s+TTL is early. A node
// reports the heartbeats it received to the leader every half tick, so a
// node that dies (or is cut off) takes up to half a tick of acknowledged
// heartbeats with it, and the heartbeat before those was up to TTL/3
// earlier: around a fault the bound is s+TTL-(TTL/3+tick/2); without one
// it is exact.
type leases struct {
	addrs []string // native API addresses; nil: not zkbridge, idle
	tick  time.Duration

	// violationLog's mutex also guards the fields below.
	violationLog
	ends []leaseEnd
}

// leaseEnd: the abandoned lease's znode path, last renewed (heartbeat sent)
// at renewed, seen gone at gone.
type leaseEnd struct {
	path          string
	renewed, gone time.Time
	ttl           time.Duration
}

// leaseTTL is asked for (the server clamps it to its minimum session
// timeout, 4 s by default); leaseHold is how long a lease is held: longer
// than its TTL, so a server that did not count the heartbeats would end it.
const (
	leaseTTL  = 4 * time.Second
	leaseHold = 6 * time.Second
)

func (*leases) Name() string { return "leases" }

// Setup has nothing to create: a registration creates its parents.
func (*leases) Setup(*zk.Conn) error { return nil }

// slack is how much earlier than renewed+ttl a lease may end when a fault
// overlapped [from, to] (see the type's doc), 0 otherwise.
func (l *leases) slack(h *History, ttl time.Duration, from, to time.Time) time.Duration {
	if h.FaultDuring(from, to) {
		return ttl/3 + l.tick/2
	}
	return 0
}

func (l *leases) Run(c *client, h *History, stop <-chan struct{}) {
	if l.addrs == nil {
		<-stop
		return
	}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		member := fmt.Sprintf("c%d-%d", c.id, n)
		// One native client per lease: closing it is how a lease is
		// abandoned (its heartbeats stop).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		nc, err := native.Dial(ctx, l.addrs)
		if err != nil {
			cancel()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		op := Op{Client: c.id, Workload: l.Name(), Kind: "register", Path: "/leases/ids/" + member, Call: time.Now()}
		lease, err := nc.Register(ctx, native.RegisterSpec{Group: "leases", MemberID: member, TTL: leaseTTL})
		cancel()
		op.Return = time.Now()
		op.Outcome = OK
		if err != nil {
			// A registration whose outcome is unknown leaves a lease
			// nobody renews: it expires (Check waits for its znode).
			op.Outcome = Unknown
		}
		h.Add(op)
		if err != nil {
			_ = nc.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		held := l.hold(h, nc, lease, stop)
		if lease.Err() != nil { // lost: nothing left to end
			_ = nc.Close()
			continue
		}
		if !held || n%2 == 0 { // the run stopped, or every other lease
			l.deregister(c, h, lease)
			_ = nc.Close()
			continue
		}
		_ = nc.Close() // no more heartbeats
		l.watchExpiry(c, lease, stop)
	}
}

// hold keeps lease for leaseHold. When the run stops first, one more
// heartbeat asks the server whether the lease still lives (a run shorter
// than a hold still judges the leases it held past their TTL). False when
// the lease was lost (judged here) or the run stopped.
func (l *leases) hold(h *History, nc *native.Client, lease *native.Lease, stop <-chan struct{}) bool {
	select {
	case <-lease.Lost():
		if !errors.Is(lease.Err(), native.ErrLeaseExpired) {
			return false // no node answered within the TTL: the client gave up
		}
		l.judgeEnded(h, lease, time.Now())
		return false
	case <-time.After(leaseHold):
		return true
	case <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := nc.Heartbeat(ctx, lease.ID()); status.Code(err) == codes.NotFound {
			l.judgeEnded(h, lease, time.Now())
		}
		return false
	}
}

// judgeEnded judges a lease the server said at seen was gone: ended less
// than its TTL after an acknowledged heartbeat is a violation.
func (l *leases) judgeEnded(h *History, lease *native.Lease, seen time.Time) {
	renewed, ttl := lease.LastRenewed(), lease.TTL()
	if bound := renewed.Add(ttl - l.slack(h, ttl, renewed.Add(-ttl), seen)); seen.Before(bound) {
		l.violate("leases: %s (lease 0x%x) ended by the server %v after a heartbeat it acknowledged (TTL %v)",
			lease.Path(), lease.ID(), seen.Sub(renewed).Round(time.Millisecond), ttl)
	}
}

// deregister ends lease; acknowledged, its znode is gone for every reader
// after a sync.
func (l *leases) deregister(c *client, h *History, lease *native.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	op := Op{Client: c.id, Workload: l.Name(), Kind: "deregister", Path: lease.Path(), Call: time.Now()}
	err := lease.Close(ctx)
	op.Return, op.Outcome = time.Now(), OK
	if err != nil {
		op.Outcome = Unknown
	}
	h.Add(op)
	if err != nil {
		return
	}
	for attempt := 0; attempt < 20; attempt++ {
		var ok bool
		if _, err = c.conn.Sync(lease.Path()); err == nil {
			ok, _, err = c.conn.Exists(lease.Path())
		}
		if err == nil {
			if ok {
				l.violate("leases: %s still there after its deregistration was acknowledged", lease.Path())
			}
			return
		}
		c.afterError(err)
		time.Sleep(50 * time.Millisecond)
	}
}

// watchExpiry polls the abandoned lease's znode until it is gone.
func (l *leases) watchExpiry(c *client, lease *native.Lease, stop <-chan struct{}) {
	for {
		call := time.Now()
		ok, _, err := c.conn.Exists(lease.Path())
		switch {
		case err != nil:
			c.afterError(err)
		case !ok:
			l.mu.Lock()
			l.ends = append(l.ends, leaseEnd{path: lease.Path(), renewed: lease.LastRenewed(), gone: call, ttl: lease.TTL()})
			l.mu.Unlock()
			return
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-stop:
			return
		}
	}
}

// Check judges when the abandoned leases ended and waits for every
// registration to go.
func (l *leases) Check(c *zk.Conn, h *History, _ string) []string {
	if l.addrs == nil {
		return nil
	}
	l.mu.Lock()
	for _, e := range l.ends {
		// Early: gone (the poll that saw it gone was sent at e.gone, after
		// the delete) before the TTL passed since the last heartbeat.
		slack := l.slack(h, e.ttl, e.renewed.Add(-e.ttl), e.gone)
		if e.gone.Before(e.renewed.Add(e.ttl - slack)) {
			l.violateLocked("leases: %s gone %v after its last acknowledged heartbeat (TTL %v)",
				e.path, e.gone.Sub(e.renewed).Round(time.Millisecond), e.ttl)
		}
		// Late: as a session's expiry (expiryGrace), from the later of the
		// last heartbeat and the last fault.
		from := e.renewed
		if f := h.LastFaultBefore(e.gone); f.After(from) {
			from = f
		}
		if late := e.gone.Sub(from); late > e.ttl-sessionTimeout+expiryGrace {
			l.violateLocked("leases: %s went %v after its last heartbeat, %v after the later of that and the last fault (allowed %v)",
				e.path, e.gone.Sub(e.renewed).Round(time.Millisecond), late.Round(time.Millisecond), e.ttl-sessionTimeout+expiryGrace)
		}
	}
	l.mu.Unlock()
	deadline := time.Now().Add(ephemeralGrace)
	for {
		var kids []string
		var err error
		if _, err = c.Sync("/leases/ids"); err == nil {
			kids, _, err = c.Children("/leases/ids")
		}
		if errors.Is(err, zk.ErrNoNode) || err == nil && len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				l.violate("leases: list /leases/ids: %v", err)
			} else {
				l.violate("leases: %d registrations outlived their leases by %v: %v", len(kids), ephemeralGrace, kids[:min(5, len(kids))])
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return l.list()
}
