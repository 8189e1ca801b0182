package bridgebench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSampler records the peak resident set of a set of processes, polled
// every 100 ms from /proc (Linux; elsewhere it reports nothing).
type rssSampler struct {
	pids []int
	stop chan struct{}
	wg   sync.WaitGroup
	peak int64 // bytes, the largest process's peak
}

func sampleRSS(pids []int) *rssSampler {
	s := &rssSampler{pids: pids, stop: make(chan struct{})}
	if len(pids) == 0 {
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			for _, p := range s.pids {
				if v := rssOf(p); v > s.peak {
					s.peak = v
				}
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// done stops sampling and returns the peak in MiB (0: not measured).
func (s *rssSampler) done() float64 {
	close(s.stop)
	s.wg.Wait()
	return float64(s.peak) / (1 << 20)
}

func rssOf(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
