package zkdata

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/snappy"
)

func readSeed(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// entry frames a txn body as FileTxnLog does.
func entry(body []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(adler32.Checksum(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	return append(b, 'B')
}

func logHeader() []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(LogMagic))
	b = binary.BigEndian.AppendUint32(b, 2)
	return binary.BigEndian.AppendUint64(b, 0)
}

func txnHeader(zxid int64, typ int32) []byte {
	b := binary.BigEndian.AppendUint64(nil, 0x100)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint64(b, 1700000000000)
	return binary.BigEndian.AppendUint32(b, uint32(typ))
}

func str(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

func deleteBody(zxid int64, path string) []byte {
	return append(txnHeader(zxid, OpDelete), str(path)...)
}

// entries returns the offsets of the seed log's entries.
func entryOffsets(t *testing.T, log []byte) []int64 {
	r := NewLogReaderFiles([]LogFile{{Path: writeTemp(t, "log.1", log)}}, 0)
	defer r.Close()
	var offs []int64
	for {
		e, err := r.Next()
		if err == io.EOF {
			return offs
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, e.Pos.Offset)
	}
}

func writeTemp(t testing.TB, name string, b []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readLog(t *testing.T, b []byte) (n int, tails []Tail, err error) {
	r := NewLogReaderFiles([]LogFile{{Path: writeTemp(t, "log.1", b)}}, 0)
	defer r.Close()
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n, r.Tails(), nil
		}
		if err != nil {
			return n, r.Tails(), err
		}
		n++
	}
}

func TestLogZeroFilledTail(t *testing.T) {
	log := readSeed(t, "log.seed")
	want := len(entryOffsets(t, log))
	n, tails, err := readLog(t, append(append([]byte{}, log...), make([]byte, 70000)...))
	if err != nil || n != want || len(tails) != 0 {
		t.Fatalf("zero-padded log: %d txns (want %d), tails %v, err %v", n, want, tails, err)
	}
}

func TestLogTornTail(t *testing.T) {
	log := readSeed(t, "log.seed")
	offs := entryOffsets(t, log)
	last := offs[len(offs)-1]
	for _, cut := range []int64{last + 5, last + 20, int64(len(log)) - 1} {
		// Cut short, and cut short inside preallocated zeros.
		for _, pad := range []int{0, 4096} {
			b := append(append([]byte{}, log[:cut]...), make([]byte, pad)...)
			n, tails, err := readLog(t, b)
			if err != nil || n != len(offs)-1 {
				t.Fatalf("cut at %d pad %d: %d txns, err %v", cut, pad, n, err)
			}
			if pad == 0 && cut == last+5 {
				if len(tails) != 1 || tails[0].Offset != last {
					t.Fatalf("cut at %d: tails %v, want one at %d", cut, tails, last)
				}
				if !strings.Contains(tails[0].String(), "truncated tail at ") {
					t.Fatalf("tail %q", tails[0])
				}
			}
		}
	}
	// A last entry whose bytes went bad, followed by zeros only: torn.
	b := append([]byte{}, log...)
	b[len(b)-3] ^= 0xff
	n, tails, err := readLog(t, append(b, make([]byte, 100)...))
	if err != nil || n != len(offs)-1 || len(tails) != 1 || !strings.Contains(tails[0].Reason, "checksum") {
		t.Fatalf("bad last entry: %d txns, tails %v, err %v", n, tails, err)
	}
}

func TestLogCorruptMiddle(t *testing.T) {
	log := readSeed(t, "log.seed")
	offs := entryOffsets(t, log)
	b := append([]byte{}, log...)
	b[offs[2]+20] ^= 0x55 // inside the third entry's header
	n, _, err := readLog(t, b)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != offs[2] || n != 2 {
		t.Fatalf("corrupt third entry: %d txns, err %v", n, err)
	}
	if !strings.Contains(err.Error(), "log.1:") || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("error %q does not name file, offset and cause", err)
	}
	t.Log(err)

	// Zeros in the middle (an entry wiped) followed by more entries.
	b = append([]byte{}, log[:offs[3]]...)
	b = append(b, make([]byte, 40)...)
	b = append(b, log[offs[3]:]...)
	if _, _, err := readLog(t, b); !errors.As(err, &ce) {
		t.Fatalf("zeros in the middle: err %v", err)
	}
}

