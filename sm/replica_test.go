package sm

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	sm "github.com/lni/dragonboat/v4/statemachine"
)

func flatten(batches [][]sm.Entry) []sm.Entry {
	var out []sm.Entry
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

func cloneEntries(ents []sm.Entry) []sm.Entry {
	out := make([]sm.Entry, len(ents))
	for i, e := range ents {
		out[i] = sm.Entry{Index: e.Index, Cmd: e.Cmd}
	}
	return out
}

// feed applies ents to s in batches of the sizes chosen by size.
func feed(t *testing.T, s *StateMachine, ents []sm.Entry, size func() int) {
	t.Helper()
	for len(ents) > 0 {
		n := size()
		if n > len(ents) {
			n = len(ents)
		}
		if _, err := s.Update(cloneEntries(ents[:n])); err != nil {
			t.Fatal(err)
		}
		ents = ents[n:]
	}
}

func openSM(t *testing.T, dir string) *StateMachine {
	t.Helper()
	s := New(Config{Dir: dir, SuperDigest: digestID("super", "s").ID})
	if _, err := s.Open(nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func hashOf(t *testing.T, s *StateMachine) [32]byte {
	t.Helper()
	h, err := s.ContentHash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDeterminismAcrossBatchings(t *testing.T) {
	a, batches := runModel(t, 7, 6000, func(r *rand.Rand) int { return 1 + r.Intn(40) }, t.TempDir())
	defer a.Close()
	ents := flatten(batches)
	want := hashOf(t, a)

	b := openSM(t, t.TempDir())
	defer b.Close()
	feed(t, b, ents, func() int { return 1 })
	if got := hashOf(t, b); got != want {
		t.Fatal("batch size 1 replica differs")
	}
	c := openSM(t, t.TempDir())
	defer c.Close()
	r := rand.New(rand.NewSource(99))
	feed(t, c, ents, func() int { return 1 + r.Intn(200) })
	if got := hashOf(t, c); got != want {
		t.Fatal("random batching replica differs")
	}
}

func saveSnapshot(t *testing.T, s *StateMachine) []byte {
	t.Helper()
	ctx, err := s.PrepareSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.SaveSnapshot(ctx, &buf, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotSaveRecover(t *testing.T) {
	a, batches := runModel(t, 11, 4000, func(r *rand.Rand) int { return 1 + r.Intn(16) }, t.TempDir())
	defer a.Close()
	ents := flatten(batches)
	snap := saveSnapshot(t, a)
	want := hashOf(t, a)

	// A replica that has applied a prefix (different tree) recovers.
	dirB := t.TempDir()
	b := openSM(t, dirB)
	defer b.Close()
	feed(t, b, ents[:100], func() int { return 7 })
	if err := b.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	if hashOf(t, b) != want || b.AppliedIndex() != a.AppliedIndex() || b.LastZxid() != a.LastZxid() {
		t.Fatal("recovered replica differs")
	}
	// Both continue identically.
	more := runMoreEntries(t, a, ents[len(ents)-1].Index, 500)
	feed(t, b, more, func() int { return 3 })
	if hashOf(t, a) != hashOf(t, b) {
		t.Fatal("replicas diverged after recovery")
	}
	// Restart of the recovered replica keeps the recovered DB.
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	h := hashOf(t, b)
	b.Close()
	b2 := openSM(t, dirB)
	defer b2.Close()
	if hashOf(t, b2) != h || b2.AppliedIndex() != a.AppliedIndex() {
		t.Fatal("restart after recovery lost state")
	}
	dirs, _ := filepath.Glob(filepath.Join(dirB, "db-*"))
	if len(dirs) != 1 {
		t.Fatalf("leftover db dirs: %v", dirs)
	}
}

// runMoreEntries applies n more random writes to a and returns the entries.
func runMoreEntries(t *testing.T, a *StateMachine, last uint64, n int) []sm.Entry {
	t.Helper()
	var ents []sm.Entry
	idx := last
	sess := int64(0)
	for i := 0; i < n; i++ {
		idx++
		var c *Command
		if i == 0 {
			c = &Command{Header: Header{Conn: 1, Time: int64(i)}, Op: &CreateSession{Timeout: 1, Password: []byte("p")}}
		} else {
			c = &Command{Header: Header{Session: sess, Conn: 1, Seq: uint64(i), Time: int64(i)},
				Op: &Create{OpCode: 1, Path: "/more-", ACL: open, Flags: int32(i % 4)}}
		}
		e := sm.Entry{Index: idx, Cmd: c.Encode()}
		out, err := a.Update([]sm.Entry{e})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			r, _ := DecodeResult(out[0].Result.Data)
			sess = r.Session
		}
		ents = append(ents, sm.Entry{Index: idx, Cmd: c.Encode()})
	}
	return ents
}

func TestSnapshotCorruptionIsAnError(t *testing.T) {
	a, _ := runModel(t, 3, 1500, func(r *rand.Rand) int { return 5 }, t.TempDir())
	defer a.Close()
	snap := saveSnapshot(t, a)
	b := openSM(t, t.TempDir())
	defer b.Close()
	before := hashOf(t, b)
	cases := map[string][]byte{
		"truncated":       snap[:len(snap)/2],
		"truncated tail":  snap[:len(snap)-5],
		"empty":           nil,
		"bad magic":       append([]byte("XXXXXXXX"), snap[8:]...),
		"flipped byte":    flip(snap, len(snap)/3),
		"flipped trailer": flip(snap, len(snap)-1),
	}
	for name, data := range cases {
		err := b.RecoverFromSnapshot(bytes.NewReader(data), make(chan struct{}))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if !strings.Contains(err.Error(), "sm: recover snapshot") {
			t.Fatalf("%s: unclear error %v", name, err)
		}
		if strings.HasPrefix(name, "truncated") && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("%s: %v", name, err)
		}
		if hashOf(t, b) != before {
			t.Fatalf("%s: tree changed", name)
		}
	}
	stop := make(chan struct{})
	close(stop)
	if err := b.RecoverFromSnapshot(bytes.NewReader(snap), stop); !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("stopped: %v", err)
	}
	ctx, _ := a.PrepareSnapshot()
	if err := a.SaveSnapshot(ctx, io.Discard, stop); !errors.Is(err, sm.ErrSnapshotStopped) {
		t.Fatalf("save stopped: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(b.cfg.Dir, "db-*"))
	if len(dirs) != 1 {
		t.Fatalf("leftover dirs after failed recoveries: %v", dirs)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x40
	return c
}

func TestCrashRestartReplays(t *testing.T) {
	ref, batches := runModel(t, 5, 3000, func(r *rand.Rand) int { return 1 + r.Intn(30) }, t.TempDir())
	defer ref.Close()
	want := hashOf(t, ref)
	ents := flatten(batches)

	// Clean stop between batches, then replay from the returned index.
	dir := t.TempDir()
	s := openSM(t, dir)
	half := len(batches) / 2
	for _, b := range batches[:half] {
		if _, err := s.Update(cloneEntries(b)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = New(Config{Dir: dir, SuperDigest: digestID("super", "s").ID})
	applied, err := s.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	if applied != batches[half-1][len(batches[half-1])-1].Index {
		t.Fatalf("applied %d", applied)
	}
	feed(t, s, ents[applied:], func() int { return 13 })
	if hashOf(t, s) != want {
		t.Fatal("replay after restart differs")
	}
	s.Close()

	// Unclean: copy the live directory without closing (a process crash
	// image), open the copy and replay. Everything before the Sync must be
	// in the image (dragonboat compacts the Raft log behind it); what came
	// after may be, as a prefix.
	// No background compaction: it deletes files while copyDir walks the
	// directory (a real crash stops it; a copy of a live directory races
	// it).
	dir2 := t.TempDir()
	s2 := New(Config{Dir: dir2, SuperDigest: digestID("super", "s").ID,
		Pebble: func(o *pebble.Options) { o.DisableAutomaticCompactions = true }})
	if _, err := s2.Open(nil); err != nil {
		t.Fatal(err)
	}
	for i, b := range batches[:half+3] {
		if _, err := s2.Update(cloneEntries(b)); err != nil {
			t.Fatal(err)
		}
		if i == half-1 {
			if err := s2.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	synced := batches[half-1][len(batches[half-1])-1].Index
	crash := t.TempDir()
	copyDir(t, dir2, crash)
	s2.Close()
	s3 := New(Config{Dir: crash, SuperDigest: digestID("super", "s").ID})
	applied, err = s3.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	if applied < synced {
		t.Fatalf("the crash image opens at index %d, before %d which Sync made durable", applied, synced)
	}
	defer s3.Close()
	feed(t, s3, ents[applied:], func() int { return 4 })
	if hashOf(t, s3) != want {
		t.Fatal("replay after crash differs")
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
