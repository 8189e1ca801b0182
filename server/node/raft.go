package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/client"
	dbconfig "github.com/lni/dragonboat/v4/config"
	dblogger "github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"
	dbsm "github.com/lni/dragonboat/v4/statemachine"
	"github.com/lni/vfs"
	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/diskfull"
	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node/logfs"
	"github.com/zkbridge/zkbridge/server/node/peernet"
	"github.com/zkbridge/zkbridge/server/stagetrace"
	"github.com/zkbridge/zkbridge/sm"
)

// dataShard is the Raft shard holding the default tenant's namespace and
// the tenant registry; every other tenant is a shard of its own on the same
// NodeHost (tenant.go).
const dataShard uint64 = 1

// proposalTimeout bounds how long a write may wait for its entry to apply.
// Past it the outcome is unknown and the connection is closed.
const proposalTimeout = 10 * time.Second

// After the leader changed under a proposal, the proposal is decided once
// this replica has caught up with the new leader (a read index, which the
// new leader answers only after committing an entry of its own term): an
// entry of the old term that the new leader holds is committed and applied
// by then, and one it lacks can never be committed. The result may trail
// that apply by a moment (resultSettle). Waiting a fixed grace instead held
// a client on a follower whose leader was killed half a second past the
// election.
const resultSettle = 50 * time.Millisecond

// raftNode is the small interface zkbridge uses of dragonboat: propose a
// command and learn its applied result, confirm reads (ReadIndex), and ask
// who leads. Everything dragonboat-specific stays in this file.
type raftNode struct {
	nh        *dragonboat.NodeHost
	host      *host
	shard     uint64
	ownsHost  bool // the default shard's: closing it closes the NodeHost
	replicaID uint64
	session   *client.Session
	log       zerolog.Logger
	leaders   *leaderWatch
	// latency is a moving average of this replica's recent proposal
	// latencies, in ns (retryAfter).
	latency atomic.Int64
	// inflight is the size of this replica's proposals still waiting, in
	// bytes (retryAfter).
	inflight atomic.Int64
	// droppedNoLeader counts proposals Raft dropped because this replica
	// knew no leader (mid-election); each waits for one (await).
	droppedNoLeader atomic.Int64
	// election is the configured election timeout (await).
	election time.Duration
}

// noteLatency folds a completed proposal's latency into the average
// (weight 1/8; concurrent updates may lose one, which is harmless).
func (r *raftNode) noteLatency(d time.Duration) {
	old := r.latency.Load()
	r.latency.Store(old + (int64(d)-old)/8)
}

// retryAfter is how long a proposal waits for its result before it is
// proposed again: proposalRetryAfter plus the time the log takes to carry
// what this replica has in flight at a modest 8 MiB/s, or four times the
// recent average latency when the log is that slow. Under a load that
// holds every write for seconds (a multi of 1,000 ops at 320 outstanding
// waits 6 s in ZooKeeper too), a fixed 500 ms sent nearly every proposal
// again, each copy one more large entry to replicate, sync and reject:
// 1,100 copies in 8 s, all of it load on a log already behind (issue 36).
// A dropped proposal is still proposed again, after a wait in proportion
// to the load; with small writes and a healthy log the wait stays 500 ms.
func (r *raftNode) retryAfter() time.Duration {
	const slowLog = 8 << 20 // bytes per second
	queued := time.Duration(r.inflight.Load()) * time.Second / slowLog
	return max(proposalRetryAfter+queued, 4*time.Duration(r.latency.Load()))
}

// leaderWatch closes the current channel whenever its shard's leader (or
// term) changes; the host's leaderHub routes dragonboat's events to it.
type leaderWatch struct {
	mu      sync.Mutex
	ch      chan struct{}
	last    uint64       // leader last reported (0: none)
	now     uint64       // the leader as of the latest report (0: none known)
	term    uint64       // the term of the latest report
	lostAt  time.Time    // when the latest report of no leader followed a leader (zero while one is known)
	changes atomic.Int64 // times a new leader was seen
	log     zerolog.Logger
}

func newLeaderWatch(log zerolog.Logger) *leaderWatch {
	return &leaderWatch{ch: make(chan struct{}), log: log}
}

// LeaderUpdated runs on a dragonboat goroutine; it must not block.
func (w *leaderWatch) LeaderUpdated(info raftio.LeaderInfo) {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	if info.LeaderID != 0 && info.LeaderID != w.last {
		w.changes.Add(1)
		// The first leader is news; a change of leader is worth a look (a
		// dead or stalled leader, or an overloaded machine).
		ev := w.log.Info()
		if w.last != 0 {
			ev = w.log.Warn()
		}
		ev.Uint64("leader", info.LeaderID).Uint64("previous", w.last).Uint64("term", info.Term).Msg("raft leader elected")
	}
	if info.LeaderID != 0 {
		w.last = info.LeaderID
		w.lostAt = time.Time{}
	} else if w.lostAt.IsZero() {
		w.lostAt = time.Now()
	}
	w.now, w.term = info.LeaderID, info.Term
	w.mu.Unlock()
}

// wake closes the current channel without a leader change: the local
// state was replaced by a snapshot from the leader. That completes no
// pending proposal, though its entry may be inside the snapshot (a joiner's
// first entry, proposed as soon as it heard of the leader): without this it
// waits the whole proposalTimeout.
func (w *leaderWatch) wake() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// changed returns a channel closed at the next leader change or snapshot
// recovery.
func (w *leaderWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// lastLeader is the leader reported last before none was (or the current
// one): whether a replica without a leader was the leader itself.
func (w *leaderWatch) lastLeader() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// leaderlessFor is how long no leader has been known (0 while one is).
func (w *leaderWatch) leaderlessFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lostAt.IsZero() {
		return 0
	}
	return time.Since(w.lostAt)
}

// current returns the latest reported leader (0: none) and term, and the
// channel closed at the next change after that report.
func (w *leaderWatch) current() (leader, term uint64, next <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now, w.term, w.ch
}

// lockedSM wraps the local state machine so that applying a batch and
// running the apply hooks happen under one lock that reads take shared: a
// read never sees a change whose watch events are not yet queued. It also
// runs the front doors' work at its place in the log (ApplyBarrier).
type lockedSM struct {
	*sm.StateMachine
	mu       *sync.RWMutex
	barriers []ApplyBarrier
	traced   bool // the data shard's: its applies are write stages (stagetrace)
	sizes    *byteSnapshots
}

