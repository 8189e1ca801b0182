package bench

import (
	"fmt"
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
}

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
}

// startUsage arranges the first sample for from. Nil pids: nothing to
// sample.
func startUsage(pids []int, from time.Time) *usageSampler {
	if len(pids) == 0 {
		return nil
	}
	s := &usageSampler{pids: pids, first: make(chan procSample, 1), err: make(chan error, 1)}
	go func() {
		time.Sleep(time.Until(from))
		smp, err := sampleProcs(pids)
		if err != nil {
			s.err <- err
			return
		}
		s.first <- smp
	}()
	return s
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
	last, err := sampleProcs(s.pids)
	if err != nil {
		return nil, fmt.Errorf("server pids at the end of the measurement: %w", err)
	}
	return usageBetween(s.pids, first, last, ops), nil
}