func TestLogUnknownTxnType(t *testing.T) {
	b := logHeader()
	b = append(b, entry(deleteBody(1, "/a"))...)
	b = append(b, entry(append(txnHeader(2, 99), str("/x")...))...)
	b = append(b, entry(deleteBody(3, "/b"))...)
	n, _, err := readLog(t, b)
	at := fmt.Sprintf("log.1:%d", 16+len(entry(deleteBody(1, "/a"))))
	if !errors.Is(err, ErrUnknownTxnType) || n != 1 || !strings.Contains(err.Error(), at) {
		t.Fatalf("unknown type: %d txns, err %v", n, err)
	}
	t.Log(err)
	// Also inside a multi.
	multi := txnHeader(2, OpMulti)
	multi = binary.BigEndian.AppendUint32(multi, 1)
	multi = binary.BigEndian.AppendUint32(multi, 77)
	multi = binary.BigEndian.AppendUint32(multi, 0)
	if _, err := DecodeTxn(multi); !errors.Is(err, ErrUnknownTxnType) {
		t.Fatalf("unknown multi op: %v", err)
	}
}

func TestLogWrongMagic(t *testing.T) {
	b := readSeed(t, "log.seed")
	b = append([]byte("ZKSN"), b[4:]...)
	if _, _, err := readLog(t, b); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("wrong magic: %v", err)
	}
}

func TestLogFromZxidAndOrder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "log.1"), append(append(logHeader(), entry(deleteBody(1, "/a"))...), entry(deleteBody(2, "/b"))...), 0o644)
	os.WriteFile(filepath.Join(dir, "log.3"), append(append(logHeader(), entry(deleteBody(3, "/c"))...), make([]byte, 512)...), 0o644)
	os.WriteFile(filepath.Join(dir, "log.10"), append(logHeader(), entry(deleteBody(0x10, "/d"))...), 0o644)
	os.WriteFile(filepath.Join(dir, "acceptedEpoch"), []byte("1"), 0o644)
	for from, want := range map[int64]string{0: "/a/b/c/d", 2: "/b/c/d", 3: "/c/d", 5: "/d", 0x11: ""} {
		r, err := NewLogReader(dir, from)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got += e.Record.(*DeleteTxn).Path
		}
		r.Close()
		if got != want {
			t.Errorf("from %d: %q, want %q", from, got, want)
		}
	}
}

func TestDecodeLegacyRecords(t *testing.T) {
	// closeSession without a record (before 3.6), with and without digest.
	for _, tail := range [][]byte{nil, {0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8}} {
		x, err := DecodeTxn(append(txnHeader(5, OpCloseSession), tail...))
		if err != nil {
			t.Fatal(err)
		}
		if c := x.Record.(*CloseSessionTxn); !c.Legacy || (tail != nil) != (x.Digest != nil) {
			t.Fatalf("legacy closeSession: %+v digest %+v", c, x.Digest)
		}
	}
	// CreateTxnV0: no parentCVersion.
	v0 := append(txnHeader(6, OpCreate), str("/v0")...)
	v0 = append(v0, str("data")...)
	v0 = binary.BigEndian.AppendUint32(v0, 0xffffffff) // null ACL vector
	v0 = append(v0, 1)
	x, err := DecodeTxn(v0)
	if err != nil {
		t.Fatal(err)
	}
	if c := x.Record.(*CreateTxn); !c.V0 || c.ParentCVersion != -1 || !c.Ephemeral || c.Path != "/v0" {
		t.Fatalf("v0 create: %+v", c)
	}
	// Trailing garbage is an error, not ignored.
	if _, err := DecodeTxn(append(deleteBody(7, "/a"), 1, 2, 3)); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}

func snapNodes(t *testing.T, b []byte, comp string) (SnapshotInfo, []string, error) {
	var paths []string
	info, err := ReadSnapshotFrom(bytes.NewReader(b), comp, SnapshotVisitor{
		Node: func(n Node) error { paths = append(paths, n.Path); return nil },
	})
	return info, paths, err
}

func TestSnapshotCompressed(t *testing.T) {
	plain := readSeed(t, "snapshot.seed")
	want, wantPaths, err := snapNodes(t, plain, "")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	// snappy-java's stream: magic, version 1, compatible version 1, then
	// blocks of at most 32 KiB (here tiny, to cross block boundaries).
	sn := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	for i := 0; i < len(plain); i += 1000 {
		blk := snappy.Encode(nil, plain[i:min(i+1000, len(plain))])
		sn = binary.BigEndian.AppendUint32(sn, uint32(len(blk)))
		sn = append(sn, blk...)
	}
	for comp, b := range map[string][]byte{"gz": gz.Bytes(), "snappy": sn} {
		got, paths, err := snapNodes(t, b, comp)
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		if got.Checksum != want.Checksum || strings.Join(paths, ",") != strings.Join(wantPaths, ",") {
			t.Fatalf("%s: %+v %v, want %+v %v", comp, got, paths, want, wantPaths)
		}
	}
	// Through the file name, too.
	p := writeTemp(t, "snapshot.6f.gz", gz.Bytes())
	info, err := ReadSnapshot(p, SnapshotVisitor{})
	if err != nil || info.Zxid != 0x6f || info.Nodes != want.Nodes {
		t.Fatalf("snapshot.6f.gz: %+v %v", info, err)
	}
}

