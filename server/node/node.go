package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/wallclock"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Node is the replicated core of one zkbridge node: the Raft replica of the
// data shard, its local state machine, and the sessions it keeps alive.
type Node struct {
	cfg config.Config
	log zerolog.Logger

	raft  *raftNode
	store *sm.StateMachine
	// tenant is set on a tenant's node (tenant.go); nil on the default's.
	tenant *tenantShard
	// applyMu is held exclusively while a batch of entries is applied and
	// the Applied hooks run, and shared by every read (LockReads).
	applyMu sync.RWMutex

	sessions *sessionTracker
	// dropReports is DropActivityReports' test hook.
	dropReports atomic.Pointer[func() bool]
	cluster     clusterView
	metrics     metrics

	// Set before Start, read-only after.
	hooks    []Hooks
	barriers []ApplyBarrier
	addrs    Addresses
	progress ProgressSource

	// joined is set once the node has found its quorum after start and
	// applied an entry of its own (see join).
	joined  atomic.Bool
	started time.Time

	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// Hooks are a front door's view of what the core does. Every field is
// optional. Register them with Subscribe before Start.
type Hooks struct {
	// Applied runs on the apply path, with the apply lock held exclusively,
	// after each batch of entries is committed to the local replica: a
	// read under LockReads never sees a change whose hooks have not run.
	// It must not block on anything that waits for an apply.
	Applied func(results []*sm.Result)
	// MembershipChanged runs (off the apply path) when the shard's
	// membership, the replica directory or the configuration's version
	// changed.
	MembershipChanged func(Membership)
	// LeaderLost runs every half tick while the node has had no leader for
	// longer than an election (at least two ticks, and at least 2 s):
	// clients of a node cut off from the majority should fail over.
	LeaderLost func(without time.Duration)
	// LeaderBack runs once when a leader is known again after LeaderLost.
	LeaderBack func()
}

// Addresses are the front doors' bound addresses, recorded in the
// replicated replica directory so that other nodes and clients find them.
type Addresses struct {
	Client string // ZooKeeper client port
	Admin  string // admin HTTP ("" when disabled)
}

// New prepares a node; cfg must be normalized and valid (config.Normalize,
// config.Validate).
func New(cfg config.Config, log zerolog.Logger) *Node {
	return &Node{
		cfg:      cfg,
		log:      log,
		sessions: newSessionTracker(),
		cluster:  clusterView{refresh: make(chan struct{}, 1)},
		stop:     make(chan struct{}),
	}
}

// Subscribe registers a front door's hooks. Call it before Start.
func (n *Node) Subscribe(h Hooks) { n.hooks = append(n.hooks, h) }

// AddApplyBarrier registers a barrier the apply path consults before each
// entry. Call it before Start.
func (n *Node) AddApplyBarrier(b ApplyBarrier) { n.barriers = append(n.barriers, b) }

// SetProgressSource sets how the leader asks another replica for its Raft
// progress (the admin door's /raft/local). Call it before Start.
func (n *Node) SetProgressSource(f ProgressSource) { n.progress = f }

// ReplicaID is this node's replica id (ZooKeeper's myid).
func (n *Node) ReplicaID() uint64 { return n.cfg.ReplicaID }

// Started is when Start was called.
func (n *Node) Started() time.Time { return n.started }

// Start opens the state and starts the Raft replica. It does not wait for a
// quorum: like a ZooKeeper server, the node keeps looking for its peers
// for as long as it runs, and serves (Serving) once a leader is known and
// an entry of its own has been applied. addrs are the front doors' bound
// addresses, for the replica directory.
func (n *Node) Start(addrs Addresses) error {
	n.started = time.Now()
	n.addrs = addrs
	if err := os.MkdirAll(n.cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	smCfg := sm.Config{
		Dir:         n.cfg.DataDir + "/state",
		SuperDigest: n.cfg.SuperDigest,
		DisableTTL:  n.cfg.ExtendedTypesDisabled,
		Notify:      n.applied,

		ChangeLogMaxRecords: n.cfg.ChangeLogMaxRecords,
		ChangeLogMaxBytes:   n.cfg.ChangeLogMaxBytes,
		EnforceQuota:        n.cfg.Limits.EnforceQuota,
	}
	fsync := func(d time.Duration) {
		n.metrics.fsync.Observe(float64(d.Microseconds()) / 1000)
		n.metrics.fsyncHist.ObserveDuration(d)
	}
	r, store, err := n.startReplica(smCfg, fsync)
	if err != nil {
		return err
	}
	n.raft, n.store = r, store
	n.wg.Add(3)
	go func() { defer n.wg.Done(); n.clusterLoop(n.stop) }()
	go func() { defer n.wg.Done(); n.leaderLoop(n.stop) }()
	go func() { defer n.wg.Done(); n.join() }()
	return nil
}

// join waits, for as long as the node runs, until a leader is known, then
// proposes an entry of its own: until one is applied after the last
// membership change, this replica's ReadIndex (sync) cannot complete,
// because dragonboat counts only entries the on-disk state machine
// applied. Then it loads the sessions and starts the session and reaper
// loops.
func (n *Node) join() {
	wait := 5 * time.Second // first report; then less often
	for waited := time.Duration(0); ; {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		go func() {
			select {
			case <-n.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := n.raft.waitLeader(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-n.stop:
			return
		default:
		}
		waited += wait
		n.log.Warn().Dur("waited", waited.Round(time.Second)).Int("voters", max(1, len(n.cfg.Peers))).
			Msg("no Raft leader yet: waiting for a quorum of the peers to start (clients are refused until then)")
		wait = min(2*wait, time.Minute)
	}
	for {
		_, err := n.raft.proposeSync(noopCommand())
		if err == nil {
			break
		}
		select {
		case <-n.stop:
			return
		case <-time.After(20 * time.Millisecond): // a no-op is safe to retry
		}
	}
	if err := n.loadSessions(); err != nil {
		n.log.Error().Err(err).Msg("load sessions")
	}
	n.joined.Store(true)
	n.refreshSoon()
	n.log.Info().Uint64("replica_id", n.cfg.ReplicaID).Dur("since_start", time.Since(n.started)).Msg("zkbridge serving")
	select {
	case <-n.stop:
		return
	default:
	}
	n.wg.Add(3)
	go func() { defer n.wg.Done(); n.touchLoop(n.stop) }()
	go func() { defer n.wg.Done(); n.expiryLoop(n.stop) }()
	go func() { defer n.wg.Done(); n.reaperLoop(n.stop) }()
}

// WaitServing blocks until the node serves or ctx ends.
func (n *Node) WaitServing(ctx context.Context) error {
	for !n.Serving() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("no raft leader elected: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Serving reports whether the node has a leader and has joined it: it can
// create sessions, write and read.
func (n *Node) Serving() bool {
	return n.raft != nil && n.joined.Load() && n.raft.status().HasLeader
}

// Ready reports why this node is not ready yet (nil when it is): it serves
// and its own addresses are in the replica directory (until then
// /zookeeper/config and raft status lack its client address).
func (n *Node) Ready() error {
	if !n.Serving() {
		return errors.New("not serving: no raft leader")
	}
	if !n.cluster.registered.Load() {
		return errors.New("not ready: this node's addresses are not in the replica directory yet")
	}
	return nil
}

// Stop stops the loops, syncs the state and stops Raft. It is safe to call
// more than once.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		close(n.stop)
		if n.store != nil {
			if err := n.store.Sync(); err != nil {
				n.log.Error().Err(err).Msg("final sync of the state failed")
			}
		}
		if n.raft != nil {
			n.raft.close()
		}
		n.wg.Wait()
	})
}

// applied is the state machine's Notify hook: it runs on the apply path
// with applyMu held, after the batch is committed.
func (n *Node) applied(results []*sm.Result) {
	for _, res := range results {
		n.metrics.recordApply(res)
		if res.Session != 0 && res.Timeout > 0 && res.Err == 0 {
			// A session created or moved anywhere: every node tracks it, so a
			// new leader already knows its deadline.
			n.sessions.add(res.Session, res.Timeout)
		}
		if res.DirectoryChanged {
			n.refreshSoon()
		}
		for _, id := range res.Touched {
			n.sessions.refresh(id)
		}
		for _, s := range res.Imported { // a migration's sessions, a full timeout each
			n.sessions.add(s.ID, s.Timeout)
		}
		if id := res.ClosedSession; id != 0 {
			n.log.Info().Str("session", SessionHex(id)).Msg("session closed")
			n.sessions.remove(id)
		}
	}
	for _, h := range n.hooks {
		if h.Applied != nil {
			h.Applied(results)
		}
	}
}

// Propose submits cmd and calls done from another goroutine with the
// applied result, or an error: then the outcome is unknown (ErrOutcomeUnknown
// after a leader change), and the caller must not assume either way.
func (n *Node) Propose(cmd *sm.Command, done func(*sm.Result, error)) { n.raft.propose(cmd, done) }

// ProposeSync proposes cmd and waits for its result.
func (n *Node) ProposeSync(cmd *sm.Command) (*sm.Result, error) { return n.raft.proposeSync(cmd) }

// ErrOutcomeUnknown: the leader changed (or a snapshot replaced the local
// state) under a proposal, which did not complete once this replica caught
// up with the new leader, or could not catch up.
var ErrOutcomeUnknown = errOutcomeUnknown

// ReadIndex confirms with the leader that the local replica has applied
// everything committed so far (ZooKeeper's sync), then calls done from
// another goroutine.
func (n *Node) ReadIndex(done func(error)) { n.raft.readIndex(done) }

// CatchUp returns once the local replica applied everything the leader had
// committed when asked, or ctx ends.
func (n *Node) CatchUp(ctx context.Context) error { return n.raft.catchUp(ctx) }

// AwaitCommitted waits, at most wait, until this replica has applied
// everything committed when it asked (a read index, as sync does). Still
// behind after wait: the caller decides.
func (n *Node) AwaitCommitted(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = n.raft.catchUp(ctx)
}

// LockReads takes the apply lock shared: no batch is applied (and no
// Applied hook runs) until UnlockReads. A read that registers a watch
// holds it from the view to the queued reply.
func (n *Node) LockReads() { n.applyMu.RLock() }

// UnlockReads releases LockReads.
func (n *Node) UnlockReads() { n.applyMu.RUnlock() }

// View opens a consistent read view of the local replica; Close it.
func (n *Node) View() (*sm.View, error) { return n.store.View() }

// LockedView is View for a caller that holds LockReads (or runs on the
// apply path) until it has closed the view: cheaper, as nothing can
// change under it.
func (n *Node) LockedView() (*sm.View, error) { return n.store.LockedView() }

// LastZxid is the zxid of the last transaction applied locally.
func (n *Node) LastZxid() int64 { return n.store.LastZxid() }

// AppliedIndex is the last Raft index applied locally.
func (n *Node) AppliedIndex() uint64 { return n.store.AppliedIndex() }

// CommitIndex is the commit index of this replica's last persisted Raft
// state (0 if the log cannot be read).
func (n *Node) CommitIndex() uint64 { return n.raft.commitIndex() }

// TreeStats are the local tree's sizes.
func (n *Node) TreeStats() sm.TreeStats { return n.store.Stats() }

// RaftState is what 4lw, metrics and status commands show of Raft.
type RaftState struct {
	LeaderID    uint64
	Term        uint64
	HasLeader   bool
	IsLeader    bool
	ReplicaID   uint64
	RaftAddress string
	// ProposalsDroppedNoLeader counts this replica's proposals Raft
	// dropped because it knew no leader (mid-election); each waited for a
	// leader and went to it, or failed after 3 s without one.
	ProposalsDroppedNoLeader int64
}

// Raft returns the replica's view of the leader and term.
func (n *Node) Raft() RaftState {
	if n.raft == nil {
		return RaftState{ReplicaID: n.cfg.ReplicaID, RaftAddress: n.cfg.PeerAddr}
	}
	return n.raft.status()
}

// IsLeader reports whether this replica leads the shard.
func (n *Node) IsLeader() bool { return n.raft != nil && n.raft.isLeader() }

// reaperLoop is the leader's container and TTL reaper: it proposes guarded
// deletes, which apply re-checks, every ReaperInterval.
func (n *Node) reaperLoop(stop <-chan struct{}) {
	// TTLs are measured from the first sighting of a node's last write
	// (see reap), so the leader looks at its TTL nodes every second even
	// when it deletes only every ReaperInterval (60 s by default): a TTL
	// node goes at most a second later than the interval alone makes it.
	every := min(n.cfg.ReaperInterval, time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	ages := wallclock.NewAges()
	var lastReap time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if !n.raft.isLeader() {
				ages.Reset() // a new leader gives every TTL node a full TTL
				continue
			}
			deletes := now.Sub(lastReap) >= n.cfg.ReaperInterval-every/2
			if deletes {
				lastReap = now
			}
			n.reap(now, ages, deletes)
		}
	}
}

// reapBatch bounds how many nodes one reaper pass deletes (ZooKeeper:
// znode.container.maxPerMinute, 10000).
const reapBatch = 10000

// reap proposes the deletes of empty containers and of TTL nodes that
// went unmodified for their TTL. A TTL is measured here, on the leader's
// monotonic clock, from the first pass that saw the node's last
// modification (ages): comparing the stamping node's wall clock with this
// node's expired nodes early when one of them ran ahead (the fault suite's
// clock-jump nemesis deleted TTL nodes written a second before). Expiry
// is late by up to a reaper interval and a second, and a new leader starts
// every TTL afresh, as it does every session's timeout. Without deletes, a
// pass only records sightings.
func (n *Node) reap(now time.Time, ages *wallclock.Ages, deletes bool) {
	v, err := n.store.View()
	if err != nil {
		return
	}
	var containers []string
	if deletes {
		// now 0: no TTL node is a candidate by wall time; TTLNodes decides.
		containers, _, err = v.ReapCandidates(0, 0, reapBatch)
	}
	var ttls []sm.TTLNode
	if err == nil {
		err = v.TTLNodes(func(t sm.TTLNode) error {
			if ages.Seen(t.Path, t.Mzxid, now) > time.Duration(t.TTL)*time.Millisecond && deletes && len(ttls) < reapBatch {
				ttls = append(ttls, t)
			}
			return nil
		})
		ages.Sweep()
	}
	v.Close()
	if err != nil {
		n.log.Warn().Err(err).Msg("reaper scan failed")
		return
	}
	for _, p := range containers {
		n.proposeReap(&sm.ReapContainer{Path: p})
	}
	for _, t := range ttls {
		n.proposeReap(&sm.ReapTTL{Path: t.Path, Mzxid: t.Mzxid})
	}
}

func (n *Node) proposeReap(op sm.Op) {
	cmd := &sm.Command{Header: sm.Header{Time: wallclock.NowMilli()}, Op: op}
	res, err := n.raft.proposeSync(cmd)
	if err != nil {
		n.log.Warn().Err(err).Msg("reaper proposal failed")
		return
	}
	if res.Err == zkproto.ErrOK {
		n.log.Debug().Interface("op", op).Msg("reaped")
	}
}

// noopCommand is an entry that changes nothing and consumes no zxid (a
// TouchSessions without sessions).
func noopCommand() *sm.Command {
	return &sm.Command{Header: sm.Header{Time: wallclock.NowMilli()}, Op: &sm.TouchSessions{}}
}
