package zkdata

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadSnapshot: any bytes, read as a plain or snappy snapshot, give
// an error or a result, never a panic or a hang.
func FuzzReadSnapshot(f *testing.F) {
	plain := readSeed(f, "snapshot.seed")
	f.Add(plain)
	f.Add(plain[:len(plain)/2])
	f.Add(plain[:len(plain)-21])
	f.Add(append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3, 1, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		comp := ""
		if bytes.HasPrefix(b, xerialMagic) {
			comp = "snappy"
		}
		var nodes int
		info, err := ReadSnapshotFrom(bytes.NewReader(b), comp, SnapshotVisitor{
			Node: func(n Node) error { nodes++; return nil },
		})
		if err == nil && info.Nodes != nodes {
			t.Fatalf("info.Nodes %d, visited %d", info.Nodes, nodes)
		}
	})
}

// FuzzLogReader: any bytes as a log file are read to io.EOF or an error,
// never a panic or a hang; what is returned decodes again the same way.
func FuzzLogReader(f *testing.F) {
	log := readSeed(f, "log.seed")
	f.Add(log)
	f.Add(append(append([]byte{}, log...), make([]byte, 100)...))
	f.Add(log[:len(log)-7])
	f.Add(append(logHeader(), entry(deleteBody(1, "/a"))...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "log.1")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := NewLogReaderFiles([]LogFile{{Path: p}}, 0)
		defer r.Close()
		for i := 0; ; i++ {
			e, err := r.Next()
			if err != nil {
				if err != io.EOF && e.Record != nil {
					t.Fatalf("error %v with a record", err)
				}
				return
			}
			if i > len(b) {
				t.Fatal("more txns than bytes")
			}
			if e.Record == nil {
				t.Fatal("txn without a record")
			}
		}
	})
}

// FuzzDecodeTxn: any entry body decodes or fails cleanly.
func FuzzDecodeTxn(f *testing.F) {
	log := readSeed(f, "log.seed")
	for off := 16; off+12 <= len(log); {
		n := int(binary.BigEndian.Uint32(log[off+8:]))
		if n <= 0 || off+12+n > len(log) {
			break
		}
		f.Add(log[off+12 : off+12+n])
		off += 12 + n + 1
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeTxn(b)
		if err == nil && x.Record == nil {
			t.Fatal("no record and no error")
		}
	})
}
