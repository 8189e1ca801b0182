package zk

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/server/config"
)

// connThrottle is ZooKeeper's BlueThrottle, the global connection rate
// limit (zookeeper.connection_throttle_*): a token bucket of maxTokens,
// refilled with fillCount tokens every fillTime; each ConnectRequest takes
// a token, or its connection is closed without an answer. With freezeTime set (≥ 0), BLUE's random
// early drop is added: the drop probability rises by dropIncrease while
// the bucket is empty and falls by dropDecrease while it is at most
// decreaseRatio empty, at most once per freezeTime.
type connThrottle struct {
	mu                         sync.Mutex
	maxTokens, tokens          int
	fillCount                  int
	fillTime, freezeTime       time.Duration
	dropIncrease, dropDecrease float64
	decreasePoint, drop        float64
	lastFill, lastFreeze       time.Time
	now                        func() time.Time
	random                     func() float64
	rejected                   int64
}

func newConnThrottle(l config.LimitsConfig) *connThrottle {
	now := time.Now()
	return &connThrottle{
		maxTokens: l.ConnectionThrottleTokens, tokens: l.ConnectionThrottleTokens,
		fillCount: l.ConnectionThrottleFillCount, fillTime: l.ConnectionThrottleFillTime,
		freezeTime: l.ConnectionThrottleFreezeTime, dropIncrease: l.ConnectionThrottleDropIncrease,
		dropDecrease: l.ConnectionThrottleDropDecrease, decreasePoint: l.ConnectionThrottleDecreaseRatio,
		lastFill: now, lastFreeze: now, now: time.Now, random: rand.Float64,
	}
}

// allow takes a token for one ConnectRequest; false: refuse it.
func (t *connThrottle) allow() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maxTokens == 0 {
		return true // 0 tokens disables the throttle, as in ZooKeeper
	}
	now := t.now()
	if diff := now.Sub(t.lastFill); diff > t.fillTime {
		refill := int(int64(diff) * int64(t.fillCount) / int64(t.fillTime))
		t.tokens = min(t.tokens+refill, t.maxTokens)
		t.lastFill = now
	}
	if t.freezeTime >= 0 && !t.blue(now) {
		t.rejected++
		return false
	}
	if t.tokens < 1 {
		t.rejected++
		return false
	}
	t.tokens--
	return true
}

// blue is BlueThrottle.checkBlue.
func (t *connThrottle) blue(now time.Time) bool {
	used := t.maxTokens - t.tokens
	threshold := int(float64(t.maxTokens)*t.decreasePoint + 0.5)
	if now.Sub(t.lastFreeze) > t.freezeTime {
		if used == t.maxTokens && t.drop < 1 {
			t.drop = min(t.drop+t.dropIncrease, 1)
		} else if used <= threshold && t.drop > 0 {
			t.drop = max(t.drop-t.dropDecrease, 0)
		}
		t.lastFreeze = now
	}
	return !(t.random() < t.drop)
}

// Rejected is how many connections the throttle refused.
func (t *connThrottle) Rejected() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejected
}

// requestSlots is how many requests the door processes at once:
// globalOutstandingLimit, or zookeeper.request_throttle_max_requests when
// that is smaller. Requests past it wait in their connection's reader (the
// socket is read no further), queued and never dropped.
func requestSlots(cfg config.Config) int {
	n := cfg.GlobalOutstandingLimit
	if m := cfg.Limits.RequestThrottleMaxRequests; m > 0 && m < n {
		n = m
	}
	return n
}
