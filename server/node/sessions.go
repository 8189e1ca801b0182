package node

import (
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/wallclock"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Sessions are replicated records (sm); liveness is this package's: every
// node tracks the deadlines of all sessions, its own front doors touch the
// sessions of their clients and report that activity to the other replicas,
// and the leader proposes the expiry of sessions that went quiet.

// CreateSession proposes a new session with the given timeout (already
// negotiated) and password, owned by this node; connID identifies the
// client connection for primary order (0 for a session without one). It
// returns the new session's id, which every node tracks once applied.
func (n *Node) CreateSession(connID uint64, timeoutMs int32, passwd []byte) (int64, error) {
	cmd := &sm.Command{
		Header: sm.Header{Conn: connID, Time: wallclock.NowMilli()},
		Op:     &sm.CreateSession{Timeout: timeoutMs, Password: passwd, Owner: n.cfg.ReplicaID},
	}
	res, err := n.proposeOK(cmd)
	if err != nil {
		return 0, err
	}
	return res.Session, nil // tracked by applied, as on every node
}

// proposeOK proposes cmd and waits for it; a result that is not ErrOK is
// returned as the error.
func (n *Node) proposeOK(cmd *sm.Command) (*sm.Result, error) {
	res, err := n.raft.proposeSync(cmd)
	if err == nil && res.Err != zkproto.ErrOK {
		err = res.Err
	}
	return res, err
}

// ResumeSession moves session id to this node and connection connID after
// its password is checked in apply (SetSessionOwner). Taking a session over
// is idempotent, so one lost in a leader change (a client that fled a
// killed leader to a follower that still followed it) is proposed again.
// A result whose Err is not ErrOK means the session is gone or the password
// is wrong.
func (n *Node) ResumeSession(id int64, connID uint64, passwd []byte) (*sm.Result, error) {
	cmd := &sm.Command{
		Header: sm.Header{Session: id, Conn: connID, Time: wallclock.NowMilli()},
		Op:     &sm.SetSessionOwner{Owner: n.cfg.ReplicaID, Password: passwd},
	}
	var res *sm.Result
	var err error
	for attempt := 0; ; attempt++ {
		res, err = n.raft.proposeSync(cmd)
		if !errors.Is(err, errOutcomeUnknown) || attempt == 3 {
			break
		}
		n.log.Info().Str("session", SessionHex(id)).Msg("session takeover lost in a leader change; proposing it again")
	}
	return res, err
}

// CloseSession proposes the end of session id (its ephemerals are deleted
// in the same transaction). Like every write of a session it carries the
// session's ordering stamp: its connection conn and the sequence number seq
// of this write (the last one's plus one), which apply checks.
func (n *Node) CloseSession(id int64, conn, seq uint64) error {
	cmd := &sm.Command{Header: sm.Header{Session: id, Conn: conn, Seq: seq, Time: wallclock.NowMilli()}, Op: &sm.CloseSession{}}
	_, err := n.proposeOK(cmd)
	return err
}

// ExpireSession ends session id as its expiry would, whoever holds it: its
// ephemerals are deleted and its clients are told it expired. A native
// registration's takeover fences the incarnation it replaces this way.
func (n *Node) ExpireSession(id int64) error {
	cmd := &sm.Command{Header: sm.Header{Session: id, Time: wallclock.NowMilli()}, Op: &sm.CloseSession{Expired: true}}
	_, err := n.proposeOK(cmd)
	return err
}

// SessionInfo returns the replicated record of session id as the local
// replica has it (zkproto.ErrSessionExpired if there is none).
func (n *Node) SessionInfo(id int64) (*sm.SessionInfo, error) {
	v, err := n.store.View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return v.Session(id)
}

// NegotiateTimeout clamps a requested session timeout (ms) to
// [minSessionTimeout, maxSessionTimeout].
func (n *Node) NegotiateTimeout(requested int32) int32 {
	lo, hi := int32(n.cfg.MinSessionTimeout.Milliseconds()), int32(n.cfg.MaxSessionTimeout.Milliseconds())
	switch {
	case requested < lo:
		return lo
	case requested > hi:
		return hi
	}
	return requested
}

// TrackSession gives session id a deadline timeoutMs from now on this node
// (a session resumed here).
func (n *Node) TrackSession(id int64, timeoutMs int32) { n.sessions.add(id, timeoutMs) }

// TouchSession records activity of session id on this node: a new deadline,
// reported to the other replicas within half a tick.
func (n *Node) TouchSession(id int64) { n.sessions.touch(id) }

// RenewSession records activity of session id and returns once the leader
// knows of it: on a follower (or observer) it proposes the renewal as its
// own TouchSessions entry and waits for it to be applied, so an error means
// the renewal may be unknown to the leader and must not be acknowledged
// (zkproto.ErrSessionExpired: the session was gone when it applied).
// The batched report of touchLoop is asynchronous: a native Heartbeat a
// follower answered just before it was paused reached the leader only
// after the pause, and the leader had expired the lease its client had
// just renewed (fault suite, leases under pause-follower).
func (n *Node) RenewSession(id int64) error {
	n.sessions.touch(id)
	if n.raft.isLeader() || (n.Voters() <= 1 && !n.IsObserver()) {
		return nil // the leader's own deadline is the one that counts
	}
	cmd := &sm.Command{Header: sm.Header{Time: wallclock.NowMilli()}, Op: &sm.TouchSessions{IDs: []int64{id}}}
	if _, err := n.proposeOK(cmd); err != nil {
		return err
	}
	// Applied here too (a result's Touched is not encoded): a session closed
	// before the renewal applied is gone from this replica.
	_, err := n.SessionInfo(id)
	return err
}

// DropActivityReports makes this node's batched session activity reports
// (touchLoop) fail as a report whose message was dropped does, while drop
// returns true; nil restores them. A test hook.
func (n *Node) DropActivityReports(drop func() bool) { n.dropReports.Store(&drop) }

// SessionDeadlines returns every tracked session's deadline (4lw dump).
func (n *Node) SessionDeadlines() map[int64]time.Time { return n.sessions.snapshot() }

// SessionCount is the number of sessions tracked.
func (n *Node) SessionCount() int { return n.sessions.count() }

// SessionHex is a session id as ZooKeeper prints it.
func SessionHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// sessionTracker keeps session deadlines in memory on the leader and
// proposes CloseSession(expired) for sessions whose clients went quiet.
// Every packet of a session's connection touches it.
type sessionTracker struct {
	mu        sync.Mutex
	deadlines map[int64]time.Time
	timeouts  map[int64]time.Duration
	expiring  map[int64]bool // CloseSession proposed, not yet applied
	// active collects sessions touched locally since the last report; nil
	// on a single node, which has no one to report to.
	active map[int64]struct{}
}

func newSessionTracker() *sessionTracker {
	return &sessionTracker{
		deadlines: map[int64]time.Time{},
		timeouts:  map[int64]time.Duration{},
		expiring:  map[int64]bool{},
		active:    map[int64]struct{}{}, // reported by touchLoop once the node has peers
	}
}

func (t *sessionTracker) add(id int64, timeoutMs int32) {
	d := time.Duration(timeoutMs) * time.Millisecond
	t.mu.Lock()
	t.timeouts[id] = d
	t.deadlines[id] = time.Now().Add(d)
	t.mu.Unlock()
}

// touch records activity of a session's connection on this node: a new
// deadline, and a mark so the next report tells the other nodes.
func (t *sessionTracker) touch(id int64) {
	if id == 0 {
		return
	}
	t.mu.Lock()
	if d, ok := t.timeouts[id]; ok {
		t.deadlines[id] = time.Now().Add(d)
	}
	if t.active != nil {
		t.active[id] = struct{}{}
	}
	t.mu.Unlock()
}

// refresh gives a session a new deadline for activity another node
// reported. It is not marked for this node's report: echoing it would keep
// every reported session alive forever.
func (t *sessionTracker) refresh(id int64) {
	t.mu.Lock()
	if d, ok := t.timeouts[id]; ok {
		t.deadlines[id] = time.Now().Add(d)
	}
	t.mu.Unlock()
}

// takeActive returns, sorted, the sessions touched by this node's
// connections since the last call (they are reported to the other nodes).
func (t *sessionTracker) takeActive() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int64, 0, len(t.active))
	for id := range t.active {
		out = append(out, id)
	}
	clear(t.active)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// requeue marks sessions of a failed report for the next one (those still
