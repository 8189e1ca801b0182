package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

var openACL = zk.WorldACL(zk.PermAll)

// sessionTimeout of the workload clients: go-zookeeper gives up on a
// silent server after two thirds of it and moves to another address.
const sessionTimeout = 4 * time.Second

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// client is one workload client: a go-zookeeper session over every
// address, replaced when it expires.
type client struct {
	id    int
	addrs []string
	conn  *zk.Conn
}

func dialClient(id int, addrs []string) (*client, error) {
	c := &client{id: id, addrs: addrs}
	return c, c.redial()
}

func (c *client) redial() error {
	if c.conn != nil {
		c.conn.Close()
	}
	// Rotated so clients start on different nodes (go-zookeeper shuffles
	// too; this makes it independent of that).
	addrs := append(append([]string(nil), c.addrs[c.id%len(c.addrs):]...), c.addrs[:c.id%len(c.addrs)]...)
	conn, ev, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				id, sid := c.id, conn.SessionID()
				go func() {
					for e := range ev {
						if e.State == zk.StateExpired {
							expiries.add(id, sid)
						}
					}
				}()
				c.conn = conn
				return nil
			}
		case <-deadline:
			conn.Close()
			return fmt.Errorf("client %d: no session within 30 s", c.id)
		}
	}
}

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
	}
}

// expiries records the sessions of workload clients that expired during a
// run (Run resets it): under a nemesis that leaves every node reachable
// none may (SessionsSurvive).
var expiries expiryLog

type expiryLog struct {
	mu  sync.Mutex
	got []sessionExpiry
}

type sessionExpiry struct {
	client  int
	session int64
	at      time.Time
}

func (l *expiryLog) add(client int, session int64) {
	l.mu.Lock()
	l.got = append(l.got, sessionExpiry{client: client, session: session, at: time.Now()})
	l.mu.Unlock()
}

func (l *expiryLog) reset() { l.take() }

func (l *expiryLog) take() []sessionExpiry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// classify turns a write's error into its outcome.
func classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
		return Failed
	case errors.Is(err, zk.ErrNoServer):
		// go-zookeeper fails a request with ErrNoServer only while it
		// is still queued, unsent, after a round of every address found
		// no server: it cannot have been applied.
		return Failed
	}
	return Unknown
}

// afterError reconnects a client whose session expired and pauses briefly
// so a disconnected client does not spin.
func (c *client) afterError(err error) {
	if errors.Is(err, zk.ErrSessionExpired) {
		_ = c.redial()
	}
	time.Sleep(5 * time.Millisecond)
}

// historyChecker is a workload whose history is checked offline, after
// the cluster stopped (porcupine's search competes with it for the CPU).
type historyChecker interface {
	CheckHistory(h *History, artifacts string) []string
}

// Workload drives clients until stop closes, then checks the result.
type Workload interface {
	Name() string
	Setup(c *zk.Conn) error
	Run(c *client, h *History, stop <-chan struct{})
	// Check reads the final state and returns the violations found.
	Check(c *zk.Conn, h *History, artifacts string) []string
}

// registers: a few keys, each a linearizable register with versions.
type registers struct{ keys int }

func (registers) Name() string { return "register" }

func (r registers) key(i int) string { return fmt.Sprintf("/reg%d", i) }

