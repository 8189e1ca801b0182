//go:build !linux

package bench

import "errors"

func sampleProcs(pids []int) (procSample, error) {
	return procSample{}, errors.New("sampling server processes needs Linux's /proc")
}

func readRSS(pid int) (int64, error) {
	return 0, errors.New("reading a server's RSS needs Linux's /proc")
}
