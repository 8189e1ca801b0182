package zkproto_test

// Golden vectors: frames recorded from a real ZooKeeper 3.8 by
// zkproto/internal/recorder (format in testdata/golden/README.md). Every
// frame must decode with zkproto, consume every byte, and re-encode to the
// identical bytes; a few facts of the protocol reference are checked on the
// decoded values.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// goldenFrame is one frame of a step, with what it decoded to.
type goldenFrame struct {
	kind  string // connect-client, connect-server, client, server
	raw   []byte // whole frame, length prefix included
	req   zkproto.RequestHeader
	reply zkproto.ReplyHeader
	body  zkproto.Record // nil when the frame has no body
	rest  []byte         // body bytes after the header
}

// goldenStep is one file of testdata/golden.
type goldenStep struct {
	file   string
	name   string // file name without the NNN- prefix and .txt: stable across re-recordings
	conn   string
	op     zkproto.OpCode
	hasOp  bool
	frames []*goldenFrame
	eof    bool
}

func readGoldenSteps(t *testing.T) []*goldenStep {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "[0-9][0-9][0-9]-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files in testdata/golden (record them with scripts/record-golden.sh)")
	}
	sort.Strings(files)
	var steps []*goldenStep
	for _, f := range files {
		steps = append(steps, parseGoldenFile(t, f))
	}
	return steps
}

func parseGoldenFile(t *testing.T, file string) *goldenStep {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(file)
	s := &goldenStep{file: base, name: strings.TrimSuffix(base[4:], ".txt")}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "conn":
			s.conn = val
		case "op":
			v, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				t.Fatalf("%s:%d: bad op %q", base, n, val)
			}
			s.op, s.hasOp = zkproto.OpCode(v), true
		case "connect-client", "connect-server", "client", "server":
			raw, err := hex.DecodeString(val)
			if err != nil {
				t.Fatalf("%s:%d: bad hex: %v", base, n, err)
			}
			if s.eof {
				t.Fatalf("%s:%d: frame after eof", base, n)
			}
			s.frames = append(s.frames, &goldenFrame{kind: key, raw: raw})
		case "eof":
			s.eof = true
		default:
			t.Fatalf("%s:%d: unknown line kind %q", base, n, key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// payload checks a frame's length prefix and returns what follows it.
func payload(raw []byte) ([]byte, error) {
	if len(raw) < 4 {
		return nil, fmt.Errorf("frame of %d bytes has no length prefix", len(raw))
	}
	n := int(int32(uint32(raw[0])<<24 | uint32(raw[1])<<16 | uint32(raw[2])<<8 | uint32(raw[3])))
	if n != len(raw)-4 {
		return nil, fmt.Errorf("length prefix %d, frame holds %d bytes", n, len(raw)-4)
	}
	return raw[4:], nil
}

// decodeFrame decodes f into its header and body records, requires every
// byte to be consumed, and re-encodes them to compare with the original.
func decodeFrame(s *goldenStep, f *goldenFrame) error {
	p, err := payload(f.raw)
	if err != nil {
		return err
	}
	d := zkproto.NewDecoder(p)
	var e zkproto.Encoder
	off := e.StartFrame()
	switch f.kind {
	case "connect-client":
		r := new(zkproto.ConnectRequest)
		if err := r.Decode(d); err != nil {
			return err
		}
		f.body = r
		r.Encode(&e)
	case "connect-server":
		r := new(zkproto.ConnectResponse)
		if err := r.Decode(d); err != nil {
			return err
		}
		f.body = r
		r.Encode(&e)
	case "client":
		if err := f.req.Decode(d); err != nil {
			return err
		}
		if !s.hasOp || f.req.Type != s.op {
			return fmt.Errorf("request type %d, but the step's op is %d", f.req.Type, s.op)
		}
		f.req.Encode(&e)
		f.rest = p[d.Offset():]
		if body, ok := zkproto.NewRequest(f.req.Type); ok {
			if err := body.Decode(d); err != nil {
				return fmt.Errorf("%T: %w", body, err)
			}
			f.body = body
			body.Encode(&e)
		}
	case "server":
		if err := f.reply.Decode(d); err != nil {
			return err
		}
		f.reply.Encode(&e)
		f.rest = p[d.Offset():]
		var body zkproto.Record
		switch {
		case f.reply.Xid == zkproto.XidNotification:
			body = new(zkproto.WatcherEvent)
		case f.reply.Err != zkproto.ErrOK:
			// A failed reply has no body (failed multis are err 0 with
			// a MultiResponse, so they take the next case).
		default:
			if !s.hasOp {
				return fmt.Errorf("reply xid %d in a step without a request", f.reply.Xid)
			}
			var ok bool
			if body, ok = zkproto.NewResponse(s.op); !ok {
				return fmt.Errorf("no response record for op %d", s.op)
			}
		}
		if body != nil {
			if err := body.Decode(d); err != nil {
				return fmt.Errorf("%T: %w", body, err)
			}
			f.body = body
			body.Encode(&e)
		}
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("%d bytes not consumed: %x", d.Remaining(), p[d.Offset():])
	}
	e.FinishFrame(off)
	if !bytes.Equal(e.Bytes(), f.raw) {
		return fmt.Errorf("re-encoded frame differs:\n got %x\nwant %x", e.Bytes(), f.raw)
	}
	return nil
}

// decodedGoldenSteps reads and decodes every step, failing on any frame
// that does not round-trip.
func decodedGoldenSteps(t *testing.T) map[string]*goldenStep {
	t.Helper()
	byName := map[string]*goldenStep{}
	for _, s := range readGoldenSteps(t) {
		for i, f := range s.frames {
			if err := decodeFrame(s, f); err != nil {
				t.Errorf("%s frame %d (%s): %v", s.file, i+1, f.kind, err)
			}
		}
		byName[s.name] = s
	}
	if t.Failed() {
		t.FailNow()
	}
	return byName
}

func TestGoldenRoundTrip(t *testing.T) {
	steps := readGoldenSteps(t)
	frames := 0
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			for i, f := range s.frames {
				frames++
				if err := decodeFrame(s, f); err != nil {
					t.Errorf("%s frame %d (%s): %v", s.file, i+1, f.kind, err)
				}
			}
			checkStepShape(t, s)
		})
	}
	t.Logf("%d steps, %d frames", len(steps), frames)
}

