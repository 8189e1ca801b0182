package compattests

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Transcript records a scenario as text lines, normalising what two
// servers legitimately disagree on: zxids become ranks in order of first
// appearance (z1, z2, …), session ids become s1, s2, …, and timestamps
// become T (a non-zero time within the scenario's window) or 0. Everything
// else — error codes, data, names, versions, counters, event order — is
// compared as is.
//
// A tolerant transcript is for a server other clients write to (another
// scenario of a parallel run, an application): a read's reply carries the
// server's last zxid, which may then be another client's transaction. Only
// the scenario's own transactions (the zxid of a write's reply, of a stat,
// of an event) get ranks; the zxid a read answers with is written as the
// rank of the latest own transaction at or before it. A stale read still
// shows (an earlier rank); a read that merely follows others' writes does
// not.
type Transcript struct {
	mu       sync.Mutex
	lines    []string
	zxids    map[int64]string
	sessions map[int64]string
	start    time.Time
	tolerant bool
	client   string // the client's address as the server sees it (whoAmI's ip id)
}

// obsMark brackets a read's zxid in a tolerant transcript until Lines
// names it by the own transaction at or before it.
const obsMark = "\x00"

// NewTranscript starts an empty transcript.
func NewTranscript() *Transcript {
	return &Transcript{zxids: map[int64]string{}, sessions: map[int64]string{}, start: time.Now()}
}

// Lines returns the recorded lines.
func (t *Transcript) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tolerant {
		return append([]string(nil), t.lines...)
	}
	own := make([]int64, 0, len(t.zxids))
	for z := range t.zxids {
		own = append(own, z)
	}
	sort.Slice(own, func(i, j int) bool { return own[i] < own[j] })
	out := make([]string, len(t.lines))
	for i, l := range t.lines {
		out[i] = obsRe.ReplaceAllStringFunc(l, func(m string) string {
			z, _ := strconv.ParseInt(strings.Trim(m, obsMark), 16, 64)
			k := sort.Search(len(own), func(i int) bool { return own[i] > z })
			if k == 0 {
				return "z0"
			}
			return t.zxids[own[k-1]]
		})
	}
	return out
}

var obsRe = regexp.MustCompile(obsMark + "[0-9a-f]+" + obsMark)

// SetClient names the client's address as the servers see it (whoAmI's ip
// identity): it is recorded as <client>.
func (t *Transcript) SetClient(ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.client = ip
}

// Tolerant makes the transcript tolerant of other clients' transactions
// (see Transcript); call it before anything is recorded.
func (t *Transcript) Tolerant() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tolerant = true
}

// ReadZxid returns the normalised form of a zxid a read answered with
// (the server's last zxid, not a transaction of the scenario's own).
func (t *Transcript) ReadZxid(z int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readZxidLocked(z)
}

func (t *Transcript) readZxidLocked(z int64) string {
	if !t.tolerant || z <= 0 {
		return t.zxidLocked(z)
	}
	return fmt.Sprintf("%s%x%s", obsMark, z, obsMark)
}

// Logf appends a free-form line (already normalised by the caller).
func (t *Transcript) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// Zxid returns the normalised form of a zxid.
func (t *Transcript) Zxid(z int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.zxidLocked(z)
}

func (t *Transcript) zxidLocked(z int64) string {
	if z <= 0 {
		return fmt.Sprint(z)
	}
	if r, ok := t.zxids[z]; ok {
		return r
	}
	r := fmt.Sprintf("z%d", len(t.zxids)+1)
	t.zxids[z] = r
	return r
}

// Session returns the normalised form of a session id.
func (t *Transcript) Session(id int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionLocked(id)
}

func (t *Transcript) sessionLocked(id int64) string {
	if id == 0 {
		return "0"
	}
	if r, ok := t.sessions[id]; ok {
		return r
	}
	r := fmt.Sprintf("s%d", len(t.sessions)+1)
	t.sessions[id] = r
	return r
}

func (t *Transcript) timeLocked(ms int64) string {
	if ms == 0 {
		return "0"
	}
	lo, hi := t.start.Add(-2*time.Second).UnixMilli(), time.Now().Add(2*time.Second).UnixMilli()
	if ms >= lo && ms <= hi {
		return "T"
	}
	return fmt.Sprintf("time?%d", ms)
}

