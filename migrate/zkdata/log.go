package zkdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
)

// File magics and the only format version ZooKeeper writes.
const (
	LogMagic    = int32(0x5a4b4c47) // "ZKLG"
	SnapMagic   = int32(0x5a4b534e) // "ZKSN"
	FileVersion = 2
)

// FileHeader opens every snapshot and log file.
type FileHeader struct {
	Magic   int32
	Version int32
	DBID    int64
}

func parseHeader(b []byte, magic int32, what string) (FileHeader, error) {
	h := FileHeader{
		Magic:   int32(binary.BigEndian.Uint32(b[0:])),
		Version: int32(binary.BigEndian.Uint32(b[4:])),
		DBID:    int64(binary.BigEndian.Uint64(b[8:])),
	}
	if h.Magic != magic {
		return h, fmt.Errorf("not a ZooKeeper %s: magic %08x, want %08x", what, uint32(h.Magic), uint32(magic))
	}
	if h.Version != FileVersion {
		return h, fmt.Errorf("unsupported %s version %d (want %d)", what, h.Version, FileVersion)
	}
	return h, nil
}

// MaxTxnSize bounds one log entry (ZooKeeper's jute.maxbuffer is far lower
// by default); a larger length is treated as corruption.
const MaxTxnSize = 256 << 20

// Position names a place in a file.
type Position struct {
	File   string
	Offset int64
}

func (p Position) String() string { return fmt.Sprintf("%s:%d", p.File, p.Offset) }

// Tail describes where a log file's valid entries ended on something other
// than ZooKeeper's zero padding: a torn (partially written) last entry.
type Tail struct {
	Position
	Reason string
}

func (t Tail) String() string { return "truncated tail at " + t.Position.String() + ": " + t.Reason }

// Entry is one transaction read from a log.
type Entry struct {
	Txn
	Pos Position // where its entry (the CRC) starts
}

// CorruptError reports damage that is not a torn tail: more valid-looking
// data follows the damaged entry, or its contents do not decode.
type CorruptError struct {
	Position
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt txn log %s: %v", e.Position, e.Err)
}
func (e *CorruptError) Unwrap() error { return e.Err }

// LogReader iterates the transactions of a sequence of log files in zxid
// order. Next returns io.EOF at the end; Tails then lists torn tails seen.
type LogReader struct {
	files   []LogFile
	from    int64
	idx     int
	f       *os.File
	br      *bufio.Reader
	size    int64
	off     int64
	headers []FileHeader
	tails   []Tail
	lastZx  int64
}

// NewLogReader reads the logs of dir (a version-2 directory) holding
// transactions with zxid >= fromZxid, choosing files as ZooKeeper's
// FileTxnLog.getLogFiles does.
func NewLogReader(dir string, fromZxid int64) (*LogReader, error) {
	logs, err := listFiles(dir, "log")
	if err != nil {
		return nil, err
	}
	return NewLogReaderFiles(SelectLogs(logs, fromZxid), fromZxid), nil
}

// SelectLogs picks the log files that can hold zxids >= fromZxid: the last
// one starting at or before fromZxid and all later ones.
func SelectLogs(logs []LogFile, fromZxid int64) []LogFile {
	start := 0
	for i, l := range logs {
		if l.Zxid <= fromZxid {
			start = i
		}
	}
	return logs[start:]
}

// NewLogReaderFiles reads the given log files in order, returning
// transactions with zxid >= fromZxid.
func NewLogReaderFiles(files []LogFile, fromZxid int64) *LogReader {
	return &LogReader{files: files, from: fromZxid, lastZx: -1}
}

// Headers returns the file headers read so far, one per opened file (a
// caller compares their DBID with the snapshot's).
func (r *LogReader) Headers() []FileHeader { return r.headers }

// Tails returns the torn tails met so far.
func (r *LogReader) Tails() []Tail { return r.tails }