// checkStepShape checks the framing rules every step obeys: a handshake is
// one request and one response of matching form; a request is followed by
// notifications and then exactly one reply echoing its xid (pings: -2).
func checkStepShape(t *testing.T, s *goldenStep) {
	t.Helper()
	var kinds []string
	for _, f := range s.frames {
		kinds = append(kinds, f.kind)
	}
	switch {
	case len(s.frames) > 0 && s.frames[0].kind == "connect-client":
		if strings.Join(kinds, ",") != "connect-client,connect-server" {
			t.Fatalf("%s: handshake frames %v", s.file, kinds)
		}
		req := s.frames[0].body.(*zkproto.ConnectRequest)
		resp := s.frames[1].body.(*zkproto.ConnectResponse)
		if req.HasReadOnly != resp.HasReadOnly {
			t.Errorf("%s: request readOnly byte %v, response readOnly byte %v", s.file, req.HasReadOnly, resp.HasReadOnly)
		}
	case s.hasOp:
		if len(s.frames) == 0 || s.frames[0].kind != "client" {
			t.Fatalf("%s: a request step must start with its client frame: %v", s.file, kinds)
		}
		sent := s.frames[0].req.Xid
		replies := 0
		for _, f := range s.frames[1:] {
			if f.kind != "server" {
				t.Fatalf("%s: more than one client frame", s.file)
			}
			if f.reply.Xid == zkproto.XidNotification {
				if replies > 0 {
					t.Errorf("%s: notification after the reply in the same step", s.file)
				}
				continue
			}
			replies++
			want := sent
			if s.op == zkproto.OpPing {
				want = zkproto.XidPing
			}
			if f.reply.Xid != want {
				t.Errorf("%s: reply xid %d, want %d", s.file, f.reply.Xid, want)
			}
		}
		if replies != 1 && !(replies == 0 && s.eof) {
			t.Errorf("%s: %d replies", s.file, replies)
		}
	default:
		for _, f := range s.frames {
			if f.kind != "server" || f.reply.Xid != zkproto.XidNotification {
				t.Errorf("%s: a step without a request may only hold notifications, got %s xid %d", s.file, f.kind, f.reply.Xid)
			}
		}
	}
}

// step returns the named step ("<conn>-<name>", the file name without its number) or fails.
func step(t *testing.T, steps map[string]*goldenStep, key string) *goldenStep {
	t.Helper()
	s, ok := steps[key]
	if !ok {
		t.Fatalf("golden step %s missing (re-record with scripts/record-golden.sh)", key)
	}
	return s
}

