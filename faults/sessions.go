package faults

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessions: each client opens short sessions, one ephemeral each, and
// watches that ephemeral from its own long-lived session. An ephemeral
// must be visible while its session lives, its deletion must fire the
// watch when the session closes (or, if the close was lost, expires), and
// none may outlive the run.
type sessions struct {
	// violationLog's mutex also guards the fields below.
	violationLog
	ends []ephemeralEnd
}

// ephemeralEnd: the owner of path closed its session at ended; the watch
// saw the ephemeral go at gone.
type ephemeralEnd struct {
	path        string
	sid         int64
	ended, gone time.Time
}

func (*sessions) Name() string { return "sessions" }

func (*sessions) Setup(c *zk.Conn) error {
	if _, err := c.Create("/eph", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// expiryGrace bounds how long an ephemeral may outlive the later of its
// session's end and the last fault: a close that was lost leaves the
// session to expire after its timeout, and every new leader gives each
// session a full timeout from when it took over (as ZooKeeper's does),
// found at the leader's next half-tick check (1 s), plus an election after
// a fault ended (a restarted node). ephemeralGrace bounds the wait
// itself, from the later of the close and the last fault (awaitEnd).
const (
	expiryGrace    = sessionTimeout + 3*time.Second
	ephemeralGrace = 4*sessionTimeout + 4*time.Second
)

func (s *sessions) Run(c *client, h *History, stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		owner, err := dialClient(c.id*1000+n%1000, c.addrs)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		path := fmt.Sprintf("/eph/c%d-%d", c.id, n)
		op := Op{Client: c.id, Workload: s.Name(), Kind: "create", Path: path, Call: time.Now()}
		_, err = owner.conn.Create(path, nil, zk.FlagEphemeral, openACL)
		op.Return, op.Outcome = time.Now(), classify(err)
		h.Add(op)
		if err != nil {
			owner.close()
			c.afterError(err)
			continue
		}
		// The watcher's session must see the acknowledged ephemeral once
		// it synced, and register its watch on it.
		var events <-chan zk.Event
		var exists bool
		for attempt := 0; attempt < 20; attempt++ {
			if _, err = c.conn.Sync(path); err == nil {
				exists, _, events, err = c.conn.ExistsW(path)
			}
			if err == nil {
				break
			}
			c.afterError(err)
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			owner.close()
			continue // the watcher could not look: nothing to check
		}
		if !exists {
			s.violate("sessions: ephemeral %s of a live session is not visible after a sync", path)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-stop:
		}
		sid, ownerAt, watcherAt := owner.conn.SessionID(), owner.conn.Server(), c.conn.Server()
		ended := time.Now()
		owner.close() // closeSession; if lost, the session expires
		if !exists {
			continue
		}
		s.awaitEnd(h, events, path, sid, ended, ownerAt, watcherAt)
	}
}

// awaitEnd waits for the watch on path to fire after its owner's session
// ended at ended. Each new leader gives every session a full timeout, so
// a session whose close was lost in a failover lives on while leaders keep
// changing (as under ZooKeeper): the wait is ephemeralGrace from the later
// of the close and the last fault, looked up again every second.
func (s *sessions) awaitEnd(h *History, events <-chan zk.Event, path string, sid int64, ended time.Time, ownerAt, watcherAt string) {
	for {
		from := ended
		if f := h.LastFaultBefore(time.Now()); f.After(from) {
			from = f
		}
		wait := time.Until(from.Add(ephemeralGrace))
		if wait <= 0 {
			s.violate("sessions: ephemeral %s of session 0x%x (on %s, watched from %s) still there (no watch event) %v after its session closed, %v after the later of that and the last fault",
				path, sid, ownerAt, watcherAt, time.Since(ended).Round(time.Millisecond), time.Since(from).Round(time.Millisecond))
			return
		}
		select {
		case ev := <-events:
			if ev.Type != zk.EventNodeDeleted && ev.Type != zk.EventNotWatching {
				s.violate("sessions: watch on %s fired %v, want NodeDeleted", path, ev.Type)
			}
			// Judged against the faults at the end (Check): a fault later
			// than the close resets the session's timeout.
			s.mu.Lock()
			s.ends = append(s.ends, ephemeralEnd{path: path, sid: sid, ended: ended, gone: time.Now()})
			s.mu.Unlock()
			return
		case <-time.After(min(wait, time.Second)):
		}
	}
}

// Check waits for every ephemeral to go (sessions whose close was lost
// expire) and reports those that stay.
func (s *sessions) Check(c *zk.Conn, h *History, _ string) []string {
	s.mu.Lock()
	for _, e := range s.ends {
		from := e.ended
		if f := h.LastFaultBefore(e.gone); f.After(from) {
			from = f
		}
		if late := e.gone.Sub(from); late > expiryGrace {
			s.violateLocked("sessions: ephemeral %s of session 0x%x went %v after its session closed, %v after the later of that and the last fault (allowed %v)",
				e.path, e.sid, e.gone.Sub(e.ended).Round(time.Millisecond), late.Round(time.Millisecond), expiryGrace)
		}
	}
	s.mu.Unlock()
	deadline := time.Now().Add(ephemeralGrace)
	var kids []string
	for {
		var err error
		if _, err = c.Sync("/eph"); err == nil {
			kids, _, err = c.Children("/eph")
		}
		if err == nil && len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				s.violate("sessions: list /eph: %v", err)
			} else {
				s.violate("sessions: %d ephemerals outlived their sessions by %v: %v", len(kids), ephemeralGrace, kids[:min(5, len(kids))])
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s.list()
}
