package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sampleProcs sums /proc/PID/task/*/schedstat over the threads of pids:
// nanoseconds on a core, nanoseconds waiting on a run queue, times run.
// A thread that exits between two samples takes its share with it.
func sampleProcs(pids []int) (procSample, error) {
	s := procSample{at: time.Now()}
	for _, pid := range pids {
		tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
		if err != nil || len(tasks) == 0 {
			return s, fmt.Errorf("no process %d (or no /proc/%d/task/*/schedstat)", pid, pid)
		}
		for _, path := range tasks {
			b, err := os.ReadFile(path)
			if err != nil {
				continue // the thread exited
			}
			f := strings.Fields(string(b))
			if len(f) < 3 {
				return s, fmt.Errorf("%s: unexpected %q", path, b)
			}
			cpu, err1 := strconv.ParseInt(f[0], 10, 64)
			wait, err2 := strconv.ParseInt(f[1], 10, 64)
			runs, err3 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				return s, fmt.Errorf("%s: unexpected %q", path, b)
			}
			s.cpu += time.Duration(cpu)
			s.runqueue += time.Duration(wait)
			s.switches += runs
			s.threads++
		}
	}
	return s, nil
}

// readRSS returns a process's resident set (VmRSS) in bytes.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