// reply returns the step's reply frame (the one server frame that is not a notification).
func reply(t *testing.T, s *goldenStep) *goldenFrame {
	t.Helper()
	for _, f := range s.frames {
		if f.kind == "server" && f.reply.Xid != zkproto.XidNotification {
			return f
		}
	}
	t.Fatalf("%s: no reply", s.file)
	return nil
}

func events(s *goldenStep) []*zkproto.WatcherEvent {
	var out []*zkproto.WatcherEvent
	for _, f := range s.frames {
		if f.kind == "server" && f.reply.Xid == zkproto.XidNotification {
			out = append(out, f.body.(*zkproto.WatcherEvent))
		}
	}
	return out
}

func wantErr(t *testing.T, s *goldenStep, code zkproto.ErrCode) *goldenFrame {
	t.Helper()
	r := reply(t, s)
	if r.reply.Err != code {
		t.Errorf("%s: err %d, want %d", s.file, r.reply.Err, code)
	}
	if code != zkproto.ErrOK && len(r.rest) != 0 {
		t.Errorf("%s: error reply has a %d-byte body", s.file, len(r.rest))
	}
	return r
}

func TestGoldenHandshake(t *testing.T) {
	steps := decodedGoldenSteps(t)
	a := step(t, steps, "a-connect")
	if len(a.frames[0].raw) != 4+45 || len(a.frames[1].raw) != 4+37 {
		t.Errorf("readOnly form: %d/%d bytes, want 49/41", len(a.frames[0].raw), len(a.frames[1].raw))
	}
	b := step(t, steps, "b-connect")
	if len(b.frames[0].raw) != 4+44 || len(b.frames[1].raw) != 4+36 {
		t.Errorf("old form: %d/%d bytes, want 48/40", len(b.frames[0].raw), len(b.frames[1].raw))
	}
	// 100000 ms requested, clamped to maxSessionTimeout = 20 * tickTime 2000.
	if got := b.frames[1].body.(*zkproto.ConnectResponse).TimeOut; got != 40000 {
		t.Errorf("negotiated timeout %d, want 40000", got)
	}
	for _, s := range []*goldenStep{a, b} {
		r := s.frames[1].body.(*zkproto.ConnectResponse)
		if r.SessionID == 0 || len(r.Passwd) != zkproto.PasswordLength || r.ReadOnly {
			t.Errorf("%s: %+v", s.file, r)
		}
	}
}