// tracked: a session closed meanwhile needs no report).
func (t *sessionTracker) requeue(ids []int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active == nil {
		return
	}
	for _, id := range ids {
		if _, ok := t.timeouts[id]; ok {
			t.active[id] = struct{}{}
		}
	}
}

func (t *sessionTracker) remove(id int64) {
	t.mu.Lock()
	delete(t.deadlines, id)
	delete(t.timeouts, id)
	delete(t.expiring, id)
	t.mu.Unlock()
}

// expired returns the sessions past their deadline not yet being closed,
// marking them as being closed.
func (t *sessionTracker) expired(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for id, dl := range t.deadlines {
		if now.After(dl) && !t.expiring[id] {
			t.expiring[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// retry clears the "being closed" mark after a failed proposal.
func (t *sessionTracker) retry(id int64) {
	t.mu.Lock()
	delete(t.expiring, id)
	t.mu.Unlock()
}

// snapshot returns every tracked session's deadline (dump).
func (t *sessionTracker) snapshot() map[int64]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]time.Time, len(t.deadlines))
	for id, d := range t.deadlines {
		out[id] = d
	}
	return out
}

func (t *sessionTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deadlines)
}

// touchLoop reports this node's session activity to every replica (and so
// to the leader) twice per tick, as ZooKeeper learners ping the leader. The
// report is a TouchSessions entry: it needs no transport of its own, and a
// new leader already holds fresh deadlines.
func (n *Node) touchLoop(stop <-chan struct{}) {
	tick := time.NewTicker(n.cfg.TickTime / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			ids := n.sessions.takeActive()
			// Decided each time: a node that joined, or a single node that
			// was given voters, learns of its peers only after it started.
			if len(ids) == 0 || (n.Voters() <= 1 && !n.IsObserver()) {
				continue
			}
			cmd := &sm.Command{Header: sm.Header{Time: wallclock.NowMilli()}, Op: &sm.TouchSessions{IDs: ids}}
			failed := func(err error) {
				// Marked again, so the next report carries them: a lost
				// report must not cost a session the activity it carried.
				n.sessions.requeue(ids)
				n.log.Debug().Err(err).Msg("session activity report failed; the next one carries it")
			}
			if drop := n.dropReports.Load(); drop != nil && *drop != nil && (*drop)() {
				failed(errors.New("activity report dropped (test hook)"))
				continue
			}
			n.raft.propose(cmd, func(_ *sm.Result, err error) {
				if err != nil {
					failed(err)
				}
			})
		}
	}
}

