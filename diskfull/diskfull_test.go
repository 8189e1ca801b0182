package diskfull

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// noSleep replaces the retry wait for the test and calls each after the
// wait count, so the test sees the state while a write is stalled.
func noSleep(t *testing.T, each func(waits int)) {
	waits := 0
	sleep = func(time.Duration) { waits++; each(waits) }
	t.Cleanup(func() { sleep = time.Sleep })
}

// A write that finds the disk full after part of its bytes continues with
// the rest once space returns: the file gets every byte once, in order;
// Full is true only while it waits.
func TestWriteContinuesAfterPartialNoSpace(t *testing.T) {
	var file bytes.Buffer
	room := 3 // bytes the disk takes before it is full
	noSleep(t, func(waits int) {
		if !Full() {
			t.Fatal("Full is false while a write waits for space")
		}
		if waits == 4 {
			room = 1 << 20 // space freed
		}
	})
	write := func(p []byte) (int, error) {
		n := min(len(p), room)
		file.Write(p[:n])
		room -= n
		if n < len(p) {
			return n, &os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}
		}
		return n, nil
	}
	n, err := Write(write, []byte("0123456789"))
	if err != nil || n != 10 {
		t.Fatalf("Write = %d, %v; want 10, nil", n, err)
	}
	if file.String() != "0123456789" {
		t.Fatalf("file = %q", file.String())
	}
	if Full() {
		t.Fatal("Full is still true after the write went through")
	}
}

// WriteAt continues a partial write at the offset after what went.
func TestWriteAtContinuesAtTheRightOffset(t *testing.T) {
	file := make([]byte, 20)
	calls := 0
	noSleep(t, func(int) {})
	writeAt := func(p []byte, off int64) (int, error) {
		calls++
		if calls == 1 {
			copy(file[off:], p[:4])
			return 4, syscall.ENOSPC
		}
		copy(file[off:], p)
		return len(p), nil
	}
	n, err := WriteAt(writeAt, []byte("abcdefgh"), 5)
	if err != nil || n != 8 {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if got := string(file[5:13]); got != "abcdefgh" || file[4] != 0 || file[13] != 0 {
		t.Fatalf("file = %q", file)
	}
}

// Any other error is returned as it was, without a retry.
func TestOtherErrorsPassThrough(t *testing.T) {
	noSleep(t, func(int) { t.Fatal("retried an error other than ENOSPC") })
	n, err := Write(func(p []byte) (int, error) { return 2, syscall.EIO }, []byte("abcd"))
	if n != 2 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Write = %d, %v", n, err)
	}
}

// fullFS is a MemFS whose disk is full while full is set: a write takes
// half its bytes and fails with ENOSPC.
type fullFS struct {
	vfs.FS
	full *atomic.Bool
}

func (fs fullFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fullFile{File: f, full: fs.full}, err
}

type fullFile struct {
	vfs.File
	full *atomic.Bool
}

func (f fullFile) Write(p []byte) (int, error) {
	if f.full.Load() && len(p) > 0 {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: "wal", Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// Pebble on a disk that fills: its synced write waits (instead of Pebble
// panicking on the WAL write), Full says so, and once space returns the
// write completes and everything reads back, also after a reopen (the WAL
// holds no torn record).
func TestPebbleWaitsOutAFullDisk(t *testing.T) {
	full := new(atomic.Bool)
	mem := vfs.NewMem()
	opts := &pebble.Options{FS: PebbleFS(fullFS{FS: mem, full: full}), Logger: quiet{}}
	db, err := pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := db.Set([]byte(fmt.Sprint("k", i)), []byte("before"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	full.Store(true)
	done := make(chan error, 1)
	go func() { done <- db.Set([]byte("k-full"), []byte("during"), pebble.Sync) }()
	deadline := time.Now().Add(10 * time.Second)
	for !Full() {
		if time.Now().After(deadline) {
			t.Fatal("Full never became true with the disk full")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the write finished on a full disk: %v", err)
	case <-time.After(3 * RetryInterval):
	}
	full.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not resume after space returned")
	}
	if Full() {
		t.Fatal("Full still true after space returned")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = pebble.Open("db", &pebble.Options{FS: mem, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"k0", "k9", "k-full"} {
		v, c, err := db.Get([]byte(k))
		if err != nil {
			t.Fatalf("%s after reopen: %v", k, err)
		}
		c.Close()
		_ = v
	}
}

type quiet struct{}

func (quiet) Infof(string, ...interface{})  {}
func (quiet) Errorf(string, ...interface{}) {}
func (quiet) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf(format, args...))
}