func (l *lockedSM) Update(ents []dbsm.Entry) ([]dbsm.Entry, error) {
	if l.traced && stagetrace.On() && len(ents) > 0 {
		start := stagetrace.Now()
		defer func() {
			stagetrace.AddEvent(stagetrace.Event{Kind: stagetrace.Apply, T: start, T2: stagetrace.Now(), Index: ents[len(ents)-1].Index})
		}()
	}
	l.mu.Lock()
	out, err := barrierUpdate(l.StateMachine, l.barriers, ents)
	l.mu.Unlock()
	if err == nil {
		l.sizes.applied(ents)
	}
	return out, err
}

// snapshotEvents logs dragonboat's snapshot and compaction events: how a
// replica caught up (by snapshot or from the log) and how far the log was
// compacted is otherwise invisible. Callbacks run on dragonboat goroutines.
type snapshotEvents struct {
	log     zerolog.Logger
	leaders *leaderHub
}

func (e snapshotEvents) snapshot(msg string, info raftio.SnapshotInfo) {
	e.log.Info().Uint64("shard", info.ShardID).Uint64("replica_id", info.ReplicaID).Uint64("from", info.From).Uint64("index", info.Index).Msg(msg)
}

func (e snapshotEvents) SendSnapshotStarted(i raftio.SnapshotInfo)   { e.snapshot("sending snapshot", i) }
func (e snapshotEvents) SendSnapshotCompleted(i raftio.SnapshotInfo) { e.snapshot("snapshot sent", i) }
func (e snapshotEvents) SendSnapshotAborted(i raftio.SnapshotInfo)   { e.snapshot("snapshot aborted", i) }
func (e snapshotEvents) SnapshotReceived(i raftio.SnapshotInfo)      { e.snapshot("snapshot received", i) }

// SnapshotRecovered also runs at every start, with index 0 on an empty
// replica; the restart of a non-empty one logs its last snapshot's index.
func (e snapshotEvents) SnapshotRecovered(i raftio.SnapshotInfo) {
	if i.Index > 0 {
		e.snapshot("snapshot recovered", i)
		e.leaders.wake(i.ShardID)
	}
}

func (e snapshotEvents) LogCompacted(i raftio.EntryInfo) {
	e.log.Info().Uint64("shard", i.ShardID).Uint64("replica_id", i.ReplicaID).Uint64("index", i.Index).Msg("raft log compacted")
}

func (snapshotEvents) NodeHostShuttingDown()                       {}
func (snapshotEvents) NodeUnloaded(raftio.NodeInfo)                {}
func (snapshotEvents) NodeDeleted(raftio.NodeInfo)                 {}
func (snapshotEvents) NodeReady(raftio.NodeInfo)                   {}
func (snapshotEvents) MembershipChanged(raftio.NodeInfo)           {}
func (snapshotEvents) ConnectionEstablished(raftio.ConnectionInfo) {}
func (snapshotEvents) ConnectionFailed(raftio.ConnectionInfo)      {}
func (snapshotEvents) SnapshotCreated(raftio.SnapshotInfo)         {}
func (snapshotEvents) SnapshotCompacted(raftio.SnapshotInfo)       {}
func (snapshotEvents) LogDBCompacted(raftio.EntryInfo)             {}

var loggerOnce sync.Once

// routeDragonboatLogs sends dragonboat's logs through zerolog, at warning
// level and above: its info output is per-event noise for an operator.
func routeDragonboatLogs(log zerolog.Logger) {
	loggerOnce.Do(func() {
		dblogger.SetLoggerFactory(func(pkg string) dblogger.ILogger {
			return &raftLogger{log: log.With().Str("component", "raft."+pkg).Logger(), level: dblogger.WARNING}
		})
	})
}

type raftLogger struct {
	mu    sync.Mutex
	log   zerolog.Logger
	level dblogger.LogLevel
}

func (l *raftLogger) SetLevel(level dblogger.LogLevel) {
	l.mu.Lock()
	l.level = level
	l.mu.Unlock()
}

func (l *raftLogger) enabled(level dblogger.LogLevel) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return level <= l.level
}

func (l *raftLogger) Debugf(format string, args ...interface{}) {
	if l.enabled(dblogger.DEBUG) {
		l.log.Debug().Msgf(format, args...)
	}
}

func (l *raftLogger) Infof(format string, args ...interface{}) {
	if l.enabled(dblogger.INFO) {
		l.log.Info().Msgf(format, args...)
	}
}

// Warningf logs at info: dragonboat reports routine events (elections,
// connections) as warnings.
func (l *raftLogger) Warningf(format string, args ...interface{}) {
	if l.enabled(dblogger.WARNING) {
		l.log.Info().Msgf(format, args...)
	}
}

func (l *raftLogger) Errorf(format string, args ...interface{}) {
	if l.enabled(dblogger.ERROR) {
		l.log.Error().Msgf(format, args...)
	}
}

func (l *raftLogger) Panicf(format string, args ...interface{}) {
	// A node whose disk lost what it synced (its Raft log or its state)
	// says so and stops, in one line (refusal).
	if msg, ok := refusal(format, args...); ok {
		if hint := rebuildHint.Load(); hint != nil {
			msg += ". " + *hint
		}
		l.log.Error().Msg(msg)
		fmt.Fprintln(os.Stderr, "zkbridge: "+msg)
		exitProcess(1)
		return
	}
	l.log.Error().Msgf(format, args...)
	panic(fmt.Sprintf(format, args...))
}

// exitProcess ends the process on a Raft log that lost acknowledged
// entries; tests replace it.
var exitProcess = os.Exit

// rebuildHint is how this node is rebuilt from its peers (set by
// startRaft), for errors that can only be fixed that way.
var rebuildHint atomic.Pointer[string]

// heartbeatTicks is the leader's heartbeat interval in ticks: one tick,
// 20 ms, the interval it had as two ticks of 10 ms.
const heartbeatTicks = 1

