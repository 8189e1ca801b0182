package bridgebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/bench"
)

// Config is one native benchmark run.
type Config struct {
	Workload string        // leases, feed, allocate, snapshot
	Addrs    []string      // zkbridge native API addresses
	Etcd     []string      // etcd client URLs' host:port; none: zkbridge only
	Duration time.Duration // measured time
	// leases
	Leases    int           // leases held
	TTL       time.Duration // lease TTL
	Heartbeat time.Duration // heartbeat interval per lease
	Streams   int           // keep-alive streams the leases share
	// feed
	Subscribers int // change-feed subscribers
	Rate        int // writes per second
	Writers     int // concurrent writers
	// allocate
	Block int64 // ids per AllocateID
	// snapshot
	Znodes int                // znodes in the subtree (created once if missing)
	rss    func() *rssSampler // set by runOne
	// Pids and EtcdPids are the servers' processes, whose peak resident
	// set is sampled while a workload is measured (optional).
	Pids, EtcdPids []int
}

// Workloads are the names Run accepts.
var Workloads = []string{"leases", "feed", "allocate", "snapshot"}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.Leases <= 0 {
		c.Leases = 10000
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 2 * time.Second
	}
	if c.Streams <= 0 {
		c.Streams = 16
	}
	if c.Subscribers <= 0 {
		c.Subscribers = 10
	}
	if c.Rate <= 0 {
		c.Rate = 5000
	}
	if c.Writers <= 0 {
		c.Writers = 64
	}
	if c.Block <= 0 {
		c.Block = 100
	}
	if c.Znodes <= 0 {
		c.Znodes = 1_000_000
	}
}