func TestGoldenSemantics(t *testing.T) {
	steps := decodedGoldenSteps(t)

	t.Run("special nodes", func(t *testing.T) {
		root := wantErr(t, step(t, steps, "a-exists-root"), 0).body.(*zkproto.ExistsResponse).Stat
		if root.Cversion != -1 || root.NumChildren != 1 || root.Czxid != 0 || root.Pzxid != 0 {
			t.Errorf("/ stat %+v", root)
		}
		zk := wantErr(t, step(t, steps, "a-exists-zookeeper"), 0).body.(*zkproto.ExistsResponse).Stat
		if zk.Cversion != -2 || zk.NumChildren != 2 {
			t.Errorf("/zookeeper stat %+v", zk)
		}
		cfg := wantErr(t, step(t, steps, "a-getdata-config"), 0).body.(*zkproto.GetDataResponse)
		if cfg.Stat.Aversion != -1 {
			t.Errorf("/zookeeper/config aversion %d", cfg.Stat.Aversion)
		}
		n := wantErr(t, step(t, steps, "a-getallchildrennumber-root"), 0).body.(*zkproto.GetAllChildrenNumberResponse)
		if n.TotalNumber != 3 {
			t.Errorf("getAllChildrenNumber / = %d", n.TotalNumber)
		}
	})

	t.Run("null vs empty data", func(t *testing.T) {
		null := wantErr(t, step(t, steps, "a-getdata-null"), 0)
		if d := null.body.(*zkproto.GetDataResponse); d.Data != nil || d.Stat.DataLength != 0 {
			t.Errorf("null data decoded as %q (dataLength %d)", d.Data, d.Stat.DataLength)
		}
		if !bytes.HasPrefix(null.rest, []byte{0xff, 0xff, 0xff, 0xff}) {
			t.Errorf("null data not length -1 on the wire: %x", null.rest[:4])
		}
		empty := wantErr(t, step(t, steps, "a-getdata-empty"), 0)
		if d := empty.body.(*zkproto.GetDataResponse); d.Data == nil || len(d.Data) != 0 {
			t.Errorf("empty data decoded as %#v", d.Data)
		}
		if !bytes.HasPrefix(empty.rest, []byte{0, 0, 0, 0}) {
			t.Errorf("empty data not length 0 on the wire: %x", empty.rest[:4])
		}
	})

	t.Run("errors have no body and failed writes consume a zxid", func(t *testing.T) {
		created := wantErr(t, step(t, steps, "a-create"), 0)
		exists := wantErr(t, step(t, steps, "a-create-nodeexists"), zkproto.ErrNodeExists)
		if exists.reply.Zxid != created.reply.Zxid+1 {
			t.Errorf("failed create zxid %d after create zxid %d", exists.reply.Zxid, created.reply.Zxid)
		}
		wantErr(t, step(t, steps, "a-create-nonode"), zkproto.ErrNoNode)
		wantErr(t, step(t, steps, "a-exists-missing-watch"), zkproto.ErrNoNode)
		wantErr(t, step(t, steps, "a-setdata-badversion"), zkproto.ErrBadVersion)
		wantErr(t, step(t, steps, "a-delete-notempty"), zkproto.ErrNotEmpty)
		wantErr(t, step(t, steps, "a-delete-root"), zkproto.ErrBadArguments)
		wantErr(t, step(t, steps, "a-removewatches-nowatcher"), zkproto.ErrNoWatcher)
		wantErr(t, step(t, steps, "a-create-child-of-ephemeral"), zkproto.ErrNoChildrenForEphemerals)
		wantErr(t, step(t, steps, "a-multi-mixed"), zkproto.ErrMarshallingError)
		// 3.8 reads a deleteContainer path from the whole request buffer,
		// header included, so a client's deleteContainer is always invalid.
		wantErr(t, step(t, steps, "a-deletecontainer"), zkproto.ErrBadArguments)
	})

	t.Run("sequential create", func(t *testing.T) {
		r := wantErr(t, step(t, steps, "a-create-sequential"), 0).body.(*zkproto.CreateResponse)
		if !strings.HasPrefix(r.Path, "/golden/seq-") || len(r.Path) != len("/golden/seq-")+10 {
			t.Errorf("sequential path %q", r.Path)
		}
	})

	t.Run("multi", func(t *testing.T) {
		// 3.8 reports a create2 op of a multi as a plain create result
		// (type 1, path only), but createContainer and createTTL as type 15.
		ok := wantErr(t, step(t, steps, "a-multi-ok"), 0).body.(*zkproto.MultiResponse)
		wantTypes := []zkproto.OpCode{zkproto.OpCreate, zkproto.OpCreate, zkproto.OpSetData, zkproto.OpCheck, zkproto.OpDelete}
		if got := resultTypes(ok); fmt.Sprint(got) != fmt.Sprint(wantTypes) {
			t.Errorf("multi result types %v, want %v", got, wantTypes)
		}
		mixed := wantErr(t, step(t, steps, "a-multi-container-ttl"), 0).body.(*zkproto.MultiResponse)
		wantTypes = []zkproto.OpCode{zkproto.OpCreate2, zkproto.OpCreate2, zkproto.OpCreate, zkproto.OpCreate}
		if got := resultTypes(mixed); fmt.Sprint(got) != fmt.Sprint(wantTypes) {
			t.Errorf("container/TTL multi result types %v, want %v", got, wantTypes)
		}
		if len(mixed.Results) == 4 {
			// Two sequential creates in one multi get consecutive numbers.
			p1 := mixed.Results[2].Response.(*zkproto.CreateResponse).Path
			p2 := mixed.Results[3].Response.(*zkproto.CreateResponse).Path
			n1, err1 := strconv.Atoi(strings.TrimPrefix(p1, "/golden/n-"))
			n2, err2 := strconv.Atoi(strings.TrimPrefix(p2, "/golden/n-"))
			if err1 != nil || err2 != nil || n2 != n1+1 || len(p1) != len("/golden/n-")+10 {
				t.Errorf("sequential creates in one multi: %s, %s", p1, p2)
			}
		}

		// A failed multi is still ReplyHeader.err 0.
		failed := wantErr(t, step(t, steps, "a-multi-failed"), 0).body.(*zkproto.MultiResponse)
		wantErrs := []zkproto.ErrCode{0, zkproto.ErrBadVersion, zkproto.ErrRuntimeInconsistency}
		if len(failed.Results) != len(wantErrs) {
			t.Fatalf("failed multi: %d results", len(failed.Results))
		}
		for i, res := range failed.Results {
			body := res.Response.(*zkproto.ErrorResponse)
			if res.Type != zkproto.OpError || res.Err != wantErrs[i] || body.Err != wantErrs[i] {
				t.Errorf("failed multi result %d: type %d err %d body %d, want -1 %d", i, res.Type, res.Err, body.Err, wantErrs[i])
			}
		}
		if failed.FirstError() != zkproto.ErrBadVersion {
			t.Errorf("FirstError %d", failed.FirstError())
		}

		empty := wantErr(t, step(t, steps, "a-multi-empty"), 0)
		if want := []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff}; !bytes.Equal(empty.rest, want) {
			t.Errorf("empty multi body %x", empty.rest)
		}

		read := wantErr(t, step(t, steps, "a-multiread-partial"), 0).body.(*zkproto.MultiResponse)
		wantTypes = []zkproto.OpCode{zkproto.OpGetData, zkproto.OpGetChildren, zkproto.OpError}
		if got := resultTypes(read); fmt.Sprint(got) != fmt.Sprint(wantTypes) {
			t.Errorf("multiRead result types %v, want %v", got, wantTypes)
		} else if read.Results[2].Err != zkproto.ErrNoNode {
			t.Errorf("multiRead third result err %d", read.Results[2].Err)
		}
	})

	t.Run("ping", func(t *testing.T) {
		for _, key := range []string{"a-ping", "b-ping-xid5"} {
			r := wantErr(t, step(t, steps, key), 0)
			if r.reply.Xid != zkproto.XidPing || len(r.rest) != 0 {
				t.Errorf("%s: ping reply xid %d, %d body bytes", key, r.reply.Xid, len(r.rest))
			}
		}
	})

	t.Run("auth and acl", func(t *testing.T) {
		r := wantErr(t, step(t, steps, "a-auth-digest"), 0)
		if r.reply.Xid != zkproto.XidAuth || r.reply.Zxid != 0 {
			t.Errorf("auth reply %+v", r.reply)
		}
		if r := wantErr(t, step(t, steps, "b-auth-digest-normal-xid"), 0); r.reply.Zxid != 0 {
			t.Errorf("auth reply zxid %d", r.reply.Zxid)
		}
		who := wantErr(t, step(t, steps, "a-whoami"), 0).body.(*zkproto.WhoAmIResponse)
		if fmt.Sprint(who.ClientInfo) != "[{digest alice} {ip 127.0.0.1}]" {
			t.Errorf("whoAmI %v", who.ClientInfo)
		}
		full := wantErr(t, step(t, steps, "a-getacl-admin"), 0).body.(*zkproto.GetACLResponse)
		masked := wantErr(t, step(t, steps, "b-getacl-masked"), 0).body.(*zkproto.GetACLResponse)
		if len(full.ACL) != 2 || len(masked.ACL) != 2 {
			t.Fatalf("ACLs %v / %v", full.ACL, masked.ACL)
		}
		if full.ACL[1].ID.ID != "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=" || masked.ACL[1].ID.ID != "alice:x" {
			t.Errorf("digest id %q unmasked, %q masked", full.ACL[1].ID.ID, masked.ACL[1].ID.ID)
		}
		expanded := wantErr(t, step(t, steps, "a-getacl-auth-expanded"), 0).body.(*zkproto.GetACLResponse)
		if fmt.Sprint(expanded.ACL) != "[{31 {digest alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=}}]" {
			t.Errorf("auth: ACL expanded to %v", expanded.ACL)
		}
		set := wantErr(t, step(t, steps, "a-setacl"), 0).body.(*zkproto.SetACLResponse)
		if set.Stat.Aversion != 1 || set.Stat.Version != 0 {
			t.Errorf("setACL stat %+v", set.Stat)
		}
		wantErr(t, step(t, steps, "f-auth-unknown-scheme"), zkproto.ErrAuthFailed)
	})

	t.Run("watches", func(t *testing.T) {
		// 3.8 notifications: ReplyHeader (xid -1, zxid -1, err 0), state SyncConnected.
		for _, s := range steps {
			for _, f := range s.frames {
				if f.kind != "server" || f.reply.Xid != zkproto.XidNotification {
					continue
				}
				ev := f.body.(*zkproto.WatcherEvent)
				if f.reply.Zxid != -1 || f.reply.Err != 0 || ev.State != zkproto.StateSyncConnected {
					t.Errorf("%s: notification %+v %+v", s.file, f.reply, ev)
				}
			}
		}
		// Our own watch fires before our own write's reply.
		if ev := events(step(t, steps, "a-create")); len(ev) != 1 || ev[0].Type != zkproto.EventNodeCreated || ev[0].Path != "/golden" {
			t.Errorf("events before create reply: %v", ev)
		}
		add := wantErr(t, step(t, steps, "a-addwatch-recursive"), 0)
		if !bytes.Equal(add.rest, []byte{0, 0, 0, 0}) || add.body.(*zkproto.ErrorResponse).Err != 0 {
			t.Errorf("addWatch body %x", add.rest)
		}
		rec := events(step(t, steps, "a-events-recursive"))
		if got := eventString(rec); got != "NodeCreated /golden/rec, NodeCreated /golden/rec/x, NodeDataChanged /golden/rec/x, NodeDeleted /golden/rec/x" {
			t.Errorf("recursive watch events: %s", got)
		}
		sw := step(t, steps, "c-setwatches")
		if r := wantErr(t, sw, 0); r.reply.Xid != zkproto.XidSetWatches || len(r.rest) != 0 {
			t.Errorf("setWatches reply %+v, %d body bytes", r.reply, len(r.rest))
		}
		if got := len(events(sw)); got != 5 {
			t.Errorf("setWatches catch-up events: %d, want 5", got)
		}
		if got := eventString(events(step(t, steps, "c-setwatches2"))); got != "NodeDeleted /golden/gone3" {
			t.Errorf("setWatches2 catch-up events: %s", got)
		}
	})

	t.Run("connection closes", func(t *testing.T) {
		u := step(t, steps, "u-unknown-opcode")
		if r := wantErr(t, u, zkproto.ErrUnimplemented); r.reply.Zxid != -1 || !u.eof {
			t.Errorf("unknown opcode: zxid %d, eof %v", r.reply.Zxid, u.eof)
		}
		for _, key := range []string{"a-closesession", "e-closesession", "f-auth-unknown-scheme"} {
			if s := step(t, steps, key); !s.eof {
				t.Errorf("%s: server did not close the connection", key)
			}
		}
	})
}

