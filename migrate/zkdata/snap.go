package zkdata

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/golang/snappy"
)

// Node is one znode as a snapshot stores it. The root's Path is "/" (the
// file spells it ""). ACL is a key of the snapshot's ACL cache (-1 is
// OPEN_ACL_UNSAFE and is not in the cache).
type Node struct {
	Path string
	Data []byte
	ACL  int64
	Stat StatPersisted
}

// SnapshotVisitor receives a snapshot's contents in file order: sessions,
// then ACL cache entries, then nodes (parents before children). A nil
// callback skips that part; an error from a callback stops the read and is
// returned.
type SnapshotVisitor struct {
	Header  func(FileHeader) error
	Session func(id int64, timeout int32) error
	ACL     func(id int64, acls []ACL) error
	Node    func(Node) error
}

// SnapDigest is the 3.6+ tree digest stored after a snapshot's first seal.
type SnapDigest struct {
	Zxid    int64
	Version int32
	Digest  int64
}

// SnapshotInfo summarises a snapshot that read and verified completely.
type SnapshotInfo struct {
	Path              string
	Zxid              int64 // from the file name: replay logs from Zxid+1
	Header            FileHeader
	Sessions          int
	ACLs              int
	Nodes             int
	Checksum          uint32 // the verified Adler32 of the tree seal
	Digest            *SnapDigest
	LastProcessedZxid *int64 // 3.9+ when serialized
}

// ErrChecksum is wrapped when a snapshot's Adler32 seal does not match.
var ErrChecksum = errors.New("snapshot checksum mismatch")

// snapReader reads jute values from a stream, updating the Adler32 that
// ZooKeeper's CheckedInputStream keeps over the uncompressed bytes.
type snapReader struct {
	r   *bufio.Reader
	h   hash.Hash32
	off int64
	buf [8]byte
}

func (s *snapReader) full(p []byte) error {
	n, err := io.ReadFull(s.r, p)
	s.h.Write(p[:n])
	s.off += int64(n)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("at byte %d: %w", s.off, io.ErrUnexpectedEOF)
		}
		return err
	}
	return nil
}

func (s *snapReader) int32() (int32, error) {
	if err := s.full(s.buf[:4]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(s.buf[:4])), nil
}

func (s *snapReader) int64() (int64, error) {
	if err := s.full(s.buf[:8]); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(s.buf[:8])), nil
}

// bytes reads a jute buffer or ustring (nil for length -1). Memory grows
// only with the bytes actually present, whatever the length claims.
func (s *snapReader) bytes(max int) ([]byte, error) {
	n, err := s.int32()
	if err != nil || n == -1 {
		return nil, err
	}
	if n < -1 || int(n) > max {
		return nil, fmt.Errorf("at byte %d: bad length %d", s.off-4, n)
	}
	// A short value gets a buffer of its size: a bytes.Buffer's 512 bytes
	// at least, kept as every node's data, had been most of a replayed
	// tree's memory. A longer one grows with what is read.
	if n <= 64<<10 {
		b := make([]byte, n)
		m, err := io.ReadFull(s.r, b)
		s.h.Write(b[:m])
		s.off += int64(m)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("at byte %d: %w", s.off, err)
		}
		return b, nil
	}
	var b bytes.Buffer
	m, err := io.Copy(&b, io.LimitReader(s.r, int64(n)))
	s.h.Write(b.Bytes())
	s.off += m
	if err != nil {
		return nil, err
	}
	if m != int64(n) {
		return nil, fmt.Errorf("at byte %d: %w", s.off, io.ErrUnexpectedEOF)
	}
	return b.Bytes(), nil
}

// seal checks a CheckedOutputStream seal: the Adler32 of everything before
// it, then the string "/".
func (s *snapReader) seal() (uint32, error) {
	want := s.h.Sum32()
	at := s.off
	v, err := s.int64()
	if err != nil {
		return 0, fmt.Errorf("checksum: %w", err)
	}
	p, err := s.bytes(16)
	if err != nil {
		return 0, fmt.Errorf("seal: %w", err)
	}
	if uint64(v) != uint64(want) {
		return 0, fmt.Errorf("at byte %d: %w (stored %#x, computed %#x)", at, ErrChecksum, v, want)
	}
	if string(p) != "/" {
		return 0, fmt.Errorf("at byte %d: seal marker %q, want \"/\"", at+8, p)
	}
	return want, nil
}

// SnapshotZxid parses the zxid of a snapshot.<hex>[.ext] file name.
func SnapshotZxid(path string) (int64, error) {
	parts := strings.Split(filepath.Base(path), ".")
	if len(parts) < 2 || parts[0] != "snapshot" {
		return 0, fmt.Errorf("%s: not a snapshot.<zxid> file name", path)
	}
	return strconv.ParseInt(parts[1], 16, 64)
}