// startRaft starts the NodeHost and the data shard's replica, and waits
// until the replica has opened its state machine. It returns the local
// state machine so reads can go to it directly.
func startRaft(cfg *config.Config, smCfg sm.Config, applyMu *sync.RWMutex, barriers []ApplyBarrier, fsyncObserver func(time.Duration), log zerolog.Logger) (*raftNode, *sm.StateMachine, error) {
	h, err := startHost(cfg, fsyncObserver, log)
	if err != nil {
		return nil, nil, err
	}
	members := map[uint64]dragonboat.Target{cfg.ReplicaID: cfg.PeerAddr}
	for id, addr := range cfg.Peers {
		members[id] = addr
	}
	r, store, err := h.startShard(cfg, shardSpec{id: dataShard, members: members, join: cfg.Join || cfg.Observer,
		observer: cfg.Observer, log: log}, smCfg, applyMu, barriers)
	if err != nil {
		h.nh.Close()
		return nil, nil, err
	}
	r.ownsHost = true
	return r, store, nil
}

// host is the one dragonboat NodeHost of a zkbridge node, which runs the
// replicas of every shard the node hosts over one Raft transport and one
// LogDB.
type host struct {
	nh      *dragonboat.NodeHost
	leaders *leaderHub
	log     zerolog.Logger
}

// startHost opens the Raft log directory (after the checks of its tails)
// and starts the NodeHost.
func startHost(cfg *config.Config, fsyncObserver func(time.Duration), log zerolog.Logger) (*host, error) {
	routeDragonboatLogs(log)
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if cfg.DataLogDir != "" {
		raftDir = cfg.DataLogDir
	}
	if err := os.MkdirAll(raftDir, 0o750); err != nil {
		return nil, fmt.Errorf("raft dir: %w", err)
	}
	steps := rebuildSteps(cfg)
	rebuildHint.Store(&steps)
	// A crash can leave a Raft log at the size logfs reserved for it; tan
	// would read the zeros as a broken record, so cut them first.
	trimmed, err := logfs.TrimReserved(raftDir)
	if err != nil {
		return nil, fmt.Errorf("raft log: %w", err)
	}
	for _, path := range trimmed {
		log.Info().Str("file", path).Msg("raft log: cut the reserved tail a crash left")
	}
	// A record that fails its checksum is refused here, in one line, rather
	// than by tan's panic once dragonboat reads it.
	if err := logfs.CheckTails(raftDir); err != nil {
		var corrupt *logfs.CorruptTailError
		if errors.As(err, &corrupt) {
			return nil, corruptLogError(cfg, corrupt)
		}
		return nil, fmt.Errorf("raft log: %w", err)
	}
	leaders := newLeaderHub(log.With().Str("component", "raft.leader").Logger())
	diskfull.SetLogger(log.With().Str("component", "disk").Logger())
	logFS := logfs.New(vfs.Default)
	if cfg.LogSyncDisabled {
		logFS.NoSync = true
		log.Warn().Str("dir", raftDir).Msg("raft log: writes are acknowledged without fsync (forceSync=no); a machine crash can lose acknowledged writes")
	}
	peerTLS, err := quorumTLS(*cfg, log.With().Str("component", "raft.transport").Logger())
	if err != nil {
		return nil, err
	}
	stagetrace.SetReplica(cfg.ReplicaID)
	var transport dbconfig.TransportFactory = peernet.Factory{Log: log.With().Str("component", "raft.transport").Logger(), TLS: peerTLS}
	if stagetrace.On() {
		transport = stagedTransportFactory{inner: transport}
		log.Warn().Str("env", stagetrace.Env).Msg("write stages are recorded for measurement (admin /debug/stages)")
	}
	nhc := dbconfig.NodeHostConfig{
		NodeHostDir:         raftDir,
		RTTMillisecond:      uint64(config.RaftTick / time.Millisecond),
		RaftAddress:         cfg.PeerAddr,
		ListenAddress:       cfg.PeerListenAddr,
		RaftEventListener:   leaders,
		SystemEventListener: snapshotEvents{log: log.With().Str("component", "raft.snapshot").Logger(), leaders: leaders},
		Expert: dbconfig.ExpertConfig{
			FS:               logFS,
			LogDB:            logDBConfig(),
			LogDBFactory:     timedLogDBFactory{inner: tan.Factory, observe: fsyncObserver},
			TransportFactory: transport,
		},
	}
	nh, err := dragonboat.NewNodeHost(nhc)
	if err != nil {
		return nil, fmt.Errorf("start raft node host at %s: %w", cfg.PeerAddr, err)
	}
	return &host{nh: nh, leaders: leaders, log: log}, nil
}

// shardSpec says which replica of which shard startShard starts.
type shardSpec struct {
	id uint64
	// members is the shard's initial membership, identical on every initial
	// member, used only the first time (a restart reads the stored one).
	members map[uint64]dragonboat.Target
	// join: the replica was added to a running shard (it is not among the
	// initial members); observer: it does not vote.
	join, observer bool
	// quiesce: an idle shard stops its heartbeats (tenants: a node runs
	// many shards, most of them idle at any time).
	quiesce bool
	log     zerolog.Logger
}

// startShard starts this node's replica of a shard and waits until the
// replica has opened its state machine, which it returns so reads can go
// to it directly.
func (h *host) startShard(cfg *config.Config, spec shardSpec, smCfg sm.Config, applyMu *sync.RWMutex, barriers []ApplyBarrier) (*raftNode, *sm.StateMachine, error) {
	nh := h.nh
	var local *sm.StateMachine
	ready := make(chan struct{})
	// The log behind a snapshot keeps 5× its interval, so a follower a
	// little behind catches up from the log rather than by a full snapshot;
	// sizes bounds it in bytes as well, never keeping more.
	overhead := 5 * cfg.SnapshotEntries
	sizes := newByteSnapshots(nh, spec.id, cfg.SnapshotBytes, overhead, spec.log)
	factory := func(shardID, replicaID uint64) dbsm.IOnDiskStateMachine {
		local = sm.New(smCfg)
		close(ready)
		return &lockedSM{StateMachine: local, mu: applyMu, barriers: barriers, traced: shardID == dataShard, sizes: sizes}
	}
	rc := dbconfig.Config{
		ShardID:             spec.id,
		ReplicaID:           cfg.ReplicaID,
		ElectionRTT:         uint64(cfg.ElectionTimeout / config.RaftTick),
		HeartbeatRTT:        heartbeatTicks,
		CheckQuorum:         true,
		PreVote:             true,
		SnapshotEntries:     cfg.SnapshotEntries,
		CompactionOverhead:  overhead,
		OrderedConfigChange: true,
		MaxInMemLogSize:     256 << 20,
		WaitReady:           true,
		Quiesce:             spec.quiesce,
	}
	members := spec.members
	// An observer is never bootstrapped: the leader adds it (static
	// observers, raft add-observer) and it joins.
	rc.IsNonVoting = spec.observer
	known := nh.HasNodeInfo(spec.id, cfg.ReplicaID)
	if known || spec.join {
		members = nil // restart: the bootstrap record is stored; join: the cluster's
	}
	watch := h.leaders.watch(spec.id, spec.log)
	if err := nh.StartOnDiskReplica(members, spec.join && !known, factory, rc); err != nil {
		h.leaders.forget(spec.id)
		return nil, nil, fmt.Errorf("start replica %d of shard %d: %w", cfg.ReplicaID, spec.id, err)
	}
	<-ready
	r := &raftNode{nh: nh, host: h, shard: spec.id, replicaID: cfg.ReplicaID, session: nh.GetNoOPSession(spec.id),
		log: spec.log, leaders: watch, election: cfg.ElectionTimeout}
	return r, local, nil
}

