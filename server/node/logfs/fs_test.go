package logfs

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lni/vfs"
)

// chunk encodes one tan chunk of the given type.
func chunk(kind byte, payload []byte) []byte {
	b := make([]byte, headerSize+len(payload))
	b[6] = kind
	copy(b[headerSize:], payload)
	binary.LittleEndian.PutUint16(b[4:], uint16(len(payload)))
	binary.LittleEndian.PutUint32(b[0:], uint32(xxhash.Sum64(b[6:])))
	return b
}

func writeFile(t *testing.T, path string, parts ...[]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(parts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestLogFileReservedReadsAsWrittenAndTruncatesOnClose(t *testing.T) {
	dir := t.TempDir()
	fs := New(vfs.Default)
	name := filepath.Join(dir, "000001.log")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	reserved := f.(*logFile).reserved
	if reserved && size(t, name) != Reserve {
		t.Fatalf("reserved log is %d bytes, want %d", size(t, name), Reserve)
	}
	data := bytes.Repeat([]byte("0123456789"), 5000) // 50,000 bytes
	if _, err := f.Write(data[:30000]); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}

	r, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data[:30000]) {
		t.Fatalf("live log read %d bytes (err %v), want the 30000 written", len(got), err)
	}
	if _, err := f.Write(data[30000:]); err != nil {
		t.Fatal(err)
	}
	// The same reader sees what was written since, and seeks as a file.
	rest, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(rest, data[30000:]) {
		t.Fatalf("live log read on %d bytes (err %v), want 20000", len(rest), err)
	}
	if pos, err := r.Seek(-10, io.SeekEnd); err != nil || pos != int64(len(data))-10 {
		t.Fatalf("seek from end: %d %v", pos, err)
	}
	buf := make([]byte, 100)
	if n, err := r.ReadAt(buf, int64(len(data))-4); n != 4 || err != io.EOF {
		t.Fatalf("ReadAt over the end: %d %v, want 4 and EOF", n, err)
	}
	if fi, err := r.Stat(); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("live log stat size %v %v", fi, err)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write through a reader succeeded")
	}
	r.Close()
	if _, err := f.(io.WriterAt).WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("WriteAt on a log succeeded")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := size(t, name); got != int64(len(data)) {
		t.Fatalf("closed log is %d bytes, want %d", got, len(data))
	}
	// Closed: a plain file again.
	r, err = fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.(*boundedFile); ok {
		t.Fatal("a closed log still opens bounded")
	}
}

func TestOtherFilesPassThrough(t *testing.T) {
	dir := t.TempDir()
	fs := New(vfs.Default)
	for _, n := range []string{"000001.logtmp", "000001.index", "MANIFEST-000001", "x.log"} {
		f, err := fs.Create(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*logFile); ok {
			t.Fatalf("%s was taken for a log", n)
		}
		f.Close()
		if s := size(t, filepath.Join(dir, n)); s != 0 {
			t.Fatalf("%s is %d bytes", n, s)
		}
	}
}

func TestTrimReserved(t *testing.T) {
	small := chunk(1, []byte("a record"))
	big := make([]byte, blockSize-headerSize) // fills a block exactly
	big[0] = 1
	zeroPayload := chunk(1, make([]byte, blockSize-headerSize)) // a record of zeros
	pad := make([]byte, blockSize-len(small)-len(small)-len(small))
	zeros := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name    string
		parts   [][]byte
		wantCut bool
		wantLen int
	}{
		{"chunks then zeros", [][]byte{small, small, zeros(3 * blockSize)}, true, 2 * len(small)},
		{"across blocks then zeros", [][]byte{chunk(1, big), small, zeros(blockSize + 5)}, true, blockSize + len(small)},
		{"block padding then zeros", [][]byte{small, small, small, pad, zeros(2 * blockSize)}, true, 3 * len(small)},
		{"ends in a chunk", [][]byte{small, small}, false, 2 * len(small)},
		{"a record of zeros at the end", [][]byte{small, zeroPayload}, false, len(small) + len(zeroPayload)},
		{"a torn header", [][]byte{small, chunk(1, []byte("torn"))[:3], zeros(2 * blockSize)}, true, len(small)},
		{"garbage after the last chunk", [][]byte{small, bytes.Repeat([]byte{9}, 12), zeros(2 * blockSize)}, false, len(small) + 12 + 2*blockSize},
		// A write a crash interrupted: the header and part of the payload,
		// zeros after. It was never synced, so never acknowledged: cut.
		{"torn chunk then zeros", [][]byte{small, chunk(1, []byte("torn"))[:headerSize+2], zeros(2 * blockSize)}, true, len(small)},
		// A complete chunk that fails its checksum is not a torn write.
		{"bad checksum then zeros", [][]byte{small, badSum(chunk(1, []byte("torn"))), zeros(2 * blockSize)}, false, len(small) + headerSize + 4 + 2*blockSize},
		{"torn chunk with garbage after it", [][]byte{small, chunk(1, []byte("torn"))[:headerSize+2], zeros(100), []byte{9}, zeros(2 * blockSize)}, false, len(small) + headerSize + 2 + 101 + 2*blockSize},
		{"only zeros", [][]byte{zeros(blockSize * 2)}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "000007.log")
			os.MkdirAll(filepath.Dir(path), 0o755)
			writeFile(t, path, c.parts...)
			before, _ := os.ReadFile(path)
			trimmed, err := TrimReserved(dir)
			if err != nil {
				t.Fatal(err)
			}
			if cut := len(trimmed) == 1; cut != c.wantCut {
				t.Fatalf("trimmed %v, want cut=%v", trimmed, c.wantCut)
			}
			after, _ := os.ReadFile(path)
			if len(after) != c.wantLen || !bytes.Equal(after, before[:len(after)]) {
				t.Fatalf("file is %d bytes, want %d, a prefix of what it was", len(after), c.wantLen)
			}
			if !zerosOrTornChunk(before[len(after):]) {
				t.Fatal("trimmed a byte that was not zero or of a torn chunk")
			}
		})
	}
}