func (t *Transcript) statLocked(s *zkproto.Stat) string {
	return fmt.Sprintf("{cz=%s mz=%s pz=%s ct=%s mt=%s v=%d cv=%d av=%d eo=%s dl=%d nc=%d}",
		t.zxidLocked(s.Czxid), t.zxidLocked(s.Mzxid), t.zxidLocked(s.Pzxid), t.timeLocked(s.Ctime), t.timeLocked(s.Mtime),
		s.Version, s.Cversion, s.Aversion, t.sessionLocked(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// Stat formats a stat normalised.
func (t *Transcript) Stat(s *zkproto.Stat) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statLocked(s)
}

func (t *Transcript) event(client string, h zkproto.ReplyHeader, ev zkproto.WatcherEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf("%s ! %s %s state=%d zxid=%s", client, ev.Type, ev.Path, ev.State, t.zxidLocked(h.Zxid)))
}

// request records what a client sent.
func (t *Transcript) request(client string, op zkproto.OpCode, req zkproto.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf("%s > %s %s", client, op, t.recordLocked(req)))
}

// reply records what a client received.
func (t *Transcript) reply(client string, r *Reply) {
	t.mu.Lock()
	defer t.mu.Unlock()
	zxid := t.zxidLocked
	if !writes(r.Op) {
		zxid = t.readZxidLocked
	}
	line := fmt.Sprintf("%s < %s zxid=%s", client, r.Header.Err.Name(), zxid(r.Header.Zxid))
	if r.Body != nil {
		line += " " + t.recordLocked(r.Body)
	}
	t.lines = append(t.lines, line)
}

// writes reports whether op's reply carries the zxid of the transaction
// it made (a failed write is an error transaction, with its own zxid);
// other replies carry the server's last zxid.
func writes(op zkproto.OpCode) bool {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpDeleteContainer, zkproto.OpSetData, zkproto.OpSetACL,
		zkproto.OpMulti, zkproto.OpReconfig, zkproto.OpCloseSession:
		return true
	}
	return false
}

func data(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 64:
		return fmt.Sprintf("<%d bytes sha256:%x>", len(b), sha256.Sum256(b))
	}
	return fmt.Sprintf("%q", b)
}