// logDBConfig is dragonboat's small-memory LogDB configuration with 1 MiB
// write buffers: the tan log store allocates one per shard slot (16) up
// front and only serializes an update into it (growing it when an update is
// larger), so 16 MiB each was 256 MiB of heap that also inflated the GC's
// target.
func logDBConfig() dbconfig.LogDBConfig {
	c := dbconfig.GetSmallMemLogDBConfig()
	c.KVWriteBufferSize = 1 << 20
	return c
}

// waitLeader blocks until the shard has a leader or ctx ends.
func (r *raftNode) waitLeader(ctx context.Context) error {
	for {
		if _, _, ok := r.leader(); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no raft leader elected: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// leader returns the current leader's replica ID and term.
func (r *raftNode) leader() (id, term uint64, ok bool) {
	id, term, ok, err := r.nh.GetLeaderID(r.shard)
	return id, term, ok && err == nil && id != 0
}

func (r *raftNode) isLeader() bool {
	id, _, ok := r.leader()
	return ok && id == r.replicaID
}

// propose submits cmd and calls done from another goroutine with the
// applied result or an error (then the outcome is unknown).
func (r *raftNode) propose(cmd *sm.Command, done func(*sm.Result, error)) {
	// While a write of this node waits for disk space, a new one would wait
	// behind it on the stalled log or state: it is refused at once (the
	// ZooKeeper door closes the connection, ConnectionLoss, and the client
	// moves to another server), never left to hang.
	if diskfull.Full() {
		go done(nil, fmt.Errorf("propose: %w", diskfull.ErrDiskFull))
		return
	}
	data := cmd.Encode()
	changed := r.leaders.changed()
	start := time.Now()
	rs, err := r.proposeOnce(data)
	if err != nil {
		go done(nil, fmt.Errorf("propose: %w", err))
		return
	}
	r.inflight.Add(int64(len(data)))
	go func() {
		res, err := r.await(changed, data, rs, retrySafe(cmd), abandonAfterFor(cmd))
		r.inflight.Add(-int64(len(data)))
		if err != nil {
			done(nil, err)
			return
		}
		r.noteLatency(time.Since(start))
		out, err := sm.DecodeResult(res.GetResult().Data)
		done(out, err)
	}()
}

// proposeOnce hands data to dragonboat, retrying while it is busy
// (SystemBusy: the proposal was not taken).
func (r *raftNode) proposeOnce(data []byte) (*dragonboat.RequestState, error) {
	for attempt := 0; ; attempt++ {
		rs, err := r.nh.Propose(r.session, data, proposalTimeout)
		if !errors.Is(err, dragonboat.ErrSystemBusy) || attempt >= 50 {
			return rs, err
		}
		time.Sleep(time.Millisecond * time.Duration(1+attempt))
	}
}

// A follower forwards a proposal to the leader in one message, which the
// leader drops when its receive queue is full (a peer that resumed after a
// pause floods it; dragonboat logs "dropped an incoming message") or the
// link is down; nobody is told, and the proposal used to wait its whole
// proposalTimeout. So a proposal without a result after proposalRetryAfter
// is proposed again when a second copy is harmless (retrySafe), the wait
// doubling up to maxProposalRetryAfter; the first result wins. One that
// cannot be repeated is given up after abandonAfter as outcome unknown
// (the ZooKeeper door answers that with ConnectionLoss). 500 ms is far
// above a healthy write's latency, so a copy is rare and then costs an
// entry that apply rejects.
const (
	proposalRetryAfter    = 500 * time.Millisecond
	maxProposalRetryAfter = 2 * time.Second
	maxProposalAttempts   = 8
	abandonAfter          = 3 * time.Second
	// droppedPoll: how often a proposal dropped for want of a leader
	// looks for one besides the leader change reports.
	droppedPoll = 20 * time.Millisecond
)

// abandonAfterFor is how long a proposal that cannot be repeated waits for
// its result: abandonAfter, except a migration's bulk load, whose one
// large entry may take long to apply on a loaded machine; it keeps the
// full proposalTimeout.
func abandonAfterFor(cmd *sm.Command) time.Duration {
	op := cmd.Op
	if l, ok := op.(*sm.WithinLimits); ok {
		op = l.Op // an import into a tenant with limits
	}
	switch op.(type) {
	case *sm.ImportNodes, *sm.ImportSessions:
		return proposalTimeout
	}
	return abandonAfter
}

// retrySafe reports whether applying cmd twice is harmless, so a proposal
// whose message may have been dropped can be repeated: a session write
// carries (conn, seq), and apply accepts only the seq after the last one
// applied, so a second copy is refused (out of order) after the first,
// and the first's result is the one delivered (results come in apply
// order). A session takeover and an expiry are idempotent; a second
// CreateSession leaves a session nobody holds, which expires after its
// timeout, as when a client gives up and reconnects.
//
// An activity report (TouchSessions) is not repeated: applied late, a copy
// would give its sessions a new deadline seconds after their clients went
// quiet, keeping them (and their ephemerals) alive past their timeout. A
// failed report's sessions are marked again, so the next one carries them.
func retrySafe(cmd *sm.Command) bool {
	switch cmd.Op.(type) {
	case *sm.TouchSessions:
		return false
	case *sm.SetSessionOwner, *sm.CreateSession:
		return true
	case *sm.CloseSession:
		return cmd.Session != 0
	}
	return cmd.Session != 0 && cmd.Seq != 0
}

// await waits for the first completed result of a proposal's attempts,
// proposing data again as retrySafe allows. Once the leader changes (or a
// snapshot is recovered) it stops repeating, runs catchUpAfterElection (a
// read index against the new leader), waits resultSettle more, then
// reports errOutcomeUnknown: the entry was lost, or its outcome is unknown.
func (r *raftNode) await(changed <-chan struct{}, data []byte, first *dragonboat.RequestState, retry bool, abandon time.Duration) (dragonboat.RequestResult, error) {
	leader0, term0, _ := r.leaders.current()
	wait := r.retryAfter()
	if !retry {
		wait = abandon
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// Nearly every proposal has one attempt and its result comes before
	// anything else happens: wait for it here, without the watcher
	// goroutine and channel below (one goroutine hand-off less per write,
	// issue 36). Anything else hands the first attempt to the general
	// path, which has not read its result yet (or, dropped for want of a
	// leader, has it in firstDropped).
	var firstDropped *dragonboat.RequestResult
	select {
	case res := <-first.ResultC():
		first.Release()
		if res.Completed() {
			return res, nil
		}
		if !retry || !res.Dropped() {
			if res.Dropped() {
				r.droppedNoLeader.Add(1)
			}
			return res, fmt.Errorf("proposal %s", requestOutcome(res))
		}
		firstDropped = &res
	case <-changed:
	case <-timer.C:
		// Fire again at once: the loop below retries or gives up.
		timer.Reset(0)
	}
	// Every attempt delivers exactly one result (dragonboat times requests
	// out), into a buffer large enough that none blocks after we return.
	results := make(chan dragonboat.RequestResult, maxProposalAttempts)
	pending, attempts := 0, 0
	watch := func(rs *dragonboat.RequestState) {
		pending++
		attempts++
		go func() {
			res := <-rs.ResultC()
			rs.Release()
			results <- res
		}()
	}
	// sawNoLeader: a report of no leader came since leader0 and term0.
	sawNoLeader := false
	// dropped is the last attempt's result while every attempt was
	// dropped for want of a leader and the proposal waits for one
	// (droppedSince: when the first was), to be proposed again.
	var dropped *dragonboat.RequestResult
	var droppedSince time.Time
	// A proposal dropped because this replica knew no leader (a candidate,
	// or a follower that lost its leader: mid-election) never entered any
	// log, so proposing it again once a leader is known is safe; failing
	// it closed the client's connection (ConnectionLoss), and the client
	// reconnected, perhaps to the very node that had stopped, while the
	// new leader was already taking writes (issue 34). It waits for a
	// leader only while an election among reachable peers could still be
	// under way (the replica leaderless for less than two election
	// timeouts, the longest randomised one) and at most abandonAfter, then
	// fails as before (not applied): a node cut off from the majority
	// (an isolated leader or follower) stays leaderless, and failing
	// sends its clients to a node that can serve them (waiting for the
	// node to send them away after leaderLostAfter made an isolated
	// leader's clients wait about a second more).
	waitForLeader := func(res dragonboat.RequestResult) bool {
		if res.Dropped() {
			r.droppedNoLeader.Add(1)
		}
		if !retry || !res.Dropped() || attempts >= maxProposalAttempts {
			return false
		}
		if dropped == nil {
			droppedSince = time.Now()
		}
		if r.leaderWaitOver(droppedSince) {
			return false
		}
		dropped = &res
		timer.Reset(droppedPoll)
		return true
	}
	// proposeDropped proposes a dropped proposal again if a leader is
	// known; false: still none (or dragonboat refused it: polled again).
	proposeDropped := func() bool {
		id, term, next := r.leaders.current()
		changed = next
		if id == 0 {
			return false
		}
		rs, err := r.proposeOnce(data)
		if err != nil {
			r.log.Debug().Err(err).Msg("proposing a dropped proposal again failed")
			return false
		}
		r.log.Debug().Int("attempt", attempts+1).Uint64("leader", id).Uint64("term", term).Msg("proposal dropped for want of a leader; proposing it to the leader now known")
		dropped, leader0, term0, sawNoLeader = nil, id, term, false
		watch(rs)
		timer.Reset(r.retryAfter())
		return true
	}
	if firstDropped != nil {
		attempts = 1
		if !waitForLeader(*firstDropped) {
			return *firstDropped, fmt.Errorf("proposal %s", requestOutcome(*firstDropped))
		}
	} else {
		watch(first)
	}
	for {
		select {
		case res := <-results:
			pending--
			if res.Completed() {
				return res, nil
			}
			if pending == 0 && !waitForLeader(res) {
				return res, fmt.Errorf("proposal %s", requestOutcome(res))
			}
		case <-changed:
			if dropped != nil {
				if !proposeDropped() {
					// Still no leader, or refused: poll for one.
					timer.Reset(droppedPoll)
				}
				continue
			}
			// A new leader (a new term) never saw a proposal its deposed
			// predecessor took and lost: one that may be repeated goes to
			// the new leader as soon as it is known, instead of settling
			// as outcome unknown (the door then closes the connection and
			// the client reconnects and tries again) or waiting out
			// retryAfter: a leader pause cost writes the election plus up
			// to half a second more (issue 34). A copy of a proposal that
			// did survive is refused by apply (retrySafe). A snapshot
			// recovery (a leader of the same term) still settles.
			id, term, next := r.leaders.current()
			if !retry || attempts == maxProposalAttempts {
				return r.settleAfterLeaderChange(results, pending)
			}
			if id == 0 {
				// Mid-election (a PreVote reports no leader in the old
				// term): propose once the winner is known.
				changed, sawNoLeader = next, true
				continue
			}
			if term == term0 && id == leader0 && sawNoLeader {
				// A PreVote that came to nothing: the same leader in the
				// same term (none can be elected twice in one term), so
				// nothing was lost with a leader change. Settling here
				// answered ConnectionLoss once the real election, soon
				// after, was over (a host stall: every node's election
				// ticks at once, issue 34); a message lost meanwhile is
				// proposed again when the timer fires.
				changed, sawNoLeader = next, false
				continue
			}
			if term == term0 {
				return r.settleAfterLeaderChange(results, pending)
			}
			changed, term0, leader0, sawNoLeader = next, term, id, false
			rs, err := r.proposeOnce(data)
			if err != nil {
				r.log.Debug().Err(err).Msg("proposing to the new leader failed")
				continue
			}
			r.log.Debug().Int("attempt", attempts+1).Uint64("leader", id).Uint64("term", term).Msg("leader changed under a proposal; proposing it to the new leader")
			watch(rs)
			timer.Reset(r.retryAfter())
		case <-timer.C:
			if retry && r.cutOff() {
				// Cut off, this node sends its clients away (sessions.go):
				// the connection this proposal came from is closed or
				// closing, its client told ConnectionLoss. A copy proposed
				// later, to whichever leader comes next, could apply after
				// that client went on from another node (a cut-off
				// leader's create applied 3 s after its connection closed,
				// once the partition healed).
				r.log.Warn().Int("attempts", attempts).Msg("no leader for long: not proposing again (outcome unknown)")
				return dragonboat.RequestResult{}, errProposalUnanswered
			}
			if dropped != nil {
				if proposeDropped() {
					continue
				}
				if r.leaderWaitOver(droppedSince) {
					return *dropped, fmt.Errorf("proposal %s", requestOutcome(*dropped))
				}
				timer.Reset(droppedPoll)
				continue
			}
			if retry && r.isLeader() {
				// Still the leader (a change would have fired changed): its
				// own proposal is in its log or was reported dropped, never
				// lost unnoticed as a forwarded message can be, so a copy
				// would only be one more entry to replicate and reject. On a
				// slow log (multis of 1,000 setData, 130 KB each) the copies
				// fed the slowness; dragonboat's own timeout still ends it.
				wait = min(2*wait, max(maxProposalRetryAfter, r.retryAfter()))
				timer.Reset(wait)
				continue
			}
			if !retry || attempts == maxProposalAttempts {
				r.log.Warn().Int("attempts", attempts).Msg("proposal unanswered; giving up (outcome unknown)")
				return dragonboat.RequestResult{}, errProposalUnanswered
			}
			rs, err := r.proposeOnce(data)
			if err != nil {
				r.log.Debug().Err(err).Msg("proposing an unanswered proposal again failed")
			} else {
				r.log.Info().Int("attempt", attempts+1).Dur("waited", wait).Msg("proposal unanswered (its message may have been dropped); proposing it again")
				watch(rs)
			}
			wait = min(2*wait, max(maxProposalRetryAfter, r.retryAfter()))
			timer.Reset(wait)
		}
	}
}

// leaderWaitOver reports whether a proposal dropped for want of a leader
// since droppedSince has waited for one long enough (await).
func (r *raftNode) leaderWaitOver(droppedSince time.Time) bool {
	return time.Since(droppedSince) > abandonAfter || r.cutOff()
}

// cutOff reports whether this replica has been without a leader longer
// than an election among reachable peers takes (two election timeouts,
// the longest randomised one): it is cut off from the majority.
func (r *raftNode) cutOff() bool {
	return r.leaders.leaderlessFor() > 2*r.election
}

// settleAfterLeaderChange ends a wait the leader changed under: the
// attempts still pending are decided once this replica has caught up with
// the new leader, and resultSettle later.
func (r *raftNode) settleAfterLeaderChange(results <-chan dragonboat.RequestResult, pending int) (dragonboat.RequestResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), proposalTimeout)
	defer cancel()
	confirmed := make(chan struct{})
	go func() {
		_ = r.catchUpAfterElection(ctx) // failed or not, the wait below ends
		close(confirmed)
	}()
	var settle <-chan time.Time
	for pending > 0 {
		select {
		case res := <-results:
			pending--
			if res.Completed() {
				return res, nil
			}
		case <-confirmed:
			confirmed = nil
			t := time.NewTimer(resultSettle)
			defer t.Stop()
			settle = t.C
		case <-settle:
			return dragonboat.RequestResult{}, errOutcomeUnknown
		}
	}
	return dragonboat.RequestResult{}, errOutcomeUnknown
}

// errProposalUnanswered: no attempt of a proposal was answered in time;
// its message was probably dropped, but it may still apply.
var errProposalUnanswered = fmt.Errorf("proposal unanswered (its message may have been dropped): %w", errOutcomeUnknown)

// errOutcomeUnknown: the leader changed (or a snapshot replaced the local
// state) under a proposal, which did not complete once this replica caught
// up with the new leader, or could not catch up.
var errOutcomeUnknown = errors.New("proposal outcome unknown: the leader changed or a snapshot replaced the local state")

// proposeSync proposes cmd and waits for its result.
func (r *raftNode) proposeSync(cmd *sm.Command) (*sm.Result, error) {
	type answer struct {
		res *sm.Result
		err error
	}
	ch := make(chan answer, 1)
	r.propose(cmd, func(res *sm.Result, err error) { ch <- answer{res, err} })
	a := <-ch
	return a.res, a.err
}

// Dragonboat sends a read index request, and the leader its answer, once.
// The transport drops a message to a peer whose connection is down or whose
// circuit breaker is open (for up to ~1.5 s after a failed dial: a replica
// just added, dialed before it listened; a link that dropped), and a leader
// drops requests it cannot serve yet; the follower is not told and the read
// waits for its whole timeout. A read changes nothing, so one unanswered is
// asked again after readRetryAfter (doubling to maxReadRetryAfter), earlier
// attempts still in flight: the first answer wins. (Dragonboat batches the
// read indexes of a step into one, so a retry costs little.)
const (
	readRetryAfter    = 200 * time.Millisecond
	maxReadRetryAfter = 500 * time.Millisecond
	maxReadAttempts   = 20
)

// retryRead runs attempt until one succeeds, one fails with an error final
// says retrying cannot help, or ctx ends (then the last error is returned).
func retryRead[T any](ctx context.Context, attempt func(context.Context) (T, error), final func(error) bool) (T, error) {
	return retryReadFrom(ctx, readRetryAfter, attempt, final, nil)
}

// retryReadFrom is retryRead asking again first after wait. With leaders,
// a new leader is asked soon after it is known (firstRetryAfterElection),
// the backoff starting afresh: a read index lost with a paused leader, or
// dropped mid-election, otherwise waited out the backoff (a sync answered
// 600 ms after the pause began, the new leader elected at 300, issue 34).
func retryReadFrom[T any](ctx context.Context, wait time.Duration, attempt func(context.Context) (T, error), final func(error) bool, leaders *leaderWatch) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the attempts still running give up
	type outcome struct {
		v   T
		err error
	}
	results := make(chan outcome, maxReadAttempts)
	var zero T
	var last error
	next := time.NewTimer(0)
	defer next.Stop()
	var changed <-chan struct{} // nil without leaders: never fires
	if leaders != nil {
		_, _, changed = leaders.current()
	}
	started, running := 0, 0
	for {
		select {
		case <-changed:
			id, _, after := leaders.current()
			changed = after
			if id != 0 {
				next.Reset(firstRetryAfterElection)
				wait = 2 * firstRetryAfterElection
			}
		case <-next.C:
			if started == maxReadAttempts {
				continue
			}
			started++
			running++
			go func() { v, err := attempt(ctx); results <- outcome{v, err} }()
			next.Reset(wait)
			wait = min(2*wait, maxReadRetryAfter)
		case o := <-results:
			running--
			if o.err == nil || final(o.err) {
				return o.v, o.err
			}
			last = o.err
			if running == 0 && started == maxReadAttempts {
				return zero, last
			}
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return zero, last
		}
	}
}

