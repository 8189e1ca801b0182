package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkbridge/zkbridge/server/stagetrace"
)

// Latency summarises a histogram in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func summarise(h *Histogram) Latency {
	return Latency{P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max()), Mean: ms(h.Mean())}
}

// OpResult is one op's share of a run.
type OpResult struct {
	Op        string           `json:"op"`
	Ops       int64            `json:"ops"` // successful replies
	OpsPerSec float64          `json:"ops_per_sec"`
	Errors    int64            `json:"errors"`
	ErrorsBy  map[string]int64 `json:"errors_by_code,omitempty"`
	Latency   Latency          `json:"latency_ms"` // every reply the server sent, errors included
}

// Result is what a run measured. For the watch workload an op is a round
// and the total's latency is the fan-out time (write sent to last event);
// for the connect workload an op is a session and the total's latency its
// handshake. Errors counts every failed request, of the unit's ops or not.
type Result struct {
	Workload    string   `json:"workload"`
	Mix         string   `json:"mix,omitempty"`
	Servers     []string `json:"servers"`
	Connections int      `json:"connections"`
	Outstanding int      `json:"outstanding"`
	Rate        float64  `json:"rate,omitempty"` // the target ops/s (--rate), if any
	Payload     int      `json:"payload_bytes"`
	Keyspace    int      `json:"keyspace,omitempty"`
	MultiOps    int      `json:"multi_ops,omitempty"`
	Watchers    int      `json:"watchers,omitempty"`
	// ConnectExists: each connect-workload session sent one exists.
	ConnectExists bool       `json:"connect_exists,omitempty"`
	Warmup        float64    `json:"warmup_s"`
	Elapsed       float64    `json:"elapsed_s"` // measured time
	Ops           int64      `json:"ops"`
	OpsPerSec     float64    `json:"ops_per_sec"`
	Errors        int64      `json:"errors"`
	Events        int64      `json:"events,omitempty"` // watch events received
	Latency       Latency    `json:"latency_ms"`
	PerOp         []OpResult `json:"per_op"`
	// Server: the server processes' use of the machine (Config.ServerPIDs).
	Server *ServerUsage `json:"server,omitempty"`
	// MeasuredFrom and MeasuredTo bound the measured time (the servers'
	// write stages are taken over it).
	MeasuredFrom time.Time `json:"-"`
	MeasuredTo   time.Time `json:"-"`
	// Stages is the servers' breakdown of a write's time (zkbridge bench
	// --stages, servers started with ZKBRIDGE_WRITE_STAGES=1).
	Stages *stagetrace.Table `json:"stages,omitempty"`
	// The sessions and watches workloads' own figures.
	Sessions *SessionsResult `json:"sessions,omitempty"`
	Watches  *WatchesResult  `json:"watches,omitempty"`
}

// unitOp names, for workloads whose unit is not a single request, the op
// the totals count.
var unitOp = map[string]Op{"watch": OpWatch, "connect": OpConnect, "churn": OpChurn, "sessions": OpPing,
	"watches": OpArm, "recursive": OpEvent}

