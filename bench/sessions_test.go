package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestHistogramJSONRoundTrip(t *testing.T) {
	var h, back Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0.5, 0.99, 1} {
		if h.Quantile(q) != back.Quantile(q) {
			t.Errorf("q%v: %v after the round trip, %v before", q, back.Quantile(q), h.Quantile(q))
		}
	}
	if back.Count() != 1000 || back.Max() != h.Max() || back.Mean() != h.Mean() {
		t.Errorf("count %d max %v mean %v, want 1000 %v %v", back.Count(), back.Max(), back.Mean(), h.Max(), h.Mean())
	}
	var empty Histogram
	if err := json.Unmarshal([]byte(`{"n":0}`), &empty); err != nil || empty.Count() != 0 {
		t.Errorf("empty: %v %d", err, empty.Count())
	}
}

// runStorm holds 40 sessions over two fake servers, stops the first at
// the storm and returns the result.
func runStorm(t *testing.T, expire bool) *Result {
	t.Helper()
	a, b := startFake(t), startFake(t)
	a.expire.Store(expire)
	b.expire.Store(expire)
	var phases []string
	cfg := Config{Addrs: []string{a.addr(), b.addr()}, Workload: "sessions", Connections: 40,
		SessionTimeout: 900 * time.Millisecond, Duration: 700 * time.Millisecond, Warmup: 10 * time.Millisecond,
		StormAddr: a.addr(), StormWait: 5 * time.Second, ReconnectJitter: 50 * time.Millisecond,
		testHook: func(phase string) error {
			phases = append(phases, phase)
			if phase == "storm" {
				a.kill()
			}
			return nil
		}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(phases) != 2 || phases[0] != "held" || phases[1] != "storm" {
		t.Errorf("hook phases %v, want held, storm", phases)
	}
	return res
}

func TestSessionsStormResumesElsewhere(t *testing.T) {
	res := runStorm(t, false)
	s := res.Sessions
	if s == nil || s.Sessions != 40 || s.Lost != 20 || s.Resumed != 20 || s.Expired != 0 || s.Unresolved != 0 || s.LostBeforeStorm != 0 {
		t.Fatalf("sessions %+v, want 40 held, the 20 on the stopped server lost and resumed", s)
	}
	if s.StormS <= 0 || s.StormS > 5 || !s.StormKilled {
		t.Errorf("storm took %v s (killed %v)", s.StormS, s.StormKilled)
	}
	// Each session pings every 300 ms: about 2 pings each in 700 ms (at
	// least one from half of them on a starved machine).
	if res.Ops < 20 || res.Latency.P99 <= 0 {
		t.Errorf("%d pings measured, p99 %v ms", res.Ops, res.Latency.P99)
	}
}

func TestSessionsStormCountsExpiries(t *testing.T) {
	s := runStorm(t, true).Sessions
	if s == nil || s.Lost != 20 || s.Expired != 20 || s.Resumed != 0 {
		t.Fatalf("sessions %+v, want the 20 lost sessions expired", s)
	}
}
