package bench

import (
	"fmt"
	"sync"
	"time"
)

// ServerUsage is what the server processes named by Config.ServerPIDs
// spent over the measured time, per op of the run's unit. On a machine
// the servers share with each other and the load generator, it tells
// work from waiting: CPUPerOp is time on a core, RunqueuePerOp time a
// thread was ready but waited for a core, SwitchesPerOp the times a thread
// was put on a core (each one a wake-up or a preemption).
type ServerUsage struct {
	PIDs           []int   `json:"pids"`
	CPUPerOp       float64 `json:"cpu_us_per_op"`
	RunqueuePerOp  float64 `json:"runqueue_wait_us_per_op"`
	SwitchesPerOp  float64 `json:"switches_per_op"`
	CPUCoresInUse  float64 `json:"cpu_cores"` // CPU time / measured time
	ThreadsSampled int     `json:"threads"`   // at the end of the measurement
	// RSS summed over the processes at the start of the measurement and
	// its peak during it (sampled every rssEvery): a request's memory spike.
	RSSStartMB float64 `json:"rss_start_mb,omitempty"`
	RSSPeakMB  float64 `json:"rss_peak_mb,omitempty"`
}

// rssEvery spaces the RSS samples that find a measurement's peak.
const rssEvery = 10 * time.Millisecond

// procSample is a sum over every thread of some processes.
type procSample struct {
	at       time.Time
	cpu      time.Duration
	runqueue time.Duration
	switches int64
	threads  int
}

// usageBetween turns two samples and the ops between them into per-op
// figures.
func usageBetween(pids []int, a, b procSample, ops int64) *ServerUsage {
	u := &ServerUsage{PIDs: pids, ThreadsSampled: b.threads}
	if elapsed := b.at.Sub(a.at); elapsed > 0 {
		u.CPUCoresInUse = float64(b.cpu-a.cpu) / float64(elapsed)
	}
	if ops > 0 {
		u.CPUPerOp = float64((b.cpu - a.cpu).Nanoseconds()) / 1e3 / float64(ops)
		u.RunqueuePerOp = float64((b.runqueue - a.runqueue).Nanoseconds()) / 1e3 / float64(ops)
		u.SwitchesPerOp = float64(b.switches-a.switches) / float64(ops)
	}
	return u
}

// usageSampler samples the server processes at the start of the
// measurement and at its end.
type usageSampler struct {
	pids  []int
	first chan procSample
	err   chan error
	stop  chan struct{}
	once  sync.Once
	peak  chan [2]int64 // RSS at the start and the peak, when stopped
}

// abandon ends the sampling without a result (a run that failed).
func (s *usageSampler) abandon() {
	if s != nil {
		s.once.Do(func() { close(s.stop) })
	}
}

// startUsage arranges the first sample for from. Nil pids: nothing to
// sample.
func startUsage(pids []int, from time.Time) *usageSampler {
	if len(pids) == 0 {
		return nil
	}
	s := &usageSampler{pids: pids, first: make(chan procSample, 1), err: make(chan error, 1),
		stop: make(chan struct{}), peak: make(chan [2]int64, 1)}
	go func() {
		select {
		case <-time.After(time.Until(from)):
		case <-s.stop:
			return
		}
		smp, err := sampleProcs(pids)
		if err != nil {
			s.err <- err
			return
		}
		s.first <- smp
		// The RSS peak, until finish (or abandon).
		start := rssSum(pids)
		peak := start
		t := time.NewTicker(rssEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.peak <- [2]int64{start, max(peak, rssSum(pids))}
				return
			case <-t.C:
				peak = max(peak, rssSum(pids))
			}
		}
	}()
	return s
}

// rssSum is the processes' RSS in bytes (0 where unreadable).
func rssSum(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		v, _ := readRSS(pid)
		sum += v
	}
	return sum
}

// finish takes the second sample; ops are the measured ops.
func (s *usageSampler) finish(ops int64) (*ServerUsage, error) {
	if s == nil {
		return nil, nil
	}
	var first procSample
	select {
	case first = <-s.first:
	case err := <-s.err:
		return nil, fmt.Errorf("server pids at the start of the measurement: %w", err)
	}
	s.once.Do(func() { close(s.stop) })
	rss := <-s.peak
	last, err := sampleProcs(s.pids)
	if err != nil {
		return nil, fmt.Errorf("server pids at the end of the measurement: %w", err)
	}
	u := usageBetween(s.pids, first, last, ops)
	u.RSSStartMB, u.RSSPeakMB = float64(rss[0])/1e6, float64(rss[1])/1e6
	return u, nil
}