func (r *runner) result(stats []*connStats) *Result {
	cfg := r.cfg
	res := &Result{Workload: cfg.Workload, Servers: cfg.Addrs, Connections: cfg.Connections,
		Outstanding: cfg.Outstanding, Rate: cfg.Rate, Payload: cfg.Payload, Warmup: cfg.Warmup.Seconds()}
	switch cfg.Workload {
	case "mixed":
		res.Mix = cfg.Mix.String()
	case "watch":
		res.Connections, res.Outstanding, res.Watchers = cfg.Watchers+1, 1, cfg.Watchers
		res.Events = r.events.Load()
	case "multi":
		res.MultiOps = cfg.MultiOps
	case "connect", "churn":
		res.Outstanding = 1
		res.ConnectExists = cfg.ConnectExists
	case "sessions":
		res.Outstanding = 1
	}
	if r.needsKeys() {
		res.Keyspace = cfg.Keyspace
	}
	last := r.measureFrom
	for _, s := range stats {
		if s.last.After(last) {
			last = s.last
		}
	}
	elapsed := last.Sub(r.measureFrom).Seconds()
	res.Elapsed = elapsed
	res.MeasuredFrom, res.MeasuredTo = r.measureFrom, last
	rate := func(n int64) float64 {
		if elapsed <= 0 {
			return 0
		}
		return float64(n) / elapsed
	}
	var total Histogram
	for op := range numOps {
		var o OpResult
		var h Histogram
		o.Op = op.String()
		for _, s := range stats {
			st := &s.ops[op]
			o.Ops += st.ok
			h.Merge(&st.hist)
			for code, n := range st.errs {
				if o.ErrorsBy == nil {
					o.ErrorsBy = map[string]int64{}
				}
				o.ErrorsBy[code] += n
				o.Errors += n
			}
		}
		if o.Ops == 0 && o.Errors == 0 {
			continue
		}
		o.OpsPerSec = rate(o.Ops)
		o.Latency = summarise(&h)
		res.PerOp = append(res.PerOp, o)
		res.Errors += o.Errors
		if unit, ok := unitOp[cfg.Workload]; ok && op != unit {
			continue // a round (a session) is the unit: the other ops are part of it
		}
		res.Ops += o.Ops
		total.Merge(&h)
	}
	res.OpsPerSec = rate(res.Ops)
	res.Latency = summarise(&total)
	return res
}

