//go:build !linux

package bench

import "errors"

func sampleProcs(pids []int) (procSample, error) {
	return procSample{}, errors.New("sampling server processes needs Linux's /proc")
}
