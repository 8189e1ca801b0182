package stagetrace

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

// Env turns the tracing on at start when set to 1.
const Env = "ZKBRIDGE_WRITE_STAGES"

var on atomic.Bool

func init() { on.Store(os.Getenv(Env) == "1") }

// On reports whether stages are recorded. Every probe checks it first.
func On() bool { return on.Load() }

// SetOn turns recording on or off (tests; the environment variable
// otherwise).
func SetOn(v bool) { on.Store(v) }

// Kinds of node events.
const (
	// Save: a Raft log save with new entries (T..T2: the write and its
	// fsync); Index is the last entry saved.
	Save = "save"
	// SaveState: a Raft log save of the state alone (T..T2), Commit its
	// commit index.
	SaveState = "state"
	// Apply: a state machine update (T..T2); Index is its last entry.
	Apply = "apply"
	// Send: a Raft message handed to the peer transport; Recv: one
	// delivered by it to the Raft engine.
	Send = "send"
	Recv = "recv"
)

// Event is one record of the replicated core (data shard only).
type Event struct {
	Kind string `json:"k"`
	T    int64  `json:"t"`
	T2   int64  `json:"t2,omitempty"`
	// Msg is the Raft message type (Send, Recv), e.g. "Replicate".
	Msg string `json:"m,omitempty"`
	// Peer is the replica the message went to or came from.
	Peer uint64 `json:"p,omitempty"`
	// Index: the last entry saved or applied; for a message, its last
	// entry, else its LogIndex.
	Index uint64 `json:"i,omitempty"`
	// Commit is a message's commit index.
	Commit uint64 `json:"c,omitempty"`
	// N is the number of entries a message carries.
	N int `json:"n,omitempty"`
}

// Request is one write as the ZooKeeper door saw it, on the node the
// client is connected to. Index is its Raft entry (from its result).
type Request struct {
	Index    uint64 `json:"i"`
	Read     int64  `json:"read"`     // the frame was read off the socket
	Decoded  int64  `json:"decoded"`  // decoded, about to be proposed
	Proposed int64  `json:"proposed"` // handed to the Raft engine
	Result   int64  `json:"result"`   // its result reached the door
	Queued   int64  `json:"queued"`   // its reply queued for the writer
	Written  int64  `json:"written"`  // the reply's write returned
}

// ringSize bounds each ring: at one write in flight a node records about
// ten events per write, so the events ring holds the last 25,000 or so.
const ringSize = 1 << 18

type ring[T any] struct {
	mu   sync.Mutex
	buf  []T
	next int
	full bool
}

func (r *ring[T]) add(v T) {
	r.mu.Lock()
	if r.buf == nil {
		r.buf = make([]T, ringSize)
	}
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// snapshot returns the records oldest first.
func (r *ring[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]T(nil), r.buf[:r.next]...)
	}
	out := append([]T(nil), r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

func (r *ring[T]) reset() {
	r.mu.Lock()
	r.next, r.full = 0, false
	r.mu.Unlock()
}

var (
	events   ring[Event]
	requests ring[Request]
	replica  atomic.Uint64
)

// SetReplica names this process's replica id in its dump.
func SetReplica(id uint64) { replica.Store(id) }

// AddEvent records e (when on).
func AddEvent(e Event) {
	if On() {
		events.add(e)
	}
}

// AddRequest records r (when on).
func AddRequest(r Request) {
	if On() {
		requests.add(r)
	}
}

// Dump is what one node recorded.
type Dump struct {
	Replica  uint64    `json:"replica"`
	On       bool      `json:"on"`
	Now      int64     `json:"now"`
	Events   []Event   `json:"events"`
	Requests []Request `json:"requests"`
}

// Snapshot returns what this process recorded so far.
func Snapshot() Dump {
	return Dump{Replica: replica.Load(), On: On(), Now: Now(), Events: events.snapshot(), Requests: requests.snapshot()}
}

// Reset forgets what was recorded.
func Reset() {
	events.reset()
	requests.reset()
}

// Handler serves Snapshot as JSON; ?reset=1 clears the rings instead.
func Handler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("reset") == "1" {
		Reset()
		_ = json.NewEncoder(w).Encode(map[string]any{"reset": true, "on": On(), "now": Now()})
		return
	}
	_ = json.NewEncoder(w).Encode(Snapshot())
}