func resultTypes(m *zkproto.MultiResponse) []zkproto.OpCode {
	var out []zkproto.OpCode
	for _, r := range m.Results {
		out = append(out, r.Type)
	}
	return out
}

func eventString(evs []*zkproto.WatcherEvent) string {
	var parts []string
	for _, e := range evs {
		parts = append(parts, e.Type.String()+" "+e.Path)
	}
	return strings.Join(parts, ", ")
}

// TestGoldenOpcodeCoverage requires every client opcode zkproto knows to
// appear in at least one recorded client frame.
func TestGoldenOpcodeCoverage(t *testing.T) {
	steps := decodedGoldenSteps(t)
	seen := map[zkproto.OpCode]bool{}
	for _, s := range steps {
		for _, f := range s.frames {
			switch f.kind {
			case "connect-client":
				// The handshake is the createSession request.
				seen[zkproto.OpCreateSession] = true
			case "client":
				seen[f.req.Type] = true
				if m, ok := f.body.(*zkproto.MultiRequest); ok {
					for _, op := range m.Ops {
						seen[op.Type] = true
					}
				}
			}
		}
	}
	// Opcodes no client frame carries, and why.
	notSendable := map[zkproto.OpCode]string{
		zkproto.OpNotify: "never sent by clients (Request.isValid is false)",
		zkproto.OpError:  "a txn and multi-result type, not a request",
	}
	// check (13) is covered inside multi frames only: standalone, ZooKeeper
	// ≤3.8.4 never answers it (NPE), so the recorder does not send it.
	for op := zkproto.OpCode(-20); op <= 200; op++ {
		if _, skip := notSendable[op]; skip || !op.Known() {
			continue
		}
		if !seen[op] {
			t.Errorf("opcode %d (%s) appears in no golden client frame", op, op)
		}
	}
}
