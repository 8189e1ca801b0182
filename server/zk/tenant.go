package zk

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Requests is how many requests this door has received since it started
// (a tenant's ops/s in `tenant list`).
func (s *Server) Requests() int64 { return s.metrics.packetsReceived.Load() }

// TenantLimits bound what one tenant's clients may use of the cluster, so
// that one tenant cannot exhaust another; 0 means no limit. They are the
// tenant registry's settings, applied by the tenant's door.
type TenantLimits struct {
	MaxZnodes, MaxBytes, MaxSessions, MaxOpsPerSec int64
}

// LimitCounts count the requests the limits refused or slowed.
type LimitCounts struct {
	// QuotaExceeded: writes refused with QuotaExceeded (znodes or bytes).
	QuotaExceeded int64
	// SessionsRefused: connections closed because the tenant had its
	// maximum of sessions.
	SessionsRefused int64
	// Throttled: requests held back by the request rate limit.
	Throttled int64
}

// tenantLimits is the door's share of a tenant's limits (zero value: none).
type tenantLimits struct {
	limits atomic.Pointer[TenantLimits]
	bucket tokenBucket

	quotaExceeded, sessionsRefused, throttled atomic.Int64
}

// SetTenantLimits sets (or, with a zero value, lifts) the door's limits.
func (s *Server) SetTenantLimits(l TenantLimits) {
	s.tenantLimits.limits.Store(&l)
	s.tenantLimits.bucket.setRate(l.MaxOpsPerSec)
}

// LimitCounts returns what the limits refused or slowed so far.
func (s *Server) LimitCounts() LimitCounts {
	t := &s.tenantLimits
	return LimitCounts{QuotaExceeded: t.quotaExceeded.Load(), SessionsRefused: t.sessionsRefused.Load(), Throttled: t.throttled.Load()}
}

func (s *Server) currentLimits() TenantLimits {
	if l := s.tenantLimits.limits.Load(); l != nil {
		return *l
	}
	return TenantLimits{}
}

// quotaCheck returns op, or a Rejected QuotaExceeded in its place when it
// would take the tenant past its znode or byte limit. A refused write is
// still proposed (as ZooKeeper's error transactions are): it keeps its
// place in the connection's order and consumes its zxid. The check reads
// the local replica, so concurrent writes may overshoot by what is in
// flight.
func (s *Server) quotaCheck(op sm.Op) sm.Op {
	l := s.currentLimits()
	if l.MaxZnodes == 0 && l.MaxBytes == 0 {
		return op
	}
	creates, bytes := int64(0), int64(0)
	count := func(o sm.Op) {
		switch x := o.(type) {
		case *sm.Create:
			creates++
			bytes += int64(len(x.Data))
		case *sm.SetData:
			bytes += int64(len(x.Data))
		}
	}
	if m, ok := op.(*sm.Multi); ok {
		for _, o := range m.Ops {
			count(o)
		}
	} else {
		count(op)
	}
	if creates == 0 && bytes == 0 {
		return op
	}
	st := s.node.TreeStats()
	if (l.MaxZnodes > 0 && creates > 0 && st.Nodes+creates > l.MaxZnodes) ||
		(l.MaxBytes > 0 && bytes > 0 && st.DataBytes+bytes > l.MaxBytes) {
		s.tenantLimits.quotaExceeded.Add(1)
		return &sm.Rejected{Code: zkproto.ErrQuotaExceeded}
	}
	return op
}

// admitSession reports whether a new session fits the tenant's limit.
func (s *Server) admitSession() bool {
	l := s.currentLimits()
	if l.MaxSessions == 0 || int64(s.node.SessionCount()) < l.MaxSessions {
		return true
	}
	s.tenantLimits.sessionsRefused.Add(1)
	return false
}

// throttleRequest holds the connection's reader until the tenant's request rate
// allows one more request (nothing without a limit).
func (s *Server) throttleRequest() {
	if wait := s.tenantLimits.bucket.take(time.Now()); wait > 0 {
		s.tenantLimits.throttled.Add(1)
		time.Sleep(wait)
	}
}

// tokenBucket is a request rate limit: rate tokens a second, a burst of one
// second's worth. take reserves a token and says how long to wait for it.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64 // 0: unlimited
	tokens float64
	last   time.Time
}

func (b *tokenBucket) setRate(perSec int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == float64(perSec) {
		return // unchanged: the bucket keeps its level
	}
	b.rate = float64(perSec)
	b.tokens = b.rate
	b.last = time.Time{}
}

func (b *tokenBucket) take(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return 0
	}
	if !b.last.IsZero() {
		b.tokens = min(b.rate, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}