// ReadSnapshot streams the snapshot at path (decompressed by its .gz or
// .snappy extension) through visit and verifies its checksums.
func ReadSnapshot(path string, visit SnapshotVisitor) (SnapshotInfo, error) {
	zxid, err := SnapshotZxid(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	info, err := ReadSnapshotFrom(f, strings.TrimPrefix(filepath.Ext(path), "."), visit)
	info.Path, info.Zxid = path, zxid
	if err != nil {
		return info, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return info, nil
}

// ReadSnapshotFrom reads a snapshot stream; compression is "", "gz" or
// "snappy" (anything else is read as uncompressed, as ZooKeeper does).
func ReadSnapshotFrom(r io.Reader, compression string, visit SnapshotVisitor) (SnapshotInfo, error) {
	var info SnapshotInfo
	br := bufio.NewReaderSize(r, 256<<10)
	var src io.Reader = br
	switch compression {
	case "gz":
		zr, err := gzip.NewReader(br)
		if err != nil {
			return info, fmt.Errorf("gzip: %w", err)
		}
		src = zr
	case "snappy":
		sr, err := newXerialReader(br)
		if err != nil {
			return info, err
		}
		src = sr
	}
	s := &snapReader{r: bufio.NewReaderSize(src, 256<<10), h: adler32.New()}

	var hb [16]byte
	if err := s.full(hb[:]); err != nil {
		return info, fmt.Errorf("file header: %w", err)
	}
	h, err := parseHeader(hb[:], SnapMagic, "snapshot")
	if err != nil {
		return info, err
	}
	info.Header = h
	if visit.Header != nil {
		if err := visit.Header(h); err != nil {
			return info, err
		}
	}

	count, err := s.int32()
	if err != nil {
		return info, fmt.Errorf("session count: %w", err)
	}
	if count < 0 {
		return info, fmt.Errorf("negative session count %d", count)
	}
	for i := int32(0); i < count; i++ {
		id, err := s.int64()
		if err != nil {
			return info, fmt.Errorf("session %d: %w", i, err)
		}
		to, err := s.int32()
		if err != nil {
			return info, fmt.Errorf("session %d: %w", i, err)
		}
		info.Sessions++
		if visit.Session != nil {
			if err := visit.Session(id, to); err != nil {
				return info, err
			}
		}
	}

	nacl, err := s.int32()
	if err != nil {
		return info, fmt.Errorf("ACL cache size: %w", err)
	}
	if nacl < 0 {
		return info, fmt.Errorf("negative ACL cache size %d", nacl)
	}
	for i := int32(0); i < nacl; i++ {
		id, err := s.int64()
		if err != nil {
			return info, fmt.Errorf("ACL cache entry %d: %w", i, err)
		}
		n, err := s.int32()
		if err != nil {
			return info, fmt.Errorf("ACL cache entry %d: %w", i, err)
		}
		if n < 0 {
			// ReferenceCountedACLCache rejects a null vector.
			return info, fmt.Errorf("ACL cache entry %d: missing acls", i)
		}
		var acls []ACL
		for j := int32(0); j < n; j++ {
			perms, err := s.int32()
			if err != nil {
				return info, fmt.Errorf("ACL cache entry %d: %w", i, err)
			}
			scheme, err := s.bytes(MaxTxnSize)
			if err != nil {
				return info, fmt.Errorf("ACL cache entry %d: %w", i, err)
			}
			id, err := s.bytes(MaxTxnSize)
			if err != nil {
				return info, fmt.Errorf("ACL cache entry %d: %w", i, err)
			}
			acls = append(acls, ACL{Perms: perms, Scheme: string(scheme), ID: string(id)})
		}
		info.ACLs++
		if visit.ACL != nil {
			if err := visit.ACL(id, acls); err != nil {
				return info, err
			}
		}
	}

	// Nodes come depth first, parents before children; keeping the chain
	// of ancestors checks that without holding the tree.
	var stack []string
	for {
		p, err := s.bytes(MaxTxnSize)
		if err != nil {
			return info, fmt.Errorf("node %d path: %w", info.Nodes, err)
		}
		path := string(p)
		if path == "/" {
			break
		}
		data, err := s.bytes(MaxTxnSize)
		if err != nil {
			return info, fmt.Errorf("node %q data: %w", path, err)
		}
		acl, err := s.int64()
		if err != nil {
			return info, fmt.Errorf("node %q: %w", path, err)
		}
		var sb [60]byte
		if err := s.full(sb[:]); err != nil {
			return info, fmt.Errorf("node %q stat: %w", path, err)
		}
		d := &dec{b: sb[:]}
		st := d.stat()
		if path == "" {
			if len(stack) > 0 {
				return info, errors.New("second root node")
			}
			stack = append(stack, "")
			path = "/"
		} else {
			i := strings.LastIndexByte(path, '/')
			if i < 0 {
				return info, fmt.Errorf("node path %q is not absolute", path)
			}
			parent := path[:i]
			for len(stack) > 0 && stack[len(stack)-1] != parent {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				return info, fmt.Errorf("node %q: parent %q not seen before it", path, parent)
			}
			stack = append(stack, path)
		}
		info.Nodes++
		if visit.Node != nil {
			if err := visit.Node(Node{Path: path, Data: data, ACL: acl, Stat: st}); err != nil {
				return info, err
			}
		}
	}
	if info.Nodes == 0 {
		return info, errors.New("snapshot without a root node")
	}
	if info.Checksum, err = s.seal(); err != nil {
		return info, err
	}

	// Optional trailers, each sealed: the 3.6+ digest and the 3.9+ last
	// processed zxid. Older snapshots end here.
	rest, err := io.ReadAll(io.LimitReader(s.r, 4096))
	if err != nil {
		return info, err
	}
	if len(rest) == 4096 {
		return info, fmt.Errorf("at byte %d: unexpected data after the tree", s.off)
	}
	s.r = bufio.NewReader(bytes.NewReader(rest))
	left := func() int { b, _ := s.r.Peek(4096); return len(b) }
	// A digest section is at least 33 bytes; a lastZxid section is 21.
	if l := left(); l != 0 && l != 21 {
		zx, err := s.int64()
		if err != nil {
			return info, fmt.Errorf("digest: %w", err)
		}
		ver, err := s.int32()
		if err != nil {
			return info, fmt.Errorf("digest: %w", err)
		}
		dg := &SnapDigest{Zxid: zx, Version: ver}
		if ver < 2 {
			hexs, err := s.bytes(64)
			if err != nil {
				return info, fmt.Errorf("digest: %w", err)
			}
			if hexs != nil {
				v, err := strconv.ParseUint(string(hexs), 16, 64)
				if err != nil {
					return info, fmt.Errorf("digest %q: %w", hexs, err)
				}
				dg.Digest = int64(v)
			}
		} else if dg.Digest, err = s.int64(); err != nil {
			return info, fmt.Errorf("digest: %w", err)
		}
		if _, err := s.seal(); err != nil {
			return info, fmt.Errorf("digest %w", err)
		}
		info.Digest = dg
	}
	if l := left(); l != 0 {
		if l != 21 {
			return info, fmt.Errorf("at byte %d: %d unexpected bytes at the end", s.off, l)
		}
		zx, err := s.int64()
		if err != nil {
			return info, err
		}
		if _, err := s.seal(); err != nil {
			return info, fmt.Errorf("last zxid %w", err)
		}
		info.LastProcessedZxid = &zx
	}
	return info, nil
}

// xerial snappy-java's stream (SnappyOutputStream): an 8-byte magic, two
// ints (version, compatible version), then blocks of int length + raw
// snappy data.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

type xerialReader struct {
	r   io.Reader
	buf []byte
	out []byte
}

func newXerialReader(r io.Reader) (*xerialReader, error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("snappy header: %w", err)
	}
	if !bytes.Equal(h[:8], xerialMagic) {
		return nil, errors.New("snappy: not a snappy-java stream (bad magic)")
	}
	return &xerialReader{r: r}, nil
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for len(x.out) == 0 {
		var lb [4]byte
		if _, err := io.ReadFull(x.r, lb[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return 0, errors.New("snappy: block length cut short")
			}
			return 0, err // io.EOF at a block boundary ends the stream
		}
		n := int32(binary.BigEndian.Uint32(lb[:]))
		if n < 0 || n > 64<<20 {
			return 0, fmt.Errorf("snappy: bad block length %d", n)
		}
		var b bytes.Buffer
		if m, err := io.Copy(&b, io.LimitReader(x.r, int64(n))); err != nil || m != int64(n) {
			return 0, errors.New("snappy: block cut short")
		}
		dl, err := snappy.DecodedLen(b.Bytes())
		if err != nil || dl > 64<<20 {
			return 0, fmt.Errorf("snappy: bad block: %v", err)
		}
		if x.out, err = snappy.Decode(x.buf[:0], b.Bytes()); err != nil {
			return 0, fmt.Errorf("snappy: %w", err)
		}
		x.buf = x.out[:0]
	}
	n := copy(p, x.out)
	x.out = x.out[n:]
	return n, nil
}
