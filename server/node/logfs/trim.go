package logfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
)

// Tan's record format (pebble's log format with its own checksum): 32 KiB
// blocks of chunks, each a 7-byte header (checksum, payload length, chunk
// type 1 full, 2 first, 3 middle, 4 last) and its payload. A block's tail
// too short for a header is zero padding. The checksum is the low 32 bits
// of the xxhash64 of the type byte and the payload.
const (
	blockSize  = 32 << 10
	headerSize = 7
)

// TrimReserved finds tan's log files under dir whose reserved tail a crash
// left in place, and truncates each to the end of its last complete chunk
// when everything after that end is zero, or is the one chunk a crash
// interrupted (see tornChunk). A file that ends in data, or has anything
// else after its last good chunk, is left for tan to judge (CheckTails).
// It returns the files it trimmed.
func TrimReserved(dir string) ([]string, error) {
	var trimmed []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isLog(path) {
			return nil
		}
		cut, err := trimFile(path)
		if err != nil {
			return fmt.Errorf("trim reserved tail of %s: %w", path, err)
		}
		if cut {
			trimmed = append(trimmed, path)
		}
		return nil
	})
	if os.IsNotExist(err) {
		err = nil
	}
	return trimmed, err
}

func trimFile(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := fi.Size()
	// A log closed by logfs, or never reserved, ends in its last chunk:
	// only a file whose last block is all zeros can hold a reserved tail.
	if size == 0 {
		return false, nil
	}
	last := size - blockSize
	if last < 0 {
		last = 0
	}
	if zero, err := allZero(f, last, size); err != nil || !zero {
		return false, err
	}
	end, err := chunksEnd(f, size)
	if err != nil {
		return false, err
	}
	if end == size {
		return false, nil
	}
	zero, err := allZero(f, end, size)
	if err != nil {
		return false, err
	}
	if !zero {
		torn, err := tornChunk(f, end, size)
		if err != nil || !torn {
			return false, err
		}
	}
	if err := f.Truncate(end); err != nil {
		return false, err
	}
	return true, datasync(f)
}

// chunksEnd walks the chunks from the start of the file and returns the
// offset just past the last complete chunk whose checksum matches.
func chunksEnd(r io.ReaderAt, size int64) (int64, error) {
	block := make([]byte, blockSize)
	for base := int64(0); base < size; base += blockSize {
		n, err := r.ReadAt(block, base)
		if err != nil && err != io.EOF {
			return 0, err
		}
		b := block[:n]
		for i := 0; ; {
			if i+headerSize > len(b) {
				if len(b) < blockSize {
					return base + int64(i), nil // the file ends in this block
				}
				break // padding; the next chunk starts the next block
			}
			sum := binary.LittleEndian.Uint32(b[i:])
			length := int(binary.LittleEndian.Uint16(b[i+4:]))
			kind := b[i+6]
			if kind < 1 || kind > 4 || i+headerSize+length > len(b) ||
				uint32(xxhash.Sum64(b[i+6:i+headerSize+length])) != sum {
				return base + int64(i), nil
			}
			i += headerSize + length
		}
	}
	return size, nil
}

func allZero(r io.ReaderAt, from, to int64) (bool, error) {
	buf := make([]byte, 64<<10)
	var zeros [64 << 10]byte
	for off := from; off < to; {
		n := int64(len(buf))
		if to-off < n {
			n = to - off
		}
		got, err := r.ReadAt(buf[:n], off)
		if err != nil && !(err == io.EOF && int64(got) == n) {
			return false, err
		}
		if !bytes.Equal(buf[:got], zeros[:got]) {
			return false, nil
		}
		off += int64(got)
	}
	return true, nil
}

// tornChunk reports whether the bytes from end (where the last good chunk
// ends) to size are one chunk whose write a crash interrupted: its header
// fits its block, its last byte and everything after it are zeros (the
// reserved space the write did not reach), or only its header's first
// bytes are there. Tan writes a record and then
// syncs it, and acknowledges nothing before the sync returns, so a chunk
// that was not completely written was never acknowledged: cutting it is
// what ZooKeeper does with a torn transaction log tail. Without the cut
// tan reads the chunk, fails its checksum and the node cannot start. A
// complete chunk with a wrong checksum is not taken for a torn one.
func tornChunk(r io.ReaderAt, end, size int64) (bool, error) {
	if end%blockSize+headerSize > blockSize || end+headerSize > size {
		return false, nil
	}
	// Only the header's first bytes got written: no payload to judge.
	if zero, err := allZero(r, end+headerSize, size); err != nil || zero {
		return zero, err
	}
	var header [headerSize]byte
	if _, err := r.ReadAt(header[:], end); err != nil {
		return false, err
	}
	length := int64(binary.LittleEndian.Uint16(header[4:]))
	chunkEnd := end + headerSize + length
	// The header must have been written whole (a known chunk type, a
	// payload): bytes that are not one are junk, not a torn write.
	if kind := header[6]; kind < 1 || kind > 4 || length == 0 ||
		end%blockSize+headerSize+length > blockSize || chunkEnd > size {
		return false, nil
	}
	return allZero(r, chunkEnd-1, size)
}
