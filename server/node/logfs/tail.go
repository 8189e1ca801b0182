package logfs

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/cespare/xxhash/v2"
)

// CorruptTailError is a Raft log whose newest file holds a complete chunk
// that fails its checksum. A crash leaves a torn tail: a chunk cut short
// by the end of the file or followed by zeros, which tan drops when it
// opens the log (that part was never synced, so never acknowledged). A
// complete chunk with a wrong checksum is something else: bytes the disk
// returned changed, and the record may be an entry this node acknowledged,
// so it is not dropped; tan would panic on it ("tan: crc mismatch").
type CorruptTailError struct {
	File   string // the log file
	Offset int64  // where the bad chunk starts
	Size   int64  // the file's size
}

func (e *CorruptTailError) Error() string {
	return fmt.Sprintf("raft log %s: the record at byte %d of %d fails its checksum (not a torn write: it may hold an entry this node acknowledged)",
		e.File, e.Offset, e.Size)
}

// CheckTails reads the newest log file of each of tan's log directories
// under dir the way tan's reader does and returns a *CorruptTailError for
// the first complete chunk whose checksum does not match. A tail torn by a
// crash (a chunk cut short, zeros) is no error: tan recovers it.
func CheckTails(dir string) error {
	newest := map[string]string{} // directory -> newest log in it
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isLog(path) {
			return nil
		}
		// Log names are zero-padded numbers: the greatest name is the newest.
		if cur, ok := newest[filepath.Dir(path)]; !ok || filepath.Base(path) > filepath.Base(cur) {
			newest[filepath.Dir(path)] = path
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(newest))
	for _, p := range newest {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := checkTail(p); err != nil {
			return err
		}
	}
	return nil
}

func checkTail(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	off, bad, err := firstBadChunk(f, fi.Size())
	if err != nil {
		return fmt.Errorf("read raft log %s: %w", path, err)
	}
	if bad {
		return &CorruptTailError{File: path, Offset: off, Size: fi.Size()}
	}
	return nil
}

// firstBadChunk walks the chunks from the start of the file. It stops at
// the end of the records (the file's end, a zero header, a chunk cut
// short) and reports bad when it meets a complete chunk that fails its
// checksum or has an unknown type.
func firstBadChunk(r io.ReaderAt, size int64) (int64, bool, error) {
	block := make([]byte, blockSize)
	for base := int64(0); base < size; base += blockSize {
		n, err := r.ReadAt(block, base)
		if err != nil && err != io.EOF {
			return 0, false, err
		}
		b := block[:n]
		for i := 0; i+headerSize <= len(b); {
			sum := binary.LittleEndian.Uint32(b[i:])
			length := int(binary.LittleEndian.Uint16(b[i+4:]))
			kind := b[i+6]
			if sum == 0 && length == 0 && kind == 0 {
				return base + int64(i), false, nil // zeros: the end of the records
			}
			if i+headerSize+length > len(b) {
				return base + int64(i), false, nil // cut short: a torn tail
			}
			if kind < 1 || kind > 4 || uint32(xxhash.Sum64(b[i+6:i+headerSize+length])) != sum {
				return base + int64(i), true, nil
			}
			i += headerSize + length
		}
		if n < blockSize {
			break
		}
	}
	return size, false, nil
}

// LastRecord returns where the last complete record of the log file at
// path starts and ends (0, 0 when it has none). The fault suite uses it
// to tear the record a crash interrupted.
func LastRecord(path string) (start, end int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	block := make([]byte, blockSize)
	var recordStart int64
	for base := int64(0); base < fi.Size(); base += blockSize {
		n, err := f.ReadAt(block, base)
		if err != nil && err != io.EOF {
			return 0, 0, err
		}
		b := block[:n]
		for i := 0; i+headerSize <= len(b); {
			length := int(binary.LittleEndian.Uint16(b[i+4:]))
			kind := b[i+6]
			if kind < 1 || kind > 4 || i+headerSize+length > len(b) ||
				uint32(xxhash.Sum64(b[i+6:i+headerSize+length])) != binary.LittleEndian.Uint32(b[i:]) {
				return start, end, nil
			}
			if kind == 1 || kind == 2 { // full or first: a record starts
				recordStart = base + int64(i)
			}
			i += headerSize + length
			if kind == 1 || kind == 4 { // full or last: a record ends
				start, end = recordStart, base+int64(i)
			}
		}
		if n < blockSize {
			break
		}
	}
	return start, end, nil
}