func (r registers) Setup(c *zk.Conn) error {
	for i := 0; i < r.keys; i++ {
		if _, err := c.Create(r.key(i), []byte("0"), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

func (r registers) Run(c *client, h *History, stop <-chan struct{}) {
	seq := int64(0)
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := r.key(rand.IntN(r.keys))
		seq++
		value := int64(c.id)*1_000_000 + seq
		op := Op{Client: c.id, Workload: r.Name(), Key: key, Call: time.Now()}
		var err error
		switch rand.IntN(3) {
		case 0: // synced read: up to date as of the sync's call
			op.Kind = "read"
			if _, err = c.conn.Sync(key); err == nil {
				var data []byte
				var st *zk.Stat
				data, st, err = c.conn.Get(key)
				if err == nil {
					op.OutValue, _ = strconv.ParseInt(string(data), 10, 64)
					op.Version = st.Version
				}
			}
			op.Return = time.Now()
			if err != nil {
				c.afterError(err)
				continue // a failed read tells nothing
			}
			op.Outcome = OK
		case 1:
			op.Kind, op.Value = "write", value
			var st *zk.Stat
			st, err = c.conn.Set(key, []byte(strconv.FormatInt(value, 10)), -1)
			op.Return, op.Outcome = time.Now(), classify(err)
			if err == nil {
				op.Version = st.Version
			}
		case 2:
			op.Kind, op.Value = "cas", value
			_, st, gerr := c.conn.Get(key)
			if gerr != nil {
				c.afterError(gerr)
				continue
			}
			op.Expect = st.Version
			op.Call = time.Now()
			st, err = c.conn.Set(key, []byte(strconv.FormatInt(value, 10)), op.Expect)
			op.Return, op.Outcome = time.Now(), classify(err)
			if err == nil {
				op.Version = st.Version
			}
		}
		op.Server = c.conn.Server()
		if err != nil {
			op.Err = err.Error()
		}
		if errors.Is(err, zk.ErrNoServer) {
			// Never sent (while no server could be reached, as in a
			// power cycle): it tells nothing about the register, and
			// as a write of unknown outcome it would stay open to the
			// end of the history and swell porcupine's search.
			c.afterError(err)
			continue
		}
		h.Add(op)
		if err != nil {
			c.afterError(err)
		}
	}
}

// Check has no final state to read: the history is all (CheckHistory).
func (registers) Check(*zk.Conn, *History, string) []string { return nil }

// CheckHistory runs porcupine over the register history.
func (r registers) CheckHistory(h *History, artifacts string) []string {
	return checkRegisters(h.Ops(r.Name()), artifacts)
}

// set: sequential creates, each client's data naming itself and a number.
type set struct{}

func (set) Name() string { return "set" }

func (set) Setup(c *zk.Conn) error {
	if _, err := c.Create("/set", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

func (s set) Run(c *client, h *History, stop <-chan struct{}) {
	for n := int64(0); ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		op := Op{Client: c.id, Workload: s.Name(), Kind: "create", Value: n, Call: time.Now()}
		path, err := c.conn.Create(fmt.Sprintf("/set/c%d-", c.id), []byte(fmt.Sprintf("%d/%d", c.id, n)), zk.FlagSequence, openACL)
		op.Return, op.Outcome, op.Path = time.Now(), classify(err), path
		op.Server = c.conn.Server()
		h.Add(op)
		if err != nil {
			c.afterError(err)
		}
	}
}

func (s set) Check(c *zk.Conn, h *History, _ string) []string {
	var out []string
	kids, _, err := c.Children("/set")
	if err != nil {
		return []string{fmt.Sprintf("set: list /set: %v", err)}
	}
	present := map[string]string{} // data -> path
	for _, k := range kids {
		data, _, err := c.Get("/set/" + k)
		if err != nil {
			return []string{fmt.Sprintf("set: read /set/%s: %v", k, err)}
		}
		if p, dup := present[string(data)]; dup {
			out = append(out, fmt.Sprintf("set: %q created twice (%s and %s)", data, p, k))
		}
		present[string(data)] = k
	}
	lastSeq := map[int]int64{}
	ops := h.Ops(s.Name())
	for _, op := range ops {
		if op.Outcome != OK {
			continue
		}
		key := fmt.Sprintf("%d/%d", op.Client, op.Value)
		if _, ok := present[key]; !ok {
			out = append(out, fmt.Sprintf("set: acknowledged create %s (%s) is lost", key, op.Path))
		}
		// Primary order: a client's later create has a larger sequence.
		i := strings.LastIndex(op.Path, "-")
		seq, _ := strconv.ParseInt(op.Path[i+1:], 10, 64)
		if prev, ok := lastSeq[op.Client]; ok && seq <= prev {
			out = append(out, fmt.Sprintf("set: client %d's create %d got sequence %d after %d", op.Client, op.Value, seq, prev))
		}
		lastSeq[op.Client] = seq
	}
	return out
}

// counter: compare-and-set increments of /counter (Curator's
// DistributedAtomicLong format: an 8-byte big-endian value).
type counter struct{}

func (counter) Name() string { return "counter" }

func (counter) Setup(c *zk.Conn) error {
	if _, err := c.Create("/counter", make([]byte, 8), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

func decodeLong(b []byte) int64 {
	var v int64
	for _, x := range b {
		v = v<<8 | int64(x)
	}
	return v
}

func encodeLong(v int64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func (k counter) Run(c *client, h *History, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		data, st, err := c.conn.Get("/counter")
		if err != nil {
			c.afterError(err)
			continue
		}
		op := Op{Client: c.id, Workload: k.Name(), Kind: "incr", Call: time.Now(), Expect: st.Version}
		_, err = c.conn.Set("/counter", encodeLong(decodeLong(data)+1), st.Version)
		op.Return, op.Outcome = time.Now(), classify(err)
		op.Server = c.conn.Server()
		h.Add(op)
		if err != nil {
			c.afterError(err)
		}
	}
}

func (k counter) Check(c *zk.Conn, h *History, _ string) []string {
	data, _, err := c.Get("/counter")
	if err != nil {
		return []string{fmt.Sprintf("counter: read: %v", err)}
	}
	final := decodeLong(data)
	var acked, unknown int64
	for _, op := range h.Ops(k.Name()) {
		switch op.Outcome {
		case OK:
			acked++
		case Unknown:
			unknown++
		}
	}
	if final < acked || final > acked+unknown {
		return []string{fmt.Sprintf("counter: final value %d, but %d increments were acknowledged and %d are unknown", final, acked, unknown)}
	}
	return nil
}

// runClients runs n clients of w until stop closes.
func runClients(w Workload, addrs []string, firstID, n int, h *History, stop <-chan struct{}, wg *sync.WaitGroup) error {
	for i := 0; i < n; i++ {
		c, err := dialClient(firstID+i, addrs)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.close()
			w.Run(c, h, stop)
		}()
	}
	return nil
}