// expiryLoop proposes the expiry of quiet sessions until stop closes.
// Only the leader expires sessions; a node that becomes leader first gives
// every session a full timeout, as a new ZooKeeper leader does.
func (n *Node) expiryLoop(stop <-chan struct{}) {
	tick := time.NewTicker(n.cfg.TickTime / 2)
	defer tick.Stop()
	wasLeader := true // join loaded the sessions with fresh deadlines
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			leader := n.raft.isLeader()
			if leader && !wasLeader {
				// Let ReadIndex complete on every replica again (see join).
				n.raft.propose(noopCommand(), func(*sm.Result, error) {})
				if err := n.loadSessions(); err != nil {
					n.log.Error().Err(err).Msg("reload sessions after becoming leader")
				}
			}
			wasLeader = leader
			if !leader {
				continue
			}
			for _, id := range n.sessions.expired(now) {
				n.expireSession(id)
			}
		}
	}
}

// leaderLoop tells the front doors, when this node has had no leader for
// longer than an election could take (leaderLostAfter) and then twice per
// tick while none is back,
// so clients of a node cut off from the majority fail over to one that can
// serve them, as those of a ZooKeeper follower that lost its leader do; and
// once when a leader is back. It runs from Start, so a node that never
// found its quorum can serve read-only clients too.
//
// The bound used to be two ticks (at least 2 s): with the default 2 s
// tick, the clients of a leader cut off by a partition waited 5-6 s
// (measured by the fault suite) before they moved, though the cluster had
// elected another leader after a few hundred milliseconds.
// leaderLostAfter is how long a node may be without a leader before it
// sends its clients away: five election timeouts (an election takes one to
// two, a PreVote round trip more), at least a second.
func leaderLostAfter(election time.Duration) time.Duration {
	return max(5*election, time.Second)
}