// catchUp returns once the local replica applied everything the leader had
// committed when asked, or ctx ends.
func (r *raftNode) catchUp(ctx context.Context) error {
	_, err := retryReadFrom(ctx, readRetryAfter, r.readIndexOnce, func(err error) bool { return !errors.Is(err, errReadRetry) }, r.leaders)
	return err
}

// catchUpAfterElection is catchUp for a proposal caught in a leader change.
// Mid-election a read index is dropped, and a new leader drops it until it
// has committed an entry of its term, a few milliseconds after it won: so
// it waits for a leader, then asks again soon (firstRetryAfterElection)
// rather than after readRetryAfter.
func (r *raftNode) catchUpAfterElection(ctx context.Context) error {
	if err := r.waitLeader(ctx); err != nil {
		return err
	}
	_, err := retryReadFrom(ctx, firstRetryAfterElection, r.readIndexOnce, func(err error) bool { return !errors.Is(err, errReadRetry) }, r.leaders)
	return err
}

const firstRetryAfterElection = 20 * time.Millisecond

// readIndex confirms with the leader that the local replica has applied
// everything committed so far, then calls done.
func (r *raftNode) readIndex(done func(error)) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), proposalTimeout)
		defer cancel()
		done(r.catchUp(ctx))
	}()
}

// errReadRetry marks a read index outcome worth asking again.
var errReadRetry = errors.New("asked again")

