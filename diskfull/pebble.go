package diskfull

import (
	"github.com/cockroachdb/pebble/v2/vfs"
)

// PebbleFS wraps fs so that Pebble's writes (WAL, sstables, manifest)
// wait out a full disk instead of failing: Pebble panics when its WAL
// write fails.
func PebbleFS(fs vfs.FS) vfs.FS { return pebbleFS{FS: fs} }

type pebbleFS struct{ vfs.FS }

func (fs pebbleFS) Unwrap() vfs.FS { return fs.FS }

func (fs pebbleFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := Do(func() (err error) { f, err = fs.FS.Create(name, category); return err })
	if err != nil {
		return nil, err
	}
	return pebbleFile{File: f}, nil
}

func (fs pebbleFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return pebbleFile{File: f}, nil
}

func (fs pebbleFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return pebbleFile{File: f}, nil
}

type pebbleFile struct{ vfs.File }

func (f pebbleFile) Write(p []byte) (int, error) { return Write(f.File.Write, p) }

func (f pebbleFile) WriteAt(p []byte, off int64) (int, error) {
	return WriteAt(f.File.WriteAt, p, off)
}

func (f pebbleFile) Preallocate(offset, length int64) error {
	return Do(func() error { return f.File.Preallocate(offset, length) })
}