// Close releases the open file.
func (r *LogReader) Close() error {
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

func (r *LogReader) open() error {
	lf := r.files[r.idx]
	f, err := os.Open(lf.Path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size, r.off = f, st.Size(), 0
	r.br = bufio.NewReaderSize(f, 256<<10)
	var hb [16]byte
	n, err := io.ReadFull(r.br, hb[:])
	if err != nil {
		if allZero(hb[:n]) {
			// Created but never written (crash right after the roll).
			r.tails = append(r.tails, Tail{Position{lf.Path, 0}, "log file without a header"})
			return io.EOF
		}
		return &CorruptError{Position{lf.Path, 0}, fmt.Errorf("short file header (%d bytes)", n)}
	}
	if allZero(hb[:]) && r.restZero(16) {
		r.tails = append(r.tails, Tail{Position{lf.Path, 0}, "log file of zeros only"})
		return io.EOF
	}
	h, err := parseHeader(hb[:], LogMagic, "txn log")
	if err != nil {
		return &CorruptError{Position{lf.Path, 0}, err}
	}
	r.headers = append(r.headers, h)
	r.off = 16
	return nil
}

func (r *LogReader) closeFile() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.idx++
}

// Next returns the next transaction, io.EOF after the last one, or an
// error (a *CorruptError for damage, wrapping ErrUnknownTxnType for an
// unknown type).
func (r *LogReader) Next() (Entry, error) {
	for {
		if r.f == nil {
			if r.idx >= len(r.files) {
				return Entry{}, io.EOF
			}
			if err := r.open(); err != nil {
				if errors.Is(err, io.EOF) {
					r.closeFile()
					continue
				}
				r.closeFile()
				return Entry{}, err
			}
		}
		e, err := r.readEntry()
		if err == io.EOF {
			r.closeFile()
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		if e.Header.Zxid < r.from {
			continue
		}
		if e.Header.Zxid <= r.lastZx {
			return Entry{}, &CorruptError{e.Pos, fmt.Errorf("zxid 0x%x does not follow 0x%x", e.Header.Zxid, r.lastZx)}
		}
		r.lastZx = e.Header.Zxid
		return e, nil
	}
}

func (r *LogReader) readEntry() (Entry, error) {
	pos := Position{r.files[r.idx].Path, r.off}
	torn := func(reason string) (Entry, error) {
		r.tails = append(r.tails, Tail{pos, reason})
		return Entry{}, io.EOF
	}
	var hb [12]byte
	n, err := io.ReadFull(r.br, hb[:])
	if err != nil {
		if allZero(hb[:n]) {
			return Entry{}, io.EOF
		}
		return torn("entry header cut short")
	}
	crc := binary.BigEndian.Uint64(hb[:8])
	length := int32(binary.BigEndian.Uint32(hb[8:]))
	end := r.off + 12 + int64(length) + 1
	if length == 0 {
		// ZooKeeper's EOF: preallocated zeros. Anything but zeros after it
		// means an entry was wiped out in the middle.
		if r.restZero(r.off + 12) {
			if crc == 0 {
				return Entry{}, io.EOF
			}
			return torn("entry header cut short")
		}
		return Entry{}, &CorruptError{pos, errors.New("empty entry followed by more data")}
	}
	if length < 0 || length > MaxTxnSize {
		if r.restZero(r.off + 12) {
			return torn(fmt.Sprintf("bad entry length %d", length))
		}
		return Entry{}, &CorruptError{pos, fmt.Errorf("bad entry length %d", length)}
	}
	if end > r.size {
		return torn(fmt.Sprintf("entry of %d bytes runs past the end of the file", length))
	}
	buf := make([]byte, int(length)+1)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return torn("entry cut short")
	}
	r.off = end
	body := buf[:length]
	var problem string
	if uint64(adler32.Checksum(body)) != crc {
		problem = fmt.Sprintf("checksum mismatch (stored %#x, computed %#x)", crc, adler32.Checksum(body))
	} else if buf[length] != 'B' {
		problem = fmt.Sprintf("end-of-record byte %#x, want 'B'", buf[length])
	}
	if problem != "" {
		if r.restZero(end) {
			return torn(problem)
		}
		return Entry{}, &CorruptError{pos, errors.New(problem + ", and more data follows")}
	}
	t, err := DecodeTxn(body)
	if err != nil {
		return Entry{}, &CorruptError{pos, err}
	}
	return Entry{Txn: t, Pos: pos}, nil
}

// restZero tells whether the current file holds only zero bytes from off
// to its end.
func (r *LogReader) restZero(off int64) bool {
	buf := make([]byte, 64<<10)
	for off < r.size {
		n, err := r.f.ReadAt(buf, off)
		if !allZero(buf[:n]) {
			return false
		}
		off += int64(n)
		if err != nil {
			break
		}
	}
	return true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