// readIndexOnce is one read index attempt, bounded by ctx.
func (r *raftNode) readIndexOnce(ctx context.Context) (struct{}, error) {
	deadline, _ := ctx.Deadline()
	rs, err := r.nh.ReadIndex(r.shard, time.Until(deadline))
	switch {
	case errors.Is(err, dragonboat.ErrSystemBusy) || errors.Is(err, dragonboat.ErrShardNotReady) ||
		errors.Is(err, dragonboat.ErrTimeoutTooSmall):
		return struct{}{}, fmt.Errorf("read index: %w (%w)", err, errReadRetry)
	case err != nil:
		return struct{}{}, fmt.Errorf("read index: %w", err)
	}
	select {
	case res := <-rs.ResultC():
		rs.Release()
		switch {
		case res.Completed():
			return struct{}{}, nil
		case res.Terminated() || res.Rejected():
			return struct{}{}, fmt.Errorf("read index %s", requestOutcome(res))
		}
		return struct{}{}, fmt.Errorf("read index %s (%w)", requestOutcome(res), errReadRetry)
	case <-ctx.Done():
		// Another attempt answered, or time is up; dragonboat's own timeout
		// ends this request (its state is not released: a result may come).
		return struct{}{}, fmt.Errorf("read index timed out (%w)", errReadRetry)
	}
}