// Result is one system's figures.
type Result struct {
	System   string `json:"system"` // zkbridge or etcd
	Workload string `json:"workload"`
	// Ops is what the workload counts (heartbeats, delivered events,
	// blocks, znodes) and OpsPerSec its rate over the measured time.
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency: heartbeat round trip, commit (write acknowledged) to
	// delivery, AllocateID round trip.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Held and Lost: leases still alive at the end and lost meanwhile.
	Held int64 `json:"held,omitempty"`
	Lost int64 `json:"lost,omitempty"`
	// Errors counts failed requests; Seconds the time the figure covers
	// (setup excluded, except for snapshot, where it is the snapshot).
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes,omitempty"` // snapshot bytes received
	// PeakRSSMiB is the largest server process's peak resident set while
	// measured (0: no process ids given).
	PeakRSSMiB float64 `json:"peak_rss_mib,omitempty"`
	Note       string  `json:"note,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fill(r *Result, h *bench.Histogram) {
	r.P50Ms, r.P99Ms, r.MaxMs = ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Max())
}

// Run runs the workload against zkbridge and then, if given, etcd.
func Run(ctx context.Context, cfg Config, progress io.Writer) ([]Result, error) {
	cfg.Defaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no zkbridge native address (--addr)")
	}
	var out []Result
	zb, err := dialZkbridge(cfg.Addrs)
	if err != nil {
		return nil, err
	}
	defer zb.close()
	fmt.Fprintf(progress, "bench native: %s against zkbridge at %s\n", cfg.Workload, strings.Join(cfg.Addrs, ","))
	r, err := runOne(ctx, cfg, zb, cfg.Pids)
	if err != nil {
		return nil, fmt.Errorf("zkbridge: %w", err)
	}
	out = append(out, r)
	if len(cfg.Etcd) > 0 {
		et, err := dialEtcd(cfg.Etcd)
		if err != nil {
			return out, err
		}
		defer et.close()
		fmt.Fprintf(progress, "bench native: %s against etcd at %s\n", cfg.Workload, strings.Join(cfg.Etcd, ","))
		r, err := runOne(ctx, cfg, et, cfg.EtcdPids)
		if err != nil {
			return out, fmt.Errorf("etcd: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func runOne(ctx context.Context, cfg Config, sys system, pids []int) (Result, error) {
	var r Result
	var err error
	cfg.rss = func() *rssSampler { return sampleRSS(pids) }
	switch cfg.Workload {
	case "leases":
		r, err = leases(ctx, cfg, sys)
	case "feed":
		r, err = feed(ctx, cfg, sys)
	case "allocate":
		r, err = allocate(ctx, cfg, sys)
	case "snapshot":
		r, err = snapshot(ctx, cfg, sys)
	default:
		return r, fmt.Errorf("unknown workload %q (want one of %s)", cfg.Workload, strings.Join(Workloads, ", "))
	}
	r.System, r.Workload = sys.name(), cfg.Workload
	return r, err
}

// system is what a workload needs of the server under test.
type system interface {
	name() string
	close()
	// grant creates lease i with a key (a registration) and returns its id.
	grant(ctx context.Context, i int, ttl time.Duration) (int64, error)
	// keepAlive opens a stream: send(id) renews, recv returns the id
	// answered and whether the lease is alive.
	keepAlive(ctx context.Context) (keepAliveStream, error)
	// revokeAll ends the leases granted.
	revokeAll(ctx context.Context, ids []int64)
	// put writes key (under the feed prefix) and returns the write's
	// offset (zxid or revision).
	put(ctx context.Context, key string, val []byte) (int64, error)
	// subscribe streams the offsets of changes under the feed prefix.
	subscribe(ctx context.Context, deliver func(offset int64)) error
	// allocate reserves count ids.
	allocate(ctx context.Context, count int64) error
	// fill makes sure n keys exist under the snapshot prefix.
	fill(ctx context.Context, n int, progress func(done int)) error
	// image reads the snapshot prefix whole: keys and bytes.
	image(ctx context.Context) (int64, int64, error)
	// count is the number of live registrations.
	count(ctx context.Context) (int64, error)
}

type keepAliveStream interface {
	send(id int64) error
	recv() (int64, bool, error)
	close()
}

// leases registers cfg.Leases leases and renews each every heartbeat
// interval over shared streams: a lease's heartbeats start as soon as it
// is granted (granting thousands can take longer than a TTL), and the
// measured time starts once all are granted.
func leases(ctx context.Context, cfg Config, sys system) (Result, error) {
	var r Result
	ids := make([]atomic.Int64, cfg.Leases)
	var next atomic.Int64
	var grantWG, wg sync.WaitGroup
	var grantErr atomic.Value
	granted := make(chan struct{})
	for w := 0; w < 32; w++ {
		grantWG.Add(1)
		go func() {
			defer grantWG.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Leases || ctx.Err() != nil || grantErr.Load() != nil {
					return
				}
				id, err := sys.grant(ctx, i, cfg.TTL)
				if err != nil {
					grantErr.Store(err)
					return
				}
				ids[i].Store(id)
			}
		}()
	}
	var measuring atomic.Bool
	var end atomic.Int64 // unix ns; 0 until every lease is granted
	hists := make([]*bench.Histogram, cfg.Streams)
	var lost, errs, ops atomic.Int64
	for s := 0; s < cfg.Streams; s++ {
		hists[s] = &bench.Histogram{}
		lo, hi := s*cfg.Leases/cfg.Streams, (s+1)*cfg.Leases/cfg.Streams
		wg.Add(1)
		go func(h *bench.Histogram) {
			defer wg.Done()
			st, err := sys.keepAlive(ctx)
			if err != nil {
				errs.Add(1)
				return
			}
			defer st.close()
			sent := map[int64][]time.Time{}
			var mu sync.Mutex
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					id, alive, err := st.recv()
					if err != nil {
						return
					}
					now := time.Now()
					mu.Lock()
					q := sent[id]
					if len(q) > 0 {
						if measuring.Load() {
							h.Record(now.Sub(q[0]))
						}
						sent[id] = q[1:]
					}
					mu.Unlock()
					if measuring.Load() {
						ops.Add(1)
						if !alive {
							lost.Add(1)
						}
					}
				}
			}()
			// Spread each lease's heartbeats evenly over the interval.
			gap := cfg.Heartbeat / time.Duration(max(1, hi-lo))
			tick := time.NewTicker(max(gap, 50*time.Microsecond))
			defer tick.Stop()
			for i := 0; ; i++ {
				if e := end.Load(); e != 0 && time.Now().UnixNano() > e {
					break
				}
				<-tick.C
				id := ids[lo+i%(hi-lo)].Load()
				if id == 0 {
					continue // not granted yet
				}
				mu.Lock()
				sent[id] = append(sent[id], time.Now())
				mu.Unlock()
				if err := st.send(id); err != nil {
					errs.Add(1)
					return
				}
			}
			time.Sleep(200 * time.Millisecond) // the last answers
			st.close()
			<-done
		}(hists[s])
	}
	grantStart := time.Now()
	grantWG.Wait()
	close(granted)
	grantTime := time.Since(grantStart)
	if err, ok := grantErr.Load().(error); ok {
		end.Store(1)
		wg.Wait()
		return r, fmt.Errorf("grant: %w", err)
	}
	rss := cfg.rss()
	measuring.Store(true)
	end.Store(time.Now().Add(cfg.Duration).UnixNano())
	wg.Wait()
	r.PeakRSSMiB = rss.done()
	all := make([]int64, len(ids))
	for i := range ids {
		all[i] = ids[i].Load()
	}
	defer sys.revokeAll(context.Background(), all)
	h := &bench.Histogram{}
	for _, x := range hists {
		h.Merge(x)
	}
	held, err := sys.count(ctx)
	if err != nil {
		errs.Add(1)
	}
	r.Ops, r.Seconds, r.Held, r.Lost, r.Errors = ops.Load(), cfg.Duration.Seconds(), held, lost.Load(), errs.Load()
	r.OpsPerSec = float64(r.Ops) / r.Seconds
	fill(&r, h)
	r.Note = fmt.Sprintf("%d leases granted in %v (%.0f/s), TTL %v, a heartbeat each every %v over %d streams; latency = heartbeat round trip",
		cfg.Leases, grantTime.Round(time.Millisecond), float64(cfg.Leases)/grantTime.Seconds(), cfg.TTL, cfg.Heartbeat, cfg.Streams)
	return r, nil
}

// feed writes at cfg.Rate for the measured time while cfg.Subscribers
// follow the prefix; latency is from the write's acknowledgement to each
// subscriber's delivery of its offset (negative values, a delivery before
// the writer heard back, count as 0).
func feed(ctx context.Context, cfg Config, sys system) (Result, error) {
	var r Result
	var ackMu sync.Mutex
	acked := map[int64]time.Time{}
	type delivery struct {
		off int64
		at  time.Time
	}
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	deliveries := make([][]delivery, cfg.Subscribers)
	var subWG sync.WaitGroup
	ready := make(chan struct{}, cfg.Subscribers)
	for i := 0; i < cfg.Subscribers; i++ {
		subWG.Add(1)
		go func(i int) {
			defer subWG.Done()
			first := true
			_ = sys.subscribe(subCtx, func(off int64) {
				if first {
					first = false
					ready <- struct{}{}
					if off < 0 {
						return
					}
				}
				deliveries[i] = append(deliveries[i], delivery{off, time.Now()})
			})
		}(i)
	}
	for i := 0; i < cfg.Subscribers; i++ {
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			return r, errors.New("subscribers did not start within 10 s")
		}
	}
	var errs, writes atomic.Int64
	rss := cfg.rss()
	end := time.Now().Add(cfg.Duration)
	per := time.Duration(float64(time.Second) * float64(cfg.Writers) / float64(cfg.Rate))
	var wg sync.WaitGroup
	for w := 0; w < cfg.Writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			next := time.Now().Add(per * time.Duration(w) / time.Duration(cfg.Writers))
			for i := 0; next.Before(end); i++ {
				time.Sleep(time.Until(next))
				next = next.Add(per)
				off, err := sys.put(ctx, fmt.Sprintf("k%d", (w*7919+i)%1000), []byte("v"))
				if err != nil {
					errs.Add(1)
					continue
				}
				now := time.Now()
				ackMu.Lock()
				acked[off] = now
				ackMu.Unlock()
				writes.Add(1)
			}
		}(w)
	}
	wg.Wait()
	r.PeakRSSMiB = rss.done()
	time.Sleep(time.Second) // the last deliveries
	stopSubs()
	subWG.Wait()
	h := &bench.Histogram{}
	var delivered int64
	for _, ds := range deliveries {
		for _, d := range ds {
			at, ok := acked[d.off]
			if !ok {
				continue
			}
			delivered++
			h.Record(max(0, d.at.Sub(at)))
		}
	}
	r.Ops, r.Seconds, r.Errors = delivered, cfg.Duration.Seconds(), errs.Load()
	r.OpsPerSec = float64(writes.Load()) / r.Seconds
	fill(&r, h)
	missing := writes.Load()*int64(cfg.Subscribers) - delivered
	r.Note = fmt.Sprintf("%d subscribers, %d writes/s asked, %.0f/s done by %d writers; %d deliveries missing; latency = write acknowledged → delivered", cfg.Subscribers, cfg.Rate, r.OpsPerSec, cfg.Writers, missing)
	return r, nil
}

// allocate reserves blocks from 32 concurrent callers for the measured
// time.
func allocate(ctx context.Context, cfg Config, sys system) (Result, error) {
	var r Result
	var errs, ops atomic.Int64
	rss := cfg.rss()
	end := time.Now().Add(cfg.Duration)
	hists := make([]*bench.Histogram, 32)
	var wg sync.WaitGroup
	for w := range hists {
		hists[w] = &bench.Histogram{}
		wg.Add(1)
		go func(h *bench.Histogram) {
			defer wg.Done()
			for time.Now().Before(end) {
				start := time.Now()
				if err := sys.allocate(ctx, cfg.Block); err != nil {
					errs.Add(1)
					continue
				}
				h.Record(time.Since(start))
				ops.Add(1)
			}
		}(hists[w])
	}
	wg.Wait()
	r.PeakRSSMiB = rss.done()
	h := &bench.Histogram{}
	for _, x := range hists {
		h.Merge(x)
	}
	r.Ops, r.Seconds, r.Errors = ops.Load(), cfg.Duration.Seconds(), errs.Load()
	r.OpsPerSec = float64(r.Ops) / r.Seconds
	fill(&r, h)
	how := "AllocateID: one replicated increment per block"
	if sys.name() == "etcd" {
		how = "a compare-and-swap transaction on the key's mod revision, again on a conflict"
	}
	r.Note = fmt.Sprintf("blocks of %d ids, 32 concurrent callers on one counter (%s); latency = one block", cfg.Block, how)
	return r, nil
}

// snapshot fills the prefix with cfg.Znodes keys once (unmeasured), then
// reads it whole.
func snapshot(ctx context.Context, cfg Config, sys system) (Result, error) {
	var r Result
	last := time.Now()
	if err := sys.fill(ctx, cfg.Znodes, func(done int) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Printf("bench native: %s: %d of %d keys\n", sys.name(), done, cfg.Znodes)
		}
	}); err != nil {
		return r, fmt.Errorf("fill: %w", err)
	}
	rss := cfg.rss()
	start := time.Now()
	n, b, err := sys.image(ctx)
	r.PeakRSSMiB = rss.done()
	if err != nil {
		return r, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.Ops, r.Bytes = n, b
	r.OpsPerSec = float64(n) / r.Seconds
	r.Note = fmt.Sprintf("a consistent image of %d keys, streamed in chunks", n)
	return r, nil
}

// ---- zkbridge ----

type zkbridge struct {
	conns   []*grpc.ClientConn
	clients []zkbridgev1.BridgeClient
	next    atomic.Uint64
	mu      sync.Mutex
	tokens  map[int64][]byte
}

func dialZkbridge(addrs []string) (*zkbridge, error) {
	z := &zkbridge{tokens: map[int64][]byte{}}
	for _, a := range addrs {
		cc, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			z.close()
			return nil, fmt.Errorf("dial %s: %w", a, err)
		}
		z.conns = append(z.conns, cc)
		z.clients = append(z.clients, zkbridgev1.NewBridgeClient(cc))
	}
	return z, nil
}

func (z *zkbridge) name() string { return "zkbridge" }

func (z *zkbridge) close() {
	for _, c := range z.conns {
		c.Close()
	}
}

func (z *zkbridge) c() zkbridgev1.BridgeClient {
	return z.clients[z.next.Add(1)%uint64(len(z.clients))]
}

func (z *zkbridge) grant(ctx context.Context, i int, ttl time.Duration) (int64, error) {
	r, err := z.c().Register(ctx, &zkbridgev1.RegisterRequest{Group: "bench-leases", MemberId: fmt.Sprint(i), LeaseTtlMs: ttl.Milliseconds()})
	if err != nil {
		return 0, err
	}
	z.mu.Lock()
	z.tokens[r.Lease.Id] = r.Lease.Token
	z.mu.Unlock()
	return r.Lease.Id, nil
}

type zkbKeepAlive struct {
	st     zkbridgev1.Bridge_KeepAliveClient
	cancel context.CancelFunc
}

func (z *zkbridge) keepAlive(ctx context.Context) (keepAliveStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := z.c().KeepAlive(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &zkbKeepAlive{st: st, cancel: cancel}, nil
}

func (k *zkbKeepAlive) send(id int64) error {
	return k.st.Send(&zkbridgev1.HeartbeatRequest{LeaseId: id})
}
func (k *zkbKeepAlive) recv() (int64, bool, error) {
	r, err := k.st.Recv()
	if err != nil {
		return 0, false, err
	}
	return r.LeaseId, r.TtlMs > 0, nil
}
func (k *zkbKeepAlive) close() { k.cancel() }

func (z *zkbridge) revokeAll(ctx context.Context, ids []int64) {
	forEachLease(ids, func(id int64) {
		z.mu.Lock()
		tok := z.tokens[id]
		z.mu.Unlock()
		_, _ = z.c().Deregister(ctx, &zkbridgev1.DeregisterRequest{Lease: &zkbridgev1.Lease{Id: id, Token: tok}})
	})
}

// forEachLease runs fn for every granted (nonzero) id, 32 at a time.
func forEachLease(ids []int64, fn func(id int64)) {
	var wg sync.WaitGroup
	ch := make(chan int64)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ch {
				fn(id)
			}
		}()
	}
	for _, id := range ids {
		if id != 0 {
			ch <- id
		}
	}
	close(ch)
	wg.Wait()
}

func (z *zkbridge) count(ctx context.Context) (int64, error) {
	r, err := z.c().List(ctx, &zkbridgev1.ListRequest{Path: "/bench-leases/ids"})
	if err != nil {
		return 0, err
	}
	return int64(len(r.Children)), nil
}

func (z *zkbridge) put(ctx context.Context, key string, val []byte) (int64, error) {
	r, err := z.c().Put(ctx, &zkbridgev1.PutRequest{Path: "/bench-feed/" + key, Data: val, ExpectedVersion: -1})
	if err != nil {
		if strings.Contains(err.Error(), "NoNode") || strings.Contains(err.Error(), "not found") {
			_, _ = z.c().Put(ctx, &zkbridgev1.PutRequest{Path: "/bench-feed", ExpectedVersion: -1})
			r, err = z.c().Put(ctx, &zkbridgev1.PutRequest{Path: "/bench-feed/" + key, Data: val, ExpectedVersion: -1})
		}
		if err != nil {
			return 0, err
		}
	}
	return r.Stat.Mzxid, nil
}

func (z *zkbridge) subscribe(ctx context.Context, deliver func(int64)) error {
	st, err := z.c().FetchMetadata(ctx, &zkbridgev1.FetchMetadataRequest{Prefixes: []string{"/bench-feed"}, MaxWaitMs: 100, FromOffset: 0})
	if err != nil {
		return err
	}
	started := false
	for {
		r, err := st.Recv()
		if err != nil {
			return err
		}
		if !started {
			started = true
			deliver(-1) // subscribed
		}
		for _, rec := range r.Records {
			deliver(rec.Offset)
		}
	}
}

func (z *zkbridge) allocate(ctx context.Context, count int64) error {
	_, err := z.c().AllocateID(ctx, &zkbridgev1.AllocateIDRequest{CounterPath: "/bench-seqid", Count: count})
	return err
}

func (z *zkbridge) fill(ctx context.Context, n int, progress func(int)) error {
	c := z.c()
	if _, err := c.Put(ctx, &zkbridgev1.PutRequest{Path: "/bench-snap", ExpectedVersion: -1}); err != nil {
		return err
	}
	have, err := c.Get(ctx, &zkbridgev1.GetRequest{Path: "/bench-snap"})
	if err != nil {
		return err
	}
	return fillKeys(int64(have.Stat.NumChildren), int64(n), progress, func(i int64) error {
		// A put is safe to repeat (set or create, any version): one caught
		// in a leader change is asked again, on the next node.
		var err error
		for attempt := 0; attempt < 10; attempt++ {
			_, err = z.c().Put(ctx, &zkbridgev1.PutRequest{Path: fmt.Sprintf("/bench-snap/n%08d", i), Data: make([]byte, 100), ExpectedVersion: -1})
			if status.Code(err) != codes.Unavailable {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	})
}

// fillKeys writes keys from..n-1 with put, 64 at a time, reporting progress
// every 10,000; the first error stops it.
func fillKeys(from, n int64, progress func(int), put func(i int64) error) error {
	var next atomic.Int64
	next.Store(from)
	var wg sync.WaitGroup
	var fail atomic.Value
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n || fail.Load() != nil {
					return
				}
				if err := put(i); err != nil {
					fail.Store(err)
					return
				}
				if i%10000 == 0 {
					progress(int(i))
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := fail.Load().(error); ok {
		return err
	}
	return nil
}

func (z *zkbridge) image(ctx context.Context) (int64, int64, error) {
	st, err := z.c().FetchMetadataSnapshot(ctx, &zkbridgev1.FetchMetadataSnapshotRequest{Prefixes: []string{"/bench-snap"}})
	if err != nil {
		return 0, 0, err
	}
	var n, b int64
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return n, b, nil
		}
		if err != nil {
			return n, b, err
		}
		for _, nd := range r.Nodes {
			n++
			b += int64(len(nd.Path) + len(nd.Data))
		}
		if r.Last {
			return n, b, nil
		}
	}
}

// Table formats results as a text table, with ratios to the first row.
func Table(rs []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-9s %12s %12s %9s %9s %9s %8s %6s %7s %9s %9s\n", "system", "workload", "ops", "ops/s", "p50 ms", "p99 ms", "max ms", "held", "lost", "errors", "seconds", "peak RSS")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-9s %-9s %12d %12.0f %9.2f %9.2f %9.2f %8d %6d %7d %9.2f %8.0fM\n", r.System, r.Workload, r.Ops, r.OpsPerSec, r.P50Ms, r.P99Ms, r.MaxMs, r.Held, r.Lost, r.Errors, r.Seconds, r.PeakRSSMiB)
	}
	if len(rs) == 2 && rs[1].OpsPerSec > 0 {
		fmt.Fprintf(&b, "ratio zkbridge/etcd: ops/s %.2f", rs[0].OpsPerSec/rs[1].OpsPerSec)
		if rs[1].P99Ms > 0 {
			fmt.Fprintf(&b, ", p99 %.2f (below 1: zkbridge faster)", rs[0].P99Ms/rs[1].P99Ms)
		}
		b.WriteString("\n")
	}
	for _, r := range rs {
		if r.Note != "" {
			fmt.Fprintf(&b, "%s: %s\n", r.System, r.Note)
		}
	}
	return b.String()
}
