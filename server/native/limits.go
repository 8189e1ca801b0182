package native

import (
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Limiter is a tenant's limits as its ZooKeeper door keeps them (the
// registry's max-znodes, max-bytes, max-sessions and max-ops-per-sec):
// the tenant's native door shares them, and their counters, so that a
// tenant's native clients and ZooKeeper clients draw on one budget and
// every refusal shows in the same zkbridge_tenant_* metrics.
type Limiter interface {
	// QuotaLimits are the znode and byte limits (0: none).
	QuotaLimits() (maxZnodes, maxBytes int64)
	// AdmitSession reports whether one more session fits (a refusal is
	// counted).
	AdmitSession() bool
	// TryRequest takes a token of the request rate limit without waiting;
	// when none is left it counts a throttled request and says how long
	// until one is.
	TryRequest() (ok bool, retryIn time.Duration)
	// CountQuotaExceeded counts a write refused by the znode or byte limit.
	CountQuotaExceeded()
}

type limiterRef struct{ l Limiter }

// SetLimiter makes this (a tenant's) door enforce l.
func (s *Server) SetLimiter(l Limiter) { s.limiter.Store(&limiterRef{l}) }

func (s *Server) limits() Limiter {
	if r := s.limiter.Load(); r != nil {
		return r.l
	}
	return nil
}

// limited wraps a write in the tenant's znode and byte limits (enforced
// in apply, sm.WithinLimits).
func (s *Server) limited(op sm.Op) (sm.Op, bool) {
	l := s.limits()
	if l == nil {
		return op, false
	}
	maxZnodes, maxBytes := l.QuotaLimits()
	return sm.Limit(op, maxZnodes, maxBytes)
}

// countQuota counts a limited write that apply refused.
func (s *Server) countQuota(limited bool, res *sm.Result) {
	if l := s.limits(); limited && l != nil && res != nil && res.Err == zkproto.ErrQuotaExceeded {
		l.CountQuotaExceeded()
	}
}

// admitSession refuses a new lease past the tenant's max-sessions.
func (s *Server) admitSession(path string) error {
	if l := s.limits(); l != nil && !l.AdmitSession() {
		return status.Errorf(codes.ResourceExhausted, "register %s: the tenant has its maximum of sessions (ZooKeeper sessions and leases count alike); raise it with `zkbridge tenant update --max-sessions N`, or deregister members", path)
	}
	return nil
}

// unthrottled are the calls the rate limit lets through: a lease's
// renewal is a ZooKeeper ping's equal (holding it back would expire the
// lease of a client doing nothing wrong).
var unthrottled = map[string]bool{"Heartbeat": true, "KeepAlive": true}

// admitRequest applies the tenant's request rate limit to a call routed
// to this door: past it the call is answered RESOURCE_EXHAUSTED at once
// (a gRPC client backs off and retries; the ZooKeeper door holds its
// reader back instead, a ZooKeeper client having no such answer).
func (s *Server) admitRequest(fullMethod string) error {
	l := s.limits()
	if l == nil {
		return nil
	}
	method := fullMethod[strings.LastIndex(fullMethod, "/")+1:]
	if unthrottled[method] || !strings.HasPrefix(fullMethod, "/"+zkbridgev1.Bridge_ServiceDesc.ServiceName+"/") {
		return nil
	}
	if ok, retryIn := l.TryRequest(); !ok {
		return status.Errorf(codes.ResourceExhausted, "%s: the tenant is over its request rate (max-ops-per-sec); retry in %v, or raise it with `zkbridge tenant update --max-ops-per-sec N`", method, retryIn.Round(time.Millisecond))
	}
	return nil
}

// limiterSlot is the door's Limiter (nil: none, the default tenant's).
type limiterSlot = atomic.Pointer[limiterRef]