func requestOutcome(res dragonboat.RequestResult) string {
	switch {
	case res.Timeout():
		return "timed out"
	case res.Rejected():
		return "rejected"
	case res.Terminated():
		return "terminated (shard closed)"
	case res.Dropped():
		return "dropped (no leader)"
	case res.Aborted():
		return "aborted"
	}
	return "failed"
}

func (r *raftNode) status() RaftState {
	id, term, ok := r.leader()
	return RaftState{LeaderID: id, Term: term, HasLeader: ok, IsLeader: ok && id == r.replicaID,
		ReplicaID: r.replicaID, RaftAddress: r.nh.RaftAddress(), ProposalsDroppedNoLeader: r.droppedNoLeader.Load()}
}

// commitIndex is the commit index of this replica's last persisted Raft
// state (0 if the log cannot be read).
func (r *raftNode) commitIndex() uint64 {
	lr, err := r.nh.GetLogReader(r.shard)
	if err != nil {
		return 0
	}
	st, _ := lr.NodeState()
	return st.Commit
}

// close stops the replica; the default shard's closes the whole NodeHost
// (every tenant's replica with it).
func (r *raftNode) close() {
	if r.ownsHost {
		r.nh.Close()
		return
	}
	if err := r.nh.StopShard(r.shard); err != nil && !errors.Is(err, dragonboat.ErrShardNotFound) && !errors.Is(err, dragonboat.ErrClosed) {
		r.log.Warn().Err(err).Msg("stop the shard's replica")
	}
	r.host.leaders.forget(r.shard)
}

// writeHealthMetrics dumps dragonboat's own metrics (when enabled).
func writeHealthMetrics(w io.Writer) { dragonboat.WriteHealthMetrics(w) }

// timedLogDBFactory wraps a LogDB factory to time every SaveRaftState: the
// Raft log write and its fsync, the durability point of every write. Its
// Name is the wrapped one's, which dragonboat records in the data dir.
type timedLogDBFactory struct {
	inner   dbconfig.LogDBFactory
	observe func(time.Duration)
}

func (f timedLogDBFactory) Create(c dbconfig.NodeHostConfig, cb dbconfig.LogDBCallback, dirs, wals []string) (raftio.ILogDB, error) {
	db, err := f.inner.Create(c, cb, dirs, wals)
	if err != nil {
		return nil, err
	}
	return &timedLogDB{ILogDB: db, observe: f.observe, cache: newEntryCache()}, nil
}

func (f timedLogDBFactory) Name() string { return f.inner.Name() }

