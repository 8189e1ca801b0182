package migrate

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The export format: JSON lines, gzip-compressed when the file name ends
// in .gz. The first line is a Header, then one Record per line (sessions
// first, then nodes with every parent before its children), and last an
// End record with the counts, so that a truncated file is told from a
// complete one. Readers refuse a format or version they do not know.
const (
	FormatName    = "zkbridge-migration"
	FormatVersion = 1
)

// Header is the first line of an export.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Source is where it came from: the ensemble's connection string or
	// the data directory.
	Source string `json:"source"`
	// Path is the exported subtree ("/" for all).
	Path string `json:"path"`
	// LastZxid is the highest zxid the source had served when the export
	// ended; an import raises zxidBase to (LastZxid>>32 + 1) << 32.
	LastZxid int64  `json:"last_zxid"`
	Created  string `json:"created"` // RFC 3339
}

// ACL is one ACL entry.
type ACL struct {
	Perms  int32  `json:"perms"`
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
}

// Node is one znode: data, ACL and the stat as clients see it, plus what
// clients cannot see but an import needs.
type Node struct {
	Path     string `json:"path"`
	Data     []byte `json:"data"` // base64 in JSON; null for null data
	ACL      []ACL  `json:"acl"`
	Czxid    int64  `json:"czxid"`
	Mzxid    int64  `json:"mzxid"`
	Pzxid    int64  `json:"pzxid"`
	Ctime    int64  `json:"ctime"`
	Mtime    int64  `json:"mtime"`
	Version  int32  `json:"version"`
	Cversion int32  `json:"cversion"`
	Aversion int32  `json:"aversion"`
	// EphemeralOwner is the session of an ephemeral, or (from a data
	// directory only) ZooKeeper's container or TTL marker.
	EphemeralOwner int64 `json:"ephemeral_owner"`
	NumChildren    int32 `json:"num_children"`
	// Creates is the count of children ever created, the next sequential
	// suffix: (cversion + numChildren) / 2.
	Creates int32 `json:"creates"`
	// Ancestor marks a node above the exported subtree, imported only
	// where the target lacks it.
	Ancestor bool `json:"ancestor,omitempty"`
	// dataLength is the data length of a stat-only read (ReadStat).
	dataLength int32
}

// Session is a source session: its id and negotiated timeout. Its password
// is ZooKeeper's, derived from the id (ZooKeeperPassword).
type Session struct {
	ID      int64 `json:"id"`
	Timeout int32 `json:"timeout_ms"`
}

// End is the last record: the counts written.
type End struct {
	Nodes    int64 `json:"nodes"`
	Sessions int64 `json:"sessions"`
	// LastZxid is the highest zxid seen by the end of the export.
	LastZxid int64 `json:"last_zxid"`
}

// Record is one line after the header: exactly one field is set.
type Record struct {
	Session *Session `json:"session,omitempty"`
	Node    *Node    `json:"node,omitempty"`
	End     *End     `json:"end,omitempty"`
}

// Writer writes an export.
type Writer struct {
	f    io.Closer
	gz   *gzip.Writer
	buf  *bufio.Writer
	enc  *json.Encoder
	end  End
	done bool
}

// Create creates file name ("-": standard output) and writes h.
func Create(name string, h Header) (*Writer, error) {
	var f io.WriteCloser = os.Stdout
	if name != "-" {
		var err error
		if f, err = os.Create(name); err != nil {
			return nil, fmt.Errorf("create the export file: %w", err)
		}
	}
	w := &Writer{f: f}
	var out io.Writer = f
	if strings.HasSuffix(name, ".gz") {
		w.gz = gzip.NewWriter(f)
		out = w.gz
	}
	w.buf = bufio.NewWriterSize(out, 1<<20)
	w.enc = json.NewEncoder(w.buf)
	h.Format, h.Version = FormatName, FormatVersion
	if err := w.enc.Encode(h); err != nil {
		return nil, err
	}
	return w, nil
}

// Session writes a session record.
func (w *Writer) Session(s Session) error {
	w.end.Sessions++
	return w.enc.Encode(Record{Session: &s})
}

// Node writes a node record.
func (w *Writer) Node(n *Node) error {
	w.end.Nodes++
	return w.enc.Encode(Record{Node: n})
}

// Counts is what was written so far.
func (w *Writer) Counts() End { return w.end }

