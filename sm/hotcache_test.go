package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The session records an Update's entries rewrite reach the batch once, at
// its end: every entry still sees the one before it (primary order), and
// the committed state, read by a View and after a reopen without the
// cache, holds each record's last value; a session closed in the same
// Update is gone.
func TestHotRecordsWrittenOncePerUpdateKeepTheirLastValue(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Dir: dir})
	a, b, c := h.newSession(), h.newSession(), h.newSession()
	h.mustCreate(a, "/p")
	var cmds []*Command
	for i := 0; i < 5; i++ {
		cmds = append(cmds, h.cmd(a, &Create{OpCode: zkproto.OpCreate, Path: "/p/a" + string(rune('0'+i)), ACL: open}))
		cmds = append(cmds, h.cmd(b, &SetData{Path: "/p", Data: []byte{byte(i)}, Version: -1}))
	}
	cmds = append(cmds, h.cmd(c, &CloseSession{}))
	// A write that skips a's sequence number must be refused in the same
	// Update: it sees the last seq staged, not the stored one.
	skip := h.cmd(a, &SetData{Path: "/p", Data: []byte("late"), Version: -1})
	skip.Seq++
	cmds = append(cmds, skip)
	res := h.update(cmds...)
	for _, r := range res[:len(res)-1] {
		wantErr(t, "entry", r.Err, zkproto.ErrOK)
	}
	if !res[len(res)-1].OutOfOrder {
		t.Fatalf("a write with a skipped sequence number was not refused: %+v", res[len(res)-1])
	}
	check := func(when string, v *View) {
		t.Helper()
		defer v.Close()
		for s, want := range map[int64]uint64{a: h.seq[a] - 1, b: h.seq[b]} {
			info, err := v.Session(s)
			if err != nil || info == nil {
				t.Fatalf("%s: session %#x: %v %v", when, s, info, err)
			}
			if info.LastSeq != want {
				t.Fatalf("%s: session %#x last seq %d, want %d", when, s, info.LastSeq, want)
			}
		}
		if info, _ := v.Session(c); info != nil {
			t.Fatalf("%s: closed session still stored: %+v", when, info)
		}
	}
	check("view", h.view())
	if err := h.s.Sync(); err != nil {
		t.Fatal(err)
	}
	h.s.Close()
	s2 := New(Config{Dir: dir})
	if _, err := s2.Open(nil); err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	v, err := s2.View()
	if err != nil {
		t.Fatal(err)
	}
	check("after reopen", v)
}