type timedLogDB struct {
	raftio.ILogDB
	observe func(time.Duration)
	cache   *entryCache // recent entries, for a follower's catch-up (entrycache.go)
	writes  replicaWriteLocks
	mu      sync.Mutex
	// state is the Raft state (term, vote, commit) last saved, per replica.
	state map[raftio.NodeInfo]raftpb.State
}

// SaveRaftState fills in the unchanged state of every update that leaves
// it out, saves them and times the save when it syncs.
//
// Dragonboat leaves an update's State empty when it did not change. The
// tan log store keeps the state of the last update it wrote, an empty one
// included, and syncs an update whose term or vote differs from it. So
// after an update of new entries alone (state unchanged, so empty), the
// next update that only moves the commit index looked like a new term and
// paid an fsync that nothing needs: one more fsync on the leader's step
// worker per write, which the next proposal queued behind. Restating the
// unchanged state writes the same value the store already holds.
func (t *timedLogDB) SaveRaftState(updates []raftpb.Update, shardID uint64) error {
	updates, sync := t.withState(updates)
	var traceStart int64
	if stagetrace.On() {
		traceStart = stagetrace.Now()
	}
	unlock := t.writes.lockUpdates(updates)
	start := time.Now()
	err := t.ILogDB.SaveRaftState(updates, shardID)
	unlock()
	if sync {
		t.observe(time.Since(start))
	}
	if traceStart != 0 {
		traceSave(updates, traceStart, stagetrace.Now())
	}
	if err == nil {
		t.cache.saved(updates)
	}
	return err
}

// IterateEntries answers from the entry cache when it can. A range that
// starts below the cache is read from the store up to the cache's head
// once and joins the cache (entrycache.go, found 17), when it fits.
func (t *timedLogDB) IterateEntries(ents []raftpb.Entry, size, shardID, replicaID, low, high, maxSize uint64) ([]raftpb.Entry, uint64, error) {
	key := raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID}
	if out, sz, ok := t.cache.iterate(ents, size, key, low, high, maxSize); ok {
		return out, sz, nil
	}
	if head, mark, space, ok := t.cache.below(key, low); ok && (len(ents) == 0 || ents[len(ents)-1].Index+1 == low) {
		gap, _, err := t.ILogDB.IterateEntries(nil, 0, shardID, replicaID, low, head, space)
		if err == nil && t.cache.prepend(key, gap, mark) {
			if out, sz, ok := t.cache.iterate(ents, size, key, low, high, maxSize); ok {
				return out, sz, nil
			}
		}
	}
	return t.ILogDB.IterateEntries(ents, size, shardID, replicaID, low, high, maxSize)
}

func (t *timedLogDB) RemoveEntriesTo(shardID, replicaID, index uint64) error {
	t.cache.removedTo(raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID}, index)
	defer t.writes.lock(shardID, replicaID)()
	return t.ILogDB.RemoveEntriesTo(shardID, replicaID, index)
}

// SaveSnapshots records snapshots, each under its replica's write lock.
func (t *timedLogDB) SaveSnapshots(updates []raftpb.Update) error {
	defer t.writes.lockUpdates(updates)()
	return t.ILogDB.SaveSnapshots(updates)
}

func (t *timedLogDB) RemoveNodeData(shardID, replicaID uint64) error {
	t.cache.forget(raftio.NodeInfo{ShardID: shardID, ReplicaID: replicaID})
	defer t.writes.lock(shardID, replicaID)()
	return t.ILogDB.RemoveNodeData(shardID, replicaID)
}

func (t *timedLogDB) ImportSnapshot(ss raftpb.Snapshot, replicaID uint64) error {
	t.cache.forget(raftio.NodeInfo{ShardID: ss.ShardID, ReplicaID: replicaID})
	defer t.writes.lock(ss.ShardID, replicaID)()
	return t.ILogDB.ImportSnapshot(ss, replicaID)
}

// withState returns updates with every empty State replaced by the
// replica's last saved one (a copy when any is replaced, the caller's
// slice is dragonboat's), and whether the store syncs them: new entries, a
// snapshot, or a new term or vote. A save without a sync (the commit index
// moving on) is not an fsync time; ZooKeeper's fsynctime counts only log
// syncs.
func (t *timedLogDB) withState(updates []raftpb.Update) ([]raftpb.Update, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == nil {
		t.state = map[raftio.NodeInfo]raftpb.State{}
	}
	copied, sync := false, false
	for i, u := range updates {
		if len(u.EntriesToSave) > 0 || !raftpb.IsEmptySnapshot(u.Snapshot) {
			sync = true
		}
		key := raftio.NodeInfo{ShardID: u.ShardID, ReplicaID: u.ReplicaID}
		prev, known := t.state[key]
		if raftpb.IsEmptyState(u.State) {
			if !known {
				continue // after a restart, until the state first changes
			}
			if !copied {
				updates = append([]raftpb.Update(nil), updates...)
				copied = true
			}
			updates[i].State = prev
			continue
		}
		if !known || prev.Term != u.State.Term || prev.Vote != u.State.Vote {
			sync = true
		}
		t.state[key] = u.State
	}
	return updates, sync
}

// corruptLogError says what the corrupt Raft log is and how the member
// gets its state back from its peers: under a new replica id, because a
// member that forgot its log may also have forgotten its votes, and
// dragonboat does not take a removed replica id back.
func corruptLogError(cfg *config.Config, corrupt *logfs.CorruptTailError) error {
	return fmt.Errorf("%w; this node refuses to start on it. %s", corrupt, rebuildSteps(cfg))
}

// rebuildSteps are the commands that rebuild this member from its peers.
func rebuildSteps(cfg *config.Config) string {
	moves := fmt.Sprintf("mv %s %s.corrupt", cfg.DataDir, cfg.DataDir)
	if cfg.DataLogDir != "" {
		moves += fmt.Sprintf("; mv %s %s.corrupt", cfg.DataLogDir, cfg.DataLogDir)
	}
	return fmt.Sprintf("To rebuild this member from its peers, on a healthy member's admin address: "+
		"`zkbridge raft remove-voter --admin HEALTHY_ADMIN %d`, "+
		"then move this node's data aside (`%s`), "+
		"`zkbridge raft add-voter --admin HEALTHY_ADMIN NEW_ID %s` and start this node with "+
		"`--replica-id NEW_ID --join` and its other flags unchanged (NEW_ID: an id never used in the cluster)",
		cfg.ReplicaID, moves, cfg.PeerAddr)
}
