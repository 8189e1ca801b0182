package sm

import (
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/zkbridge/zkbridge/zkproto"
)

var (
	open   = zkproto.OpenACLUnsafe()
	worldR = []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "world", ID: "anyone"}}}
)

// harness drives one StateMachine the way dragonboat does.
type harness struct {
	t     testing.TB
	s     *StateMachine
	dir   string
	index uint64
	now   int64
	conn  map[int64]uint64 // session → conn
	seq   map[int64]uint64 // session → last seq
	auth  map[int64][]zkproto.Id
	last  []*Result // from Notify
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	h := &harness{t: t, dir: cfg.Dir, now: 1_700_000_000_000,
		conn: map[int64]uint64{}, seq: map[int64]uint64{}, auth: map[int64][]zkproto.Id{}}
	cfg.Notify = func(r []*Result) { h.last = r }
	h.s = New(cfg)
	idx, err := h.s.Open(make(chan struct{}))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	h.index = idx
	t.Cleanup(func() { h.s.Close() })
	return h
}

// update applies the commands as consecutive entries in one Update.
func (h *harness) update(cmds ...*Command) []*Result {
	h.t.Helper()
	ents := make([]sm.Entry, len(cmds))
	for i, c := range cmds {
		h.index++
		ents[i] = sm.Entry{Index: h.index, Cmd: c.Encode()}
	}
	out, err := h.s.Update(ents)
	if err != nil {
		h.t.Fatalf("update: %v", err)
	}
	res := make([]*Result, len(out))
	for i, e := range out {
		r, err := DecodeResult(e.Result.Data)
		if err != nil {
			h.t.Fatalf("decode result: %v", err)
		}
		r.Events, r.ClosedSession, r.Touched = h.last[i].Events, h.last[i].ClosedSession, h.last[i].Touched
		res[i] = r
	}
	return res
}

// cmd builds a session command with the next sequence number.
func (h *harness) cmd(session int64, op Op) *Command {
	h.now++
	c := &Command{Header: Header{Session: session, Conn: h.conn[session], Time: h.now, Auth: h.auth[session]}, Op: op}
	if session != 0 {
		switch op.(type) {
		case *CreateSession, *SetSessionOwner:
		default:
			h.seq[session]++
			c.Seq = h.seq[session]
		}
	}
	return c
}

func (h *harness) do(session int64, op Op) *Result {
	h.t.Helper()
	return h.update(h.cmd(session, op))[0]
}

func (h *harness) newSession(auth ...zkproto.Id) int64 {
	h.t.Helper()
	h.now++
	conn := uint64(h.index + 1000)
	r := h.update(&Command{Header: Header{Conn: conn, Time: h.now}, Op: &CreateSession{Timeout: 30000, Password: []byte("0123456789abcdef"), Owner: 1}})[0]
	if r.Err != zkproto.ErrOK || r.Session == 0 {
		h.t.Fatalf("create session: %+v", r)
	}
	h.conn[r.Session] = conn
	h.auth[r.Session] = append([]zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}}, auth...)
	return r.Session
}

func (h *harness) create(session int64, p string, data []byte, flags int32) *Result {
	h.t.Helper()
	return h.do(session, &Create{OpCode: zkproto.OpCreate2, Path: p, Data: data, ACL: open, Flags: flags})
}

func (h *harness) mustCreate(session int64, p string) string {
	h.t.Helper()
	r := h.create(session, p, []byte("x"), 0)
	if r.Err != zkproto.ErrOK {
		h.t.Fatalf("create %s: %v", p, r.Err)
	}
	return r.Path
}

func (h *harness) view() *View {
	h.t.Helper()
	v, err := h.s.View()
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(v.Close)
	return v
}

func (h *harness) stat(p string) zkproto.Stat {
	h.t.Helper()
	v := h.view()
	defer v.Close()
	st, err := v.Exists(p)
	if err != nil {
		h.t.Fatalf("exists %s: %v", p, err)
	}
	return st
}

func (h *harness) exists(p string) bool {
	v := h.view()
	defer v.Close()
	_, err := v.Exists(p)
	return err == nil
}

func wantErr(t testing.TB, what string, got, want zkproto.ErrCode) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: err %v (%d), want %v (%d)", what, got, got, want, want)
	}
}
