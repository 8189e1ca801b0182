package logfs

import (
	"golang.org/x/sys/unix"
)

type fder interface{ Fd() uintptr }

// reserve allocates size bytes for f and sets its size to them; it reports
// whether it did. A file system without fallocate gets tan's own fallback,
// space kept without changing the size.
func reserve(f any, size int64) bool {
	fd, ok := f.(fder)
	if !ok {
		return false
	}
	if unix.Fallocate(int(fd.Fd()), 0, 0, size) == nil {
		return true
	}
	_ = unix.Fallocate(int(fd.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	return false
}

// datasync is fdatasync where f has a descriptor, its own Sync otherwise.
func datasync(f interface{ Sync() error }) error {
	fd, ok := f.(fder)
	if !ok {
		return f.Sync()
	}
	for {
		err := unix.Fdatasync(int(fd.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