// WriteTable prints the result for people.
func (res *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workload %s", res.Workload)
	if res.Mix != "" {
		fmt.Fprintf(&b, " (%s)", res.Mix)
	}
	if res.MultiOps > 0 {
		fmt.Fprintf(&b, " (%d setData per multi)", res.MultiOps)
	}
	fmt.Fprintf(&b, " against %s\n", strings.Join(res.Servers, ","))
	switch {
	case res.Watchers > 0:
		fmt.Fprintf(&b, "%d watchers, 1 writer, payload %d B", res.Watchers, res.Payload)
	case res.Workload == "connect" || res.Workload == "churn":
		fmt.Fprintf(&b, "%d concurrent connectors, a session at a time each", res.Connections)
	case res.Workload == "sessions":
		fmt.Fprintf(&b, "%d sessions held, each pinging every third of its timeout", res.Connections)
	default:
		fmt.Fprintf(&b, "%d connections × %d outstanding, payload %d B", res.Connections, res.Outstanding, res.Payload)
		if res.Rate > 0 {
			fmt.Fprintf(&b, ", paced at %g ops/s", res.Rate)
		}
	}
	if res.Keyspace > 0 {
		fmt.Fprintf(&b, ", keyspace %d", res.Keyspace)
	}
	fmt.Fprintf(&b, "; measured %.2f s after %.1f s warm-up\n\n", res.Elapsed, res.Warmup)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tops\tops/s\terrors\tp50 ms\tp90 ms\tp99 ms\tp999 ms\tmax ms\t")
	row := func(name string, ops int64, rate float64, errs int64, l Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n",
			name, ops, rate, errs, l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	for _, o := range res.PerOp {
		name := o.Op
		if name == "watch" {
			name = "fan-out"
		}
		row(name, o.Ops, o.OpsPerSec, o.Errors, o.Latency)
	}
	if _, unit := unitOp[res.Workload]; len(res.PerOp) > 1 && !unit {
		row("total", res.Ops, res.OpsPerSec, res.Errors, res.Latency)
	}
	tw.Flush()
	if res.Watchers > 0 {
		fmt.Fprintf(&b, "\nfan-out: time from the write's send to the last of %d watch events (after_reply: from its reply); %d events received\n",
			res.Watchers, res.Events)
	}
	if res.Workload == "churn" {
		fmt.Fprintln(&b, "\nchurn: a cycle is connect, create an ephemeral node, closeSession (awaited); ops/s: cycles/s")
	}
	if res.Workload == "recursive" {
		fmt.Fprintln(&b, "\nevent: a persistent recursive watch on / sees every setData; its delivery is timed from the setData's send to the event")
	}
	if s := res.Sessions; s != nil {
		fmt.Fprintf(&b, "\nsessions: %d opened in %.1f s from %d process(es), a ping every %.1f s each; ping: its round trip\n",
			s.Sessions, s.OpenS, s.Processes, s.IntervalS)
		for _, n := range s.PerNode {
			fmt.Fprintf(&b, "  server pid %d %s: %d sessions, RSS %.0f -> %.0f MB, %.1f kB per session\n",
				n.PID, n.Addr, n.Sessions, n.RSSBeforeMB, n.RSSAfterMB, n.RSSPerSessionKB)
		}
		if s.LostBeforeStorm > 0 {
			fmt.Fprintf(&b, "before the storm: %d connections failed, %d sessions expired\n", s.LostBeforeStorm, s.ExpiredBeforeStorm)
		}
		if s.StormAddr != "" {
			fmt.Fprintf(&b, "storm: %s stopped; %d sessions lost, %d resumed elsewhere, %d expired, %d unresolved; the last resumed %.2f s after the stop\n",
				s.StormAddr, s.Lost, s.Resumed, s.Expired, s.Unresolved, s.StormS)
		}
	}
	if w := res.Watches; w != nil {
		fmt.Fprintf(&b, "\nwatches: %d one-shot data watches on %d nodes from %d sessions, set in %.1f s", w.Watches, w.Paths, w.Sessions, w.ArmS)
		if w.RSSAfterMB > 0 {
			fmt.Fprintf(&b, "; server RSS %.0f -> %.0f MB, %.0f bytes per watch", w.RSSBeforeMB, w.RSSAfterMB, w.BytesPerWatch)
		}
		fmt.Fprintln(&b)
	}
	if res.Workload == "connect" {
		fmt.Fprint(&b, "\nconnect: a session's TCP connect and handshake (ops/s: sessions/s); close: closeSession to its reply")
		if res.ConnectExists {
			fmt.Fprint(&b, "; exists: one per session")
		}
		fmt.Fprintln(&b)
	}
	if u := res.Server; u != nil {
		fmt.Fprintf(&b, "\nserver processes %v, per op: %.0f µs on a CPU, %.0f µs waiting for one, %.1f switches onto one (%.2f cores busy)\n",
			u.PIDs, u.CPUPerOp, u.RunqueuePerOp, u.SwitchesPerOp, u.CPUCoresInUse)
		if u.RSSPeakMB > 0 {
			fmt.Fprintf(&b, "server RSS %.0f MB at the start of the measurement, %.0f MB at its peak\n", u.RSSStartMB, u.RSSPeakMB)
		}
	}
	var errs []string
	for _, o := range res.PerOp {
		for _, code := range slices.Sorted(maps.Keys(o.ErrorsBy)) {
			errs = append(errs, fmt.Sprintf("%s %s×%d", o.Op, code, o.ErrorsBy[code]))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, "\nerrors: %s\n", strings.Join(errs, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// progress prints a line per interval (ops/s over the last interval)
// until the returned stop is called.
func (r *runner) progress() (stop func()) {
	if r.cfg.Progress == nil || r.cfg.ProgressInterval <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.ProgressInterval)
		defer t.Stop()
		start, prev, prevAt := time.Now(), int64(0), time.Now()
		end := "\n"
		if r.cfg.ProgressOverwrite {
			end = "\r"
		}
		for {
			select {
			case <-quit:
				if r.cfg.ProgressOverwrite {
					fmt.Fprint(r.cfg.Progress, "\n")
				}
				return
			case now := <-t.C:
				n := r.completed.Load()
				phase := "run"
				if now.Before(r.measureFrom) {
					phase = "warm-up"
				}
				fmt.Fprintf(r.cfg.Progress, "[%6.1fs] %-7s %9.0f ops/s  %10d done  %d errors%s",
					now.Sub(start).Seconds(), phase, float64(n-prev)/now.Sub(prevAt).Seconds(), n, r.failed.Load(), end)
				prev, prevAt = n, now
			}
		}
	}()
	return func() { close(quit); <-done }
}
