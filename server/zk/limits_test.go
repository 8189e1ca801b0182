package zk

import (
	"testing"
	"time"

	"github.com/zkbridge/zkbridge/server/config"
)

// The connection throttle is ZooKeeper's BlueThrottle: a token bucket
// (tokens, fill_time, fill_count), 0 tokens disabling it, and BLUE's
// random early drop once freeze_time is set.
func TestConnThrottle(t *testing.T) {
	now := time.Unix(1000, 0)
	mk := func(l config.LimitsConfig) *connThrottle {
		c := config.Config{Limits: l}
		c.Normalize()
		th := newConnThrottle(c.Limits)
		th.now = func() time.Time { return now }
		th.lastFill, th.lastFreeze = now, now
		return th
	}
	off := mk(config.LimitsConfig{})
	for i := 0; i < 1000; i++ {
		if !off.allow() {
			t.Fatal("0 tokens must not throttle")
		}
	}

	th := mk(config.LimitsConfig{ConnectionThrottleTokens: 3, ConnectionThrottleFillTime: 100 * time.Millisecond, ConnectionThrottleFillCount: 2})
	for i := 0; i < 3; i++ {
		if !th.allow() {
			t.Fatalf("connection %d refused with tokens left", i+1)
		}
	}
	if th.allow() {
		t.Fatal("4th connection allowed with the bucket empty")
	}
	now = now.Add(100 * time.Millisecond) // not more than fill_time: no refill yet
	if th.allow() {
		t.Fatal("refilled before fill_time passed")
	}
	now = now.Add(101 * time.Millisecond) // 201 ms since the last fill: 4 tokens, capped at 3
	for i := 0; i < 3; i++ {
		if !th.allow() {
			t.Fatalf("after refill, connection %d refused", i+1)
		}
	}
	if th.allow() || th.Rejected() != 3 {
		t.Fatalf("refill must cap at the bucket size; rejected %d", th.Rejected())
	}

	// BLUE: with an empty bucket at every freeze interval the drop
	// probability climbs; a full bucket brings it back down.
	blue := mk(config.LimitsConfig{ConnectionThrottleTokens: 2, ConnectionThrottleFillTime: time.Hour,
		ConnectionThrottleFreezeTime: 10 * time.Millisecond, ConnectionThrottleDropIncrease: 0.5, ConnectionThrottleDropDecrease: 0.5})
	blue.random = func() float64 { return 0.75 }
	blue.allow()
	blue.allow() // bucket empty
	now = now.Add(11 * time.Millisecond)
	blue.allow() // drop 0.5
	now = now.Add(11 * time.Millisecond)
	blue.allow() // drop 1
	if blue.drop != 1 {
		t.Fatalf("drop probability %v, want 1 after two empty intervals", blue.drop)
	}
	if blue.allow() {
		t.Fatal("dropped with probability 1, yet allowed")
	}
	blue.tokens = blue.maxTokens
	now = now.Add(11 * time.Millisecond)
	if !blue.allow() || blue.drop != 0.5 {
		t.Fatalf("a full bucket lowers the drop to 0.5 (got %v) and 0.75 passes it", blue.drop)
	}
}