// deposedLeaderLostAfter is leaderLostAfter for a node that was the leader
// itself and lost its quorum (CheckQuorum: it heard from no majority for
// an election timeout): the majority elects another leader without it, so
// it sends its clients away after two election timeouts, time for a
// re-election after a stall of the whole host (0.25-0.32 s in the fault
// suite), as a ZooKeeper leader that loses its quorum closes its clients'
// connections at once. After five, all nine writers of an isolate-leader
// round on the cut-off leader waited 1.3 s for it (issue 34: a partition is
// to cost no more than 1 s of writes).
func deposedLeaderLostAfter(election time.Duration) time.Duration {
	return 2 * election
}

func (n *Node) leaderLoop(stop <-chan struct{}) {
	tick := time.NewTicker(n.cfg.TickTime / 2)
	defer tick.Stop()
	// The loop also wakes at each leader report and when the bound is
	// reached: on the half-tick alone (1 s by default) a cut-off leader's
	// clients were sent away 1-2 s after the bound, 2.1 s after it lost
	// its quorum (the fault suite's isolate-leader, issue 34).
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	defer deadline.Stop()
	after := leaderLostAfter(n.cfg.ElectionTimeout)
	_, _, changed := n.raft.leaders.current()
	var since time.Time
	lost := false
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-tick.C:
		case <-changed:
			now = time.Now()
		case now = <-deadline.C:
		}
		_, _, changed = n.raft.leaders.current()
		if n.raft.status().HasLeader {
			since = time.Time{}
			deadline.Stop()
			if lost {
				lost = false
				for _, h := range n.hooks {
					if h.LeaderBack != nil {
						h.LeaderBack()
					}
				}
			}
			continue
		}
		if since.IsZero() {
			since = now
		}
		after := after
		if n.raft.leaders.lastLeader() == n.raft.replicaID {
			after = deposedLeaderLostAfter(n.cfg.ElectionTimeout)
		}
		if without := now.Sub(since); without < after {
			deadline.Reset(after - without)
			continue
		}
		lost = true
		for _, h := range n.hooks {
			if h.LeaderLost != nil {
				h.LeaderLost(now.Sub(since))
			}
		}
	}
}

func (n *Node) expireSession(id int64) {
	cmd := &sm.Command{
		Header: sm.Header{Session: id, Time: wallclock.NowMilli()},
		Op:     &sm.CloseSession{Expired: true},
	}
	n.raft.propose(cmd, func(res *sm.Result, err error) {
		if err != nil {
			n.log.Warn().Err(err).Str("session", SessionHex(id)).Msg("session expiry proposal failed; will retry")
			n.sessions.retry(id)
			return
		}
		n.log.Info().Str("session", SessionHex(id)).Msg("session expired")
	})
}

// loadSessions gives every replicated session a full timeout from now, as
// a new ZooKeeper leader does.
func (n *Node) loadSessions() error {
	v, err := n.store.View()
	if err != nil {
		return err
	}
	defer v.Close()
	return v.Sessions(func(info *sm.SessionInfo) error {
		n.sessions.add(info.ID, info.Timeout)
		return nil
	})
}
