package migrate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An export reads back as written, plain and gzip; a file cut short, of
// another version or with wrong counts is refused.
func TestExportFormat(t *testing.T) {
	for _, name := range []string{"x.jsonl", "x.jsonl.gz"} {
		path := filepath.Join(t.TempDir(), name)
		w, err := Create(path, Header{Source: "zk1:2181", Path: "/", LastZxid: 0x100000009})
		if err != nil {
			t.Fatal(err)
		}
		nodes := []*Node{{Path: "/", Creates: 2, NumChildren: 1, Cversion: 3}, {Path: "/a", Data: []byte{0, 1, 2}, ACL: []ACL{{Perms: 1, Scheme: "ip", ID: "10.0.0.0/8"}}, EphemeralOwner: 7}, {Path: "/a/n"}}
		_ = w.Session(Session{ID: 7, Timeout: 30000})
		for _, n := range nodes {
			_ = w.Node(n)
		}
		w.end.LastZxid = 0x10000000a
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := CheckComplete(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []*Node
		var sessions []Session
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if rec.Node != nil {
				got = append(got, rec.Node)
			} else {
				sessions = append(sessions, *rec.Session)
			}
		}
		r.Close()
		if len(got) != 3 || got[1].Data[2] != 2 || got[1].ACL[0].ID != "10.0.0.0/8" || got[2].Data != nil || got[0].Creates != 2 ||
			len(sessions) != 1 || sessions[0].Timeout != 30000 || r.End().LastZxid != 0x10000000a || r.Header.LastZxid != 0x100000009 {
			t.Fatalf("%s: read back %+v %+v %+v", name, got, sessions, r.End())
		}
	}
	// Cut short: both the pre-check and the reader say truncated.
	path := filepath.Join(t.TempDir(), "cut.jsonl")
	w, _ := Create(path, Header{Path: "/"})
	_ = w.Node(&Node{Path: "/a"})
	_ = w.Close()
	b, _ := os.ReadFile(path)
	_ = os.WriteFile(path, b[:len(b)-15], 0o644)
	if err := CheckComplete(path); !errors.Is(err, ErrTruncated) {
		t.Fatalf("pre-check of a cut file: %v", err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("reading a cut file: %v", err)
	}
	_ = os.WriteFile(path, []byte(`{"format":"zkbridge-migration","version":2}`+"\n"), 0o644)
	if _, err := Open(path); err == nil {
		t.Fatal("a version 2 file opened")
	}
}

// Sessions and timeouts from ZooKeeper 3.8's cons and a leader's dump.
func TestFourLetterParsing(t *testing.T) {
	cons := ` /127.0.0.1:52814[1](queued=0,recved=5,sent=5,sid=0x100000b3c5a0000,lop=PING,est=1765000000000,to=30000,lcxid=0x2,lzxid=0x100000004,lresp=12,llat=0,minlat=0,avglat=0.4,maxlat=2)
 /127.0.0.1:52816[0](queued=0,recved=1,sent=0)
`
	if got := parseCons(cons); len(got) != 1 || got[0x100000b3c5a0000] != 30000 {
		t.Fatalf("cons: %v", got)
	}
	dump := `SessionTracker dump:
Session Sets (3)/(2):
0 expire at Thu Jan 01 00:00:00 UTC 1970:
1 expire at Mon Dec 07 01:00:10 UTC 2026:
	0x100000b3c5a0000
1 expire at Mon Dec 07 01:00:12 UTC 2026:
	0x200000b3c5b0001
ephemeral nodes dump:
Sessions with Ephemerals (1):
0x100000b3c5a0000:
	/members/m1
`
	if got := parseDump(dump); !slices.Equal(got, []int64{0x100000b3c5a0000, 0x200000b3c5b0001}) {
		t.Fatalf("dump: %x", got)
	}
	if NextZxidBase(0x1_0000_00ff) != 2<<32 {
		t.Fatal("NextZxidBase")
	}
	if got := setStats("count=0,bytes=0", 13, 218); got != "count=13,bytes=218" {
		t.Fatalf("setStats: %s", got)
	}
}
