package faults

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// ttlNodes: each client creates a TTL node, keeps it alive with writes for
// longer than its TTL, then leaves it alone and watches it go. A TTL node
// must never be deleted less than its TTL after a write acknowledged on
// it: the clock-jump nemesis attacks exactly that (the leader that expires
// it and the node that stamps its mtime may disagree about the time). The
// bound is sound: the deletion happened before the read that missed the
// node returned, the last write after that write was sent.
//
// On zkbridge the node must also go within lateBound of the later of its
// last write and the last fault (the leader measures the TTL from when it
// first saw the write, at most two reaper passes late, and a new leader
// starts every TTL afresh). ZooKeeper's reaper runs every
// znode.container.checkIntervalMs (60 s by default), so that is not
// checked there.
type ttlNodes struct {
	disabled  bool          // the server has no TTL nodes (set by Setup)
	lateBound time.Duration // 0: not checked (set before the run)

	// violationLog's mutex also guards ends.
	violationLog
	ends []ttlEnd
}

// ttlEnd: path was last written (acknowledged) at written, seen gone at gone.
type ttlEnd struct {
	path          string
	written, gone time.Time
}

// workloadTTL is the TTL of the workload's nodes; ttlKeep is how long each
// is kept alive with writes (longer than its TTL), ttlTouch how often.
const (
	workloadTTL = 2 * time.Second
	ttlKeep     = 3 * time.Second
	ttlTouch    = 250 * time.Millisecond
)

func (*ttlNodes) Name() string { return "ttl" }

func (t *ttlNodes) Setup(c *zk.Conn) error {
	if _, err := c.Create("/ttl", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	// A server without TTL nodes (ZooKeeper without extendedTypesEnabled)
	// leaves the workload idle.
	_, err := c.CreateTTL("/ttl/probe", nil, zk.FlagTTL, openACL, time.Hour)
	switch {
	case errors.Is(err, zk.ErrUnknown), errors.Is(err, zk.ErrAPIError), errors.Is(err, zk.ErrBadArguments):
		t.disabled = true
		return nil
	case err != nil && !errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("create a TTL node: %w", err)
	}
	return c.Delete("/ttl/probe", -1)
}

func (t *ttlNodes) Run(c *client, h *History, stop <-chan struct{}) {
	if t.disabled {
		<-stop
		return
	}
	// Each client talks to one node only, so its writes carry that
	// node's stamps: one client per node, whichever node's clock jumps.
	c.addrs = []string{c.addrs[c.id%len(c.addrs)]}
	if err := c.redial(); err != nil {
		t.violate("ttl: client %d: %v", c.id, err)
		return
	}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		path := fmt.Sprintf("/ttl/c%d-%d", c.id, n)
		op := Op{Client: c.id, Workload: t.Name(), Kind: "create", Path: path, Call: time.Now()}
		_, err := c.conn.CreateTTL(path, nil, zk.FlagTTL, openACL, workloadTTL)
		op.Return, op.Outcome = time.Now(), classify(err)
		h.Add(op)
		if err != nil {
			// A create whose outcome is unknown may have left a node
			// nobody writes: it expires on its own (Check waits for it).
			c.afterError(err)
			time.Sleep(100 * time.Millisecond) // its node may be down
			continue
		}
		written := op.Call // the last acknowledged write was sent then
		if !t.keep(c, h, path, &written, stop) {
			continue
		}
		t.watchGo(c, path, written, stop)
	}
}

// watchGo polls path, left alone since the write sent at written, until it
// is gone or the run stops.
func (t *ttlNodes) watchGo(c *client, path string, written time.Time, stop <-chan struct{}) {
	for {
		call := time.Now()
		ok, _, err := c.conn.Exists(path)
		ret := time.Now()
		switch {
		case err != nil:
			c.afterError(err)
		case !ok:
			if early := ret.Sub(written); early < workloadTTL {
				t.violate("ttl: %s gone %v after a write acknowledged on it (TTL %v)", path, early.Round(time.Millisecond), workloadTTL)
			}
			t.mu.Lock()
			t.ends = append(t.ends, ttlEnd{path: path, written: written, gone: call})
			t.mu.Unlock()
			return
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-stop:
			return
		}
	}
}

// keep writes path every ttlTouch for ttlKeep, updating *written to the
// call time of the last acknowledged write. It reports false when the node
// vanished (judged here) or the run stopped.
func (t *ttlNodes) keep(c *client, h *History, path string, written *time.Time, stop <-chan struct{}) bool {
	until := time.Now().Add(ttlKeep)
	for time.Now().Before(until) {
		select {
		case <-stop:
			return false
		case <-time.After(ttlTouch):
		}
		op := Op{Client: c.id, Workload: t.Name(), Kind: "write", Path: path, Call: time.Now()}
		_, err := c.conn.Set(path, []byte("kept"), -1)
		op.Return, op.Outcome = time.Now(), classify(err)
		h.Add(op)
		switch {
		case err == nil:
			*written = op.Call
		case errors.Is(err, zk.ErrNoNode):
			if early := op.Return.Sub(*written); early < workloadTTL {
				t.violate("ttl: %s deleted %v after a write acknowledged on it (TTL %v)", path, early.Round(time.Millisecond), workloadTTL)
			}
			return false
		default:
			c.afterError(err)
		}
	}
	return true
}

// Check judges how late the nodes went (zkbridge) and waits for every
// TTL node to go.
func (t *ttlNodes) Check(c *zk.Conn, h *History, _ string) []string {
	if t.disabled {
		return nil
	}
	t.mu.Lock()
	if t.lateBound > 0 {
		for _, e := range t.ends {
			from := e.written
			if f := h.LastFaultBefore(e.gone); f.After(from) {
				from = f
			}
			if late := e.gone.Sub(from); late > t.lateBound {
				t.violateLocked("ttl: %s went %v after its last write, %v after the later of that and the last fault (allowed %v)",
					e.path, e.gone.Sub(e.written).Round(time.Millisecond), late.Round(time.Millisecond), t.lateBound)
			}
		}
	}
	t.mu.Unlock()
	if t.lateBound > 0 {
		deadline := time.Now().Add(t.lateBound + workloadTTL)
		for {
			var kids []string
			var err error
			if _, err = c.Sync("/ttl"); err == nil {
				kids, _, err = c.Children("/ttl")
			}
			if err == nil && len(kids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				if err != nil {
					t.violate("ttl: list /ttl: %v", err)
				} else {
					t.violate("ttl: %d TTL nodes still there %v after the run: %v", len(kids), t.lateBound+workloadTTL, kids[:min(5, len(kids))])
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return t.list()
}
