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

// withinLimits wraps a write that may grow the tree in the tenant's znode
// and byte limits, which apply enforces against the replicated tree
// (sm.WithinLimits): exact however many writes are in flight, on however
// many nodes. A refused write is an error transaction answering
// QuotaExceeded, as ZooKeeper's quota refusals are: it keeps its place in
// the connection's order and consumes its zxid. limited says whether op
// was wrapped (a QuotaExceeded answer then counts as the tenant's).
func (s *Server) withinLimits(op sm.Op) (_ sm.Op, limited bool) {
	l := s.currentLimits()
	if l.MaxZnodes == 0 && l.MaxBytes == 0 {
		return op, false
	}
	return sm.Limit(op, l.MaxZnodes, l.MaxBytes)
}

// countQuotaRefusal counts a limited write that apply refused.
func (s *Server) countQuotaRefusal(limited bool, code zkproto.ErrCode) {
	if limited && code == zkproto.ErrQuotaExceeded {
		s.tenantLimits.quotaExceeded.Add(1)
	}
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

// LimitsOf returns the limits in force on this door.
func (s *Server) LimitsOf() TenantLimits { return s.currentLimits() }

// The tenant's native door shares these limits and counters
// (native.Limiter).

// QuotaLimits are the tenant's znode and byte limits (0: none).
func (s *Server) QuotaLimits() (maxZnodes, maxBytes int64) {
	l := s.currentLimits()
	return l.MaxZnodes, l.MaxBytes
}

// AdmitSession reports whether one more session (or native lease) fits
// the tenant's limit; a refusal is counted.
func (s *Server) AdmitSession() bool { return s.admitSession() }

// TryRequest takes a token of the tenant's request rate without waiting;
// without one it counts a throttled request and says how long until one.
func (s *Server) TryRequest() (bool, time.Duration) {
	wait := s.tenantLimits.bucket.tryTake(time.Now())
	if wait > 0 {
		s.tenantLimits.throttled.Add(1)
		return false, wait
	}
	return true, 0
}

// CountQuotaExceeded counts a write of the tenant's native door refused by
// the znode or byte limit.
func (s *Server) CountQuotaExceeded() { s.tenantLimits.quotaExceeded.Add(1) }

// tryTake takes a token if one is there, else says how long until one is
// (and takes nothing).
func (b *tokenBucket) tryTake(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate == 0 {
		return 0
	}
	if !b.last.IsZero() {
		b.tokens = min(b.rate, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