func badSum(c []byte) []byte {
	c[0] ^= 0xff
	return c
}

// zerosOrTornChunk reports whether removed is zeros, or one chunk whose
// write stopped short (a header's first bytes, or a whole header of a
// known type and its last byte zero) and zeros after it: the only bytes
// the trim may cut.
func zerosOrTornChunk(removed []byte) bool {
	if bytes.Equal(removed, make([]byte, len(removed))) {
		return true
	}
	if len(removed) >= headerSize && bytes.Equal(removed[headerSize:], make([]byte, len(removed)-headerSize)) {
		return true // a torn header
	}
	if len(removed) < headerSize || removed[6] < 1 || removed[6] > 4 {
		return false
	}
	end := headerSize + int(binary.LittleEndian.Uint16(removed[4:]))
	return end > headerSize && end <= len(removed) && bytes.Equal(removed[end-1:], make([]byte, len(removed)-end+1))
}

func TestTrimReservedSkipsOtherFilesAndMissingDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "000001.logtmp"), make([]byte, 3*blockSize))
	writeFile(t, filepath.Join(dir, "000001.index"), make([]byte, 3*blockSize))
	if trimmed, err := TrimReserved(dir); err != nil || len(trimmed) != 0 {
		t.Fatalf("trimmed %v, %v", trimmed, err)
	}
	if trimmed, err := TrimReserved(filepath.Join(dir, "none")); err != nil || len(trimmed) != 0 {
		t.Fatalf("missing dir: %v, %v", trimmed, err)
	}
}

// Whatever a log file holds, trimming never panics, leaves a prefix of it,
// and removes only zeros and at most one torn chunk before them.
func FuzzTrimReserved(f *testing.F) {
	f.Add(chunk(1, []byte("a record")), uint16(3))
	f.Add(append(chunk(2, []byte("first")), chunk(4, []byte("last"))...), uint16(1))
	f.Add([]byte{}, uint16(2))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, zeroBlocks uint16) {
		dir := t.TempDir()
		path := filepath.Join(dir, "000001.log")
		content := append(append([]byte{}, data...), make([]byte, int(zeroBlocks%4)*blockSize)...)
		writeFile(t, path, content)
		if _, err := TrimReserved(dir); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) > len(content) || !bytes.Equal(after, content[:len(after)]) {
			t.Fatalf("not a prefix: %d of %d bytes", len(after), len(content))
		}
		if !zerosOrTornChunk(content[len(after):]) {
			t.Fatal("trimmed a byte that was not zero or of a torn chunk")
		}
	})
}

// syncCountingFS hands out files that count their Syncs. They have no Fd,
// so logfs syncs them through Sync rather than fdatasync.
type syncCountingFS struct {
	vfs.FS
	syncs *int
}

type syncCountingFile struct {
	vfs.File
	syncs *int
}

func (fs syncCountingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return syncCountingFile{File: f, syncs: fs.syncs}, nil
}

func (f syncCountingFile) Sync() error {
	*f.syncs++
	return f.File.Sync()
}

// With NoSync (forceSync=no) a log's Sync reaches no file system; other
// files, and logs without it, are synced as asked.
func TestNoSyncSkipsOnlyLogSyncs(t *testing.T) {
	dir := t.TempDir()
	for _, noSync := range []bool{false, true} {
		syncs := 0
		fs := New(syncCountingFS{FS: vfs.Default, syncs: &syncs})
		fs.NoSync = noSync
		logName := filepath.Join(dir, "000001.log")
		otherName := filepath.Join(dir, "MANIFEST-000001")
		for _, name := range []string{logName, otherName} {
			f, err := fs.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("record")); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		want := 2
		if noSync {
			want = 1 // the manifest's
		}
		if syncs != want {
			t.Errorf("NoSync=%v: %d syncs reached the file system, want %d", noSync, syncs, want)
		}
	}
}