func TestSnapshotBadInput(t *testing.T) {
	plain := readSeed(t, "snapshot.seed")
	if _, _, err := snapNodes(t, plain, ""); err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 10, 16, 100, len(plain) / 2, len(plain) - 40, len(plain) - 1} {
		_, _, err := snapNodes(t, plain[:cut], "")
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("truncated at %d of %d: %v", cut, len(plain), err)
		}
	}
	b := append([]byte("ZKLG"), plain[4:]...)
	if _, _, err := snapNodes(t, b, ""); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("wrong magic: %v", err)
	}
	// A flipped byte in a node's data leaves the structure intact: only
	// the checksum can tell.
	i := bytes.Index(plain, []byte("yyyy"))
	if i < 0 {
		t.Fatal("seed snapshot without bulk data")
	}
	b = append([]byte{}, plain...)
	b[i] = 'z'
	if _, _, err := snapNodes(t, b, ""); !errors.Is(err, ErrChecksum) {
		t.Errorf("flipped data byte: %v", err)
	}
	// A node whose parent does not precede it.
	b = append([]byte{}, plain...)
	j := bytes.Index(b, []byte("/app/"))
	b[j+1] = 'q'
	if _, _, err := snapNodes(t, b, ""); err == nil || !strings.Contains(err.Error(), "parent") {
		t.Errorf("orphan node: %v", err)
	}
	if _, err := ReadSnapshot(writeTemp(t, "snapshot.zz", plain), SnapshotVisitor{}); err == nil {
		t.Error("bad file name accepted")
	}
}

// sealed appends a sealed section to a snapshot as SnapStream.sealStream
// does: the section, then the Adler32 of everything so far, then "/".
func sealed(snap, section []byte) []byte {
	b := append(append([]byte{}, snap...), section...)
	b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(b)))
	return append(b, str("/")...)
}

func TestSnapshotTrailers(t *testing.T) {
	plain := readSeed(t, "snapshot.seed")
	info, _, err := snapNodes(t, plain, "")
	if err != nil || info.Digest == nil || info.LastProcessedZxid != nil {
		t.Fatalf("seed (3.8, digest enabled): %+v %v", info, err)
	}
	old := plain[:len(plain)-33] // as 3.5 (or digest disabled) writes it
	if info, _, err := snapNodes(t, old, ""); err != nil || info.Digest != nil {
		t.Fatalf("without digest: %+v %v", info, err)
	}
	zx := binary.BigEndian.AppendUint64(nil, 0x1234)
	for name, b := range map[string][]byte{"digest+lastZxid": sealed(plain, zx), "lastZxid": sealed(old, zx)} {
		info, _, err := snapNodes(t, b, "")
		if err != nil || info.LastProcessedZxid == nil || *info.LastProcessedZxid != 0x1234 || (info.Digest != nil) != (name != "lastZxid") {
			t.Fatalf("%s: %+v %v", name, info, err)
		}
		b[len(b)-10] ^= 1
		if _, _, err := snapNodes(t, b, ""); !errors.Is(err, ErrChecksum) {
			t.Fatalf("%s with a bad seal: %v", name, err)
		}
	}
	if _, _, err := snapNodes(t, append(append([]byte{}, plain...), 1, 2, 3), ""); err == nil {
		t.Fatal("trailing garbage accepted")
	}
}

func TestDecodeReconfig(t *testing.T) {
	b := append(txnHeader(9, OpReconfig), str("/zookeeper/config")...)
	b = append(b, str("server.1=127.0.0.1:2888:3888:participant;2181")...)
	b = binary.BigEndian.AppendUint32(b, 3)
	x, err := DecodeTxn(b)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := x.Record.(*SetDataTxn); !ok || r.Path != "/zookeeper/config" || r.Version != 3 {
		t.Fatalf("reconfig: %#v", x.Record)
	}
}

func TestLogOddFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "log.1"), append(logHeader(), entry(deleteBody(1, "/a"))...), 0o644)
	os.WriteFile(filepath.Join(dir, "log.2"), make([]byte, 4096), 0o644) // never written
	os.WriteFile(filepath.Join(dir, "log.3"), nil, 0o644)                // created, then the crash
	os.WriteFile(filepath.Join(dir, "log.4"), append(append(logHeader(), entry(deleteBody(4, "/b"))...), entry(deleteBody(3, "/c"))...), 0o644)
	r, err := NewLogReader(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got string
	for {
		e, err := r.Next()
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "does not follow") || !strings.HasSuffix(ce.File, "log.4") {
				t.Fatalf("after %q: %v", got, err)
			}
			break
		}
		got += e.Record.(*DeleteTxn).Path
	}
	if got != "/a/b" || len(r.Tails()) != 2 || len(r.Headers()) != 2 {
		t.Fatalf("read %q, tails %v, headers %v", got, r.Tails(), r.Headers())
	}
}