// Close writes the End record and closes the file.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.enc.Encode(Record{End: &w.end})
	if e := w.buf.Flush(); err == nil {
		err = e
	}
	if w.gz != nil {
		if e := w.gz.Close(); err == nil {
			err = e
		}
	}
	if w.f != os.Stdout {
		if e := w.f.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Abort closes the file without the End record: a reader will call it
// truncated.
func (w *Writer) Abort() {
	w.done = true
	_ = w.buf.Flush()
	if w.gz != nil {
		_ = w.gz.Close()
	}
	if w.f != os.Stdout {
		_ = w.f.Close()
	}
}

// Reader reads an export.
type Reader struct {
	Header Header
	f      io.Closer
	in     *bufio.Reader
	name   string
	// unterminated: the last line read ended the file without a newline.
	unterminated bool
	line         int
	end          *End
	got          End
	// memo is the last ACL the fast decoder read: the nodes of one Reader
	// share ACL slices (read-only).
	memo aclMemo
}

// ErrTruncated is returned when an export ends without its End record.
var ErrTruncated = errors.New("the export file ends without its end record (truncated: export again)")

// Open opens an export and reads its header.
func Open(name string) (*Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open the export file: %w", err)
	}
	r := &Reader{f: f, name: name}
	r.in = bufio.NewReaderSize(f, 1<<20)
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(r.in)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: not a gzip file: %w", name, err)
		}
		r.in = bufio.NewReaderSize(gz, 1<<20)
	}
	line, err := r.nextLine()
	if err == nil {
		err = json.Unmarshal(line, &r.Header)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a zkbridge migration export (header: %v)", name, err)
	}
	r.line = 1
	if r.Header.Format != FormatName {
		f.Close()
		return nil, fmt.Errorf("%s: format %q, want %q (not a zkbridge migration export)", name, r.Header.Format, FormatName)
	}
	if r.Header.Version != FormatVersion {
		f.Close()
		return nil, fmt.Errorf("%s: format version %d; this zkbridge reads version %d (use the zkbridge that wrote it, or export again)", name, r.Header.Version, FormatVersion)
	}
	return r, nil
}

// Next returns the next session or node record, or io.EOF after a
// complete file's End record (ErrTruncated without it). Counts in the End
// record are checked.
func (r *Reader) Next() (*Record, error) {
	if r.end != nil {
		return nil, io.EOF
	}
	var rec Record
	r.line++
	line, err := r.nextLine()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", r.name, ErrTruncated)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: record %d: %w", r.name, r.line, err)
	}
	if n, ok := parseNodeLine(line, &r.memo); ok {
		rec.Node = n
	} else if err := json.Unmarshal(line, &rec); err != nil {
		if r.unterminated {
			// The file ends in the middle of a record.
			return nil, fmt.Errorf("%s: %w", r.name, ErrTruncated)
		}
		return nil, fmt.Errorf("%s: record %d: %w", r.name, r.line, err)
	}
	switch {
	case rec.End != nil:
		r.end = rec.End
		if rec.End.Nodes != r.got.Nodes || rec.End.Sessions != r.got.Sessions {
			return nil, fmt.Errorf("%s: the end record counts %d nodes and %d sessions, the file has %d and %d", r.name, rec.End.Nodes, rec.End.Sessions, r.got.Nodes, r.got.Sessions)
		}
		return nil, io.EOF
	case rec.Node != nil:
		r.got.Nodes++
	case rec.Session != nil:
		r.got.Sessions++
	default:
		return nil, fmt.Errorf("%s: record %d: empty (a newer format?)", r.name, r.line)
	}
	return &rec, nil
}

// nextLine returns the next non-blank line without its line end (valid
// until the next call), or io.EOF after the last.
func (r *Reader) nextLine() ([]byte, error) {
	for {
		line, err := r.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer (a large value): collect it.
			long := append([]byte(nil), line...)
			var rest []byte
			rest, err = r.in.ReadBytes('\n')
			line = append(long, rest...)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			r.unterminated = err != nil
			return t, nil
		}
		if err != nil {
			return nil, io.EOF
		}
	}
}

// End is the End record once Next returned io.EOF (nil before).
func (r *Reader) End() *End { return r.end }

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// CheckComplete reads an export through without decoding its records and
// checks that it ends with its end record, whose counts match its lines:
// an import checks this first, so that a truncated file imports nothing.
func CheckComplete(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("open the export file: %w", err)
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			return fmt.Errorf("%s: not a gzip file: %w", name, err)
		}
		in = gz
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var lines int64
	var last []byte
	for sc.Scan() {
		lines++
		last = append(last[:0], sc.Bytes()...)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w (%v)", name, ErrTruncated, err)
	}
	var rec Record
	if lines < 2 || json.Unmarshal(last, &rec) != nil || rec.End == nil {
		return fmt.Errorf("%s: %w", name, ErrTruncated)
	}
	if rec.End.Nodes+rec.End.Sessions != lines-2 {
		return fmt.Errorf("%s: the end record counts %d records, the file has %d lines of them", name, rec.End.Nodes+rec.End.Sessions, lines-2)
	}
	return nil
}
