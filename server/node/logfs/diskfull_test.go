package logfs

import (
	"bytes"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lni/vfs"

	"github.com/zkbridge/zkbridge/diskfull"
)

// noSpaceFS is a MemFS whose disk is full while full is set: a write
// takes a third of its bytes and fails with ENOSPC.
type noSpaceFS struct {
	vfs.FS
	full *atomic.Bool
}

func (fs noSpaceFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return noSpaceFile{File: f, full: fs.full}, err
}

type noSpaceFile struct {
	vfs.File
	full *atomic.Bool
}

func (f noSpaceFile) Write(p []byte) (int, error) {
	if f.full.Load() && len(p) > 0 {
		n, _ := f.File.Write(p[:len(p)/3])
		return n, &os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// A Raft log record and a snapshot file written while the disk is full
// wait (tan and dragonboat would panic on the error), diskfull.Full says
// so, and once space returns each file holds exactly the bytes written,
// once, in order: no torn record.
func TestWritesWaitOutAFullDisk(t *testing.T) {
	full := new(atomic.Bool)
	fs := New(noSpaceFS{FS: vfs.NewMem(), full: full})
	for _, name := range []string{"000001.log", "snapshot-0000000000000010.gbsnap"} {
		f, err := fs.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		first := bytes.Repeat([]byte("a"), 100)
		if _, err := f.Write(first); err != nil {
			t.Fatal(err)
		}
		full.Store(true)
		record := bytes.Repeat([]byte("0123456789"), 30)
		done := make(chan error, 1)
		go func() {
			n, err := f.Write(record)
			if err == nil && n != len(record) {
				err = io.ErrShortWrite
			}
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !diskfull.Full() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: diskfull.Full never true with the disk full", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the write returned on a full disk: %v", name, err)
		case <-time.After(2 * diskfull.RetryInterval):
		}
		full.Store(false)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the write did not resume after space returned", name)
		}
		if diskfull.Full() {
			t.Fatalf("%s: diskfull.Full still true", name)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		r, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := append(first, record...); !bytes.Equal(got, want) {
			t.Fatalf("%s holds %d bytes %q..., want %d", name, len(got), got[:min(len(got), 130)], len(want))
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