func acls(a []zkproto.ACL) string {
	if a == nil {
		return "null"
	}
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = fmt.Sprintf("%d:%s:%s", x.Perms, x.ID.Scheme, x.ID.ID)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// sorted returns names sorted: ZooKeeper does not order children.
func sorted(names []string) string {
	if names == nil {
		return "null"
	}
	s := append([]string(nil), names...)
	sort.Strings(s)
	return "[" + strings.Join(s, ",") + "]"
}

func (t *Transcript) recordLocked(r zkproto.Record) string {
	switch v := r.(type) {
	case nil:
		return ""
	case *zkproto.CreateRequest:
		return fmt.Sprintf("%s data=%s acl=%s flags=%d", v.Path, data(v.Data), acls(v.ACL), v.Flags)
	case *zkproto.CreateTTLRequest:
		return fmt.Sprintf("%s data=%s acl=%s flags=%d ttl=%d", v.Path, data(v.Data), acls(v.ACL), v.Flags, v.TTL)
	case *zkproto.DeleteRequest:
		return fmt.Sprintf("%s version=%d", v.Path, v.Version)
	case *zkproto.SetDataRequest:
		return fmt.Sprintf("%s data=%s version=%d", v.Path, data(v.Data), v.Version)
	case *zkproto.SetACLRequest:
		return fmt.Sprintf("%s acl=%s version=%d", v.Path, acls(v.ACL), v.Version)
	case *zkproto.GetDataRequest:
		return fmt.Sprintf("%s watch=%v", v.Path, v.Watch)
	case *zkproto.ExistsRequest:
		return fmt.Sprintf("%s watch=%v", v.Path, v.Watch)
	case *zkproto.GetChildrenRequest:
		return fmt.Sprintf("%s watch=%v", v.Path, v.Watch)
	case *zkproto.GetChildren2Request:
		return fmt.Sprintf("%s watch=%v", v.Path, v.Watch)
	case *zkproto.CheckVersionRequest:
		return fmt.Sprintf("%s version=%d", v.Path, v.Version)
	case *zkproto.AuthPacket:
		return fmt.Sprintf("%s %q", v.Scheme, v.Auth)
	case *zkproto.AddWatchRequest:
		return fmt.Sprintf("%s mode=%d", v.Path, v.Mode)
	case *zkproto.CheckWatchesRequest:
		return fmt.Sprintf("%s type=%d", v.Path, v.Type)
	case *zkproto.RemoveWatchesRequest:
		return fmt.Sprintf("%s type=%d", v.Path, v.Type)
	case *zkproto.SetWatches:
		// The relative zxid is the last one the client saw: a read's, perhaps.
		return fmt.Sprintf("rel=%s data=%v exist=%v child=%v", t.readZxidLocked(v.RelativeZxid), v.DataWatches, v.ExistWatches, v.ChildWatches)
	case *zkproto.SetWatches2:
		return fmt.Sprintf("rel=%s data=%v exist=%v child=%v persistent=%v recursive=%v", t.readZxidLocked(v.RelativeZxid),
			v.DataWatches, v.ExistWatches, v.ChildWatches, v.PersistentWatches, v.PersistentRecursiveWatches)
	case *zkproto.MultiRequest:
		parts := make([]string, len(v.Ops))
		for i, op := range v.Ops {
			parts[i] = op.Type.String() + " " + t.recordLocked(op.Request)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case *zkproto.CreateResponse:
		return "path=" + v.Path
	case *zkproto.Create2Response:
		return "path=" + v.Path + " stat=" + t.statLocked(&v.Stat)
	case *zkproto.ExistsResponse:
		return "stat=" + t.statLocked(&v.Stat)
	case *zkproto.SetDataResponse:
		return "stat=" + t.statLocked(&v.Stat)
	case *zkproto.SetACLResponse:
		return "stat=" + t.statLocked(&v.Stat)
	case *zkproto.GetDataResponse:
		return "data=" + data(v.Data) + " stat=" + t.statLocked(&v.Stat)
	case *zkproto.GetChildrenResponse:
		return "children=" + sorted(v.Children)
	case *zkproto.GetChildren2Response:
		return "children=" + sorted(v.Children) + " stat=" + t.statLocked(&v.Stat)
	case *zkproto.GetACLResponse:
		return "acl=" + acls(v.ACL) + " stat=" + t.statLocked(&v.Stat)
	case *zkproto.GetAllChildrenNumberResponse:
		return fmt.Sprintf("total=%d", v.TotalNumber)
	case *zkproto.GetEphemeralsResponse:
		return "ephemerals=" + sorted(v.Ephemerals)
	case *zkproto.WhoAmIResponse:
		parts := make([]string, len(v.ClientInfo))
		for i, ci := range v.ClientInfo {
			parts[i] = ci.AuthScheme + ":" + ci.User
			if ci.AuthScheme == "ip" && ci.User == t.client && t.client != "" {
				// The client's own address differs between servers on
				// different machines.
				parts[i] = "ip:<client>"
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *zkproto.SyncResponse:
		return "path=" + v.Path
	case *zkproto.ErrorResponse:
		return "err=" + v.Err.Name()
	case *zkproto.MultiResponse:
		parts := make([]string, len(v.Results))
		for i, res := range v.Results {
			parts[i] = fmt.Sprintf("%s/%s", res.Type, res.Err.Name())
			if res.Response != nil {
				if _, isErr := res.Response.(*zkproto.ErrorResponse); !isErr {
					parts[i] += " " + t.recordLocked(res.Response)
				}
			}
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case *zkproto.GetEphemeralsRequest:
		return v.PrefixPath
	case *zkproto.GetAllChildrenNumberRequest:
		return v.Path
	case *zkproto.GetACLRequest:
		return v.Path
	case *zkproto.SyncRequest:
		return v.Path
	case *zkproto.DeleteContainerRequest:
		return v.Path
	case *zkproto.Empty:
		return ""
	}
	return fmt.Sprintf("%+v", r)
}
