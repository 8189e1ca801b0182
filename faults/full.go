package faults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// A full disk is real: one node's data directory is a small tmpfs mount
// (which needs root: CAP_SYS_ADMIN), filled by a ballast file until no
// byte is left, and emptied again.

// tmpfsSize fits a node's data with room to spare once the ballast is
// gone: tan reserves 64 MiB per Raft log file, Pebble's memtable WAL grows
// to its size before it rolls, and the flushes and snapshot taken after a
// hold need their own room. At 256 MiB a node's data reached 241 MiB after
// the first hold, and the second left it really full: it waited for space
// for good (what a full disk should do), which is not what the nemesis
// means to test.
const tmpfsSize = "512m"

var tmpfsProbe struct {
	once sync.Once
	ok   bool
}

// CanMountTmpfs reports whether this process may mount a tmpfs: root with
// CAP_SYS_ADMIN (not every container grants it). It tries once.
func CanMountTmpfs() bool {
	tmpfsProbe.once.Do(func() {
		if os.Geteuid() != 0 {
			return
		}
		dir, err := os.MkdirTemp("", "zkbridge-tmpfs-probe-")
		if err != nil {
			return
		}
		defer os.Remove(dir)
		if exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).Run() == nil {
			tmpfsProbe.ok = true
			unmount(dir)
		}
	})
	return tmpfsProbe.ok
}

// mountTmpfs mounts a tmpfs of tmpfsSize at dir.
func mountTmpfs(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+tmpfsSize, "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %v: %s", dir, err, out)
	}
	return nil
}

func unmount(dir string) {
	for attempt := 0; attempt < 50; attempt++ {
		if err := syscall.Unmount(dir, 0); err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Unmount(dir, syscall.MNT_DETACH)
}

// StartZkbridgeTmpfs is StartZkbridge with node full's data directory on a
// tmpfs of its own. Its nodes snapshot every 1,000 entries: between
// snapshots a node writes only into the Raft log file it reserved (64 MiB)
// and its memtables, so a disk filled for a few seconds would otherwise go
// unnoticed; a snapshot's flush of the state needs new space at once.
func StartZkbridgeTmpfs(bin, dir string, n, full int, election time.Duration) (*Zkbridge, error) {
	data := filepath.Join(dir, fmt.Sprintf("node%d", full+1))
	if err := mountTmpfs(data); err != nil {
		return nil, err
	}
	z, err := startZkbridge(bin, dir, n, election, []string{"--snapshot-entries", "1000"})
	if err != nil {
		unmount(data)
		return nil, err
	}
	z.tmpfs = append(z.tmpfs, data)
	return z, nil
}

// FillDisk fills node i's tmpfs with a ballast file.
func (z *Zkbridge) FillDisk(i int) error {
	var st syscall.Statfs_t
	data := z.dataDir(i)
	if err := syscall.Statfs(data, &st); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(data, "ballast"))
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			return err
		}
	}
	// The last bytes too, so the next write of any size fails.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return nil
}

// FreeDisk removes node i's ballast.
func (z *Zkbridge) FreeDisk(i int) error {
	return os.Remove(filepath.Join(z.dataDir(i), "ballast"))
}
