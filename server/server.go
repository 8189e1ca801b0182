package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// Server is one zkbridge node serving the ZooKeeper protocol.
type Server struct {
	cfg Config
	log zerolog.Logger

	node  *raftNode
	store *sm.StateMachine
	// applyMu is held exclusively while a batch of entries is applied and
	// its watch events are queued, and shared by every read: see lockedSM.
	applyMu sync.RWMutex

	watches  *watchManager
	sessions *sessionTracker
	cluster  clusterView
	metrics  *metrics

	// slots holds one token per request in flight on this node, up to
	// globalOutstandingLimit.
	slots chan struct{}
	// gate lists the connections whose deferred reads must run before
	// their next write is applied (deferred.go).
	gate *readGate

	connMu    sync.Mutex
	conns     map[*conn]struct{}
	bySession map[int64]map[*conn]struct{}
	perIP     map[string]int

	mask atomic.Int64 // gtmk/stmk trace mask
	ro   atomic.Bool  // serving read-only (see readonly.go)

	listener net.Listener
	admin    *http.Server
	started  time.Time
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// New prepares a node from cfg (Normalize and Validate are applied).
func New(cfg Config, log zerolog.Logger) (*Server, error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	srv := &Server{
		cfg:       cfg,
		log:       log,
		watches:   newWatchManager(),
		sessions:  newSessionTracker(),
		metrics:   newMetrics(),
		conns:     map[*conn]struct{}{},
		cluster:   clusterView{refresh: make(chan struct{}, 1)},
		bySession: map[int64]map[*conn]struct{}{},
		perIP:     map[string]int{},
		stop:      make(chan struct{}),
		slots:     make(chan struct{}, cfg.GlobalOutstandingLimit),
		gate:      newReadGate(),
	}
	srv.mask.Store(306) // ZooKeeper's default trace mask
	return srv, nil
}

// Config returns the node's effective configuration.
func (s *Server) Config() Config { return s.cfg }

// Start opens the state, starts Raft, waits for a leader and begins
// serving clients. It returns once the node serves.
func (s *Server) Start(ctx context.Context) error {
	s.started = time.Now()
	for _, w := range s.cfg.Warnings {
		s.log.Warn().Str("config", s.cfg.Source).Msg(w)
	}
	if err := os.MkdirAll(s.cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	// Bind the client port first: a port in use should fail fast, before
	// Raft opens its logs.
	ln, err := net.Listen("tcp", s.cfg.ClientAddr)
	if err != nil {
		return fmt.Errorf("listen on client address %s: %w (is another server running there? use --client-addr)", s.cfg.ClientAddr, err)
	}
	s.listener = ln
	smCfg := sm.Config{
		Dir:         s.cfg.DataDir + "/state",
		SuperDigest: s.cfg.SuperDigest,
		DisableTTL:  s.cfg.ExtendedTypesDisabled,
		Notify:      s.applied,
	}
	fsync := func(d time.Duration) { s.metrics.fsync.observe(float64(d.Microseconds()) / 1000) }
	node, store, err := startRaft(&s.cfg, smCfg, &s.applyMu, s.gate, fsync, s.log)
	if err != nil {
		ln.Close()
		return err
	}
	s.node, s.store = node, store
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := node.waitLeader(wctx); err != nil {
		s.shutdownRaft()
		ln.Close()
		return err
	}
	// An entry of our own through the state machine: until one is applied
	// after the last membership change, this replica's ReadIndex (sync)
	// cannot complete, because dragonboat counts only entries the on-disk
	// state machine applied.
	for {
		_, err := s.node.proposeSync(noopCommand())
		if err == nil {
			break
		}
		if wctx.Err() != nil { // a no-op is safe to retry until then
			s.shutdownRaft()
			ln.Close()
			return fmt.Errorf("first entry after start: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.loadSessions(); err != nil {
		s.shutdownRaft()
		ln.Close()
		return fmt.Errorf("load sessions: %w", err)
	}
	if !s.cfg.AdminDisabled {
		if err := s.startAdmin(); err != nil {
			s.shutdownRaft()
			ln.Close()
			return err
		}
	}
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.clusterLoop(s.stop) }()
	go func() { defer s.wg.Done(); s.touchLoop(s.stop) }()
	go func() { defer s.wg.Done(); s.acceptLoop() }()
	go func() { defer s.wg.Done(); s.expiryLoop(s.stop) }()
	go func() { defer s.wg.Done(); s.reaperLoop(s.stop) }()
	s.log.Info().Str("client_addr", ln.Addr().String()).Str("admin_addr", s.cfg.AdminAddr).
		Str("data_dir", s.cfg.DataDir).Uint64("replica_id", s.cfg.ReplicaID).
		Dur("startup", time.Since(s.started)).Msg("zkbridge serving")
	return nil
}

// ClientAddr returns the address the client listener is bound to.
func (s *Server) ClientAddr() string { return s.listener.Addr().String() }

func (s *Server) acceptLoop() {
	for {
		nc, err := s.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn().Err(err).Msg("accept failed")
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c := newConn(s, nc)
		if !s.registerConn(c) {
			c.log.Warn().Int("max_client_cnxns", s.cfg.MaxClientCnxns).Msg("too many connections from this address; closing")
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); c.serve() }()
	}
}

func (s *Server) registerConn(c *conn) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.cfg.MaxClientCnxns > 0 && s.perIP[c.ip] >= s.cfg.MaxClientCnxns {
		return false
	}
	s.perIP[c.ip]++
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) unregisterConn(c *conn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	if id := c.sessionID(); id != 0 {
		if set := s.bySession[id]; set != nil {
			delete(set, c)
			if len(set) == 0 {
				delete(s.bySession, id)
			}
		}
	}
}

func (s *Server) registerSession(c *conn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	set := s.bySession[c.sessionID()]
	if set == nil {
		set = map[*conn]struct{}{}
		s.bySession[c.sessionID()] = set
	}
	set[c] = struct{}{}
}

// kickSession closes this node's connections of a session other than keep
// (a client reconnected elsewhere, or its session ended).
func (s *Server) kickSession(id int64, keep *conn) {
	s.connMu.Lock()
	var victims []*conn
	for c := range s.bySession[id] {
		if c != keep && !c.closeRequested.Load() {
			victims = append(victims, c)
		}
	}
	s.connMu.Unlock()
	for _, c := range victims {
		c.log.Info().Str("session", sessionHex(id)).Msg("closing connection: its session moved or ended")
		c.closeAfterFlush()
		c.abortSoon()
	}
}

// snapshotConns returns the live connections.
func (s *Server) snapshotConns() []*conn {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

func (s *Server) sessionInfo(id int64) (*sm.SessionInfo, error) {
	v, err := s.store.View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return v.Session(id)
}

// lastZxid is the zxid of the last transaction applied locally.
func (s *Server) lastZxid() int64 { return s.store.LastZxid() }

// applied is the state machine's Notify hook: it runs on the apply path with
// applyMu held, after the batch is committed. It fires watches and closes
// the connections of sessions that ended.
func (s *Server) applied(results []*sm.Result) {
	for _, res := range results {
		s.metrics.recordApply(res)
		if len(res.Events) > 0 {
			s.fireEvents(res.Events)
		}
		if res.Session != 0 && res.Timeout > 0 && res.Err == 0 {
			// A session created or moved anywhere: every node tracks it, so a
			// new leader already knows its deadline.
			s.sessions.add(res.Session, res.Timeout)
		}
		if res.DirectoryChanged {
			s.refreshSoon()
		}
		for _, id := range res.Touched {
			s.sessions.refresh(id)
		}
		if id := res.ClosedSession; id != 0 {
			s.log.Info().Str("session", sessionHex(id)).Msg("session closed")
			s.sessions.remove(id)
			s.kickSession(id, nil)
		}
	}
}

// fireEvents triggers the watches of one transaction's change events.
func (s *Server) fireEvents(events []sm.Event) {
	for _, ev := range events {
		s.watches.trigger(ev.Type, ev.Path, ev.ACL)
	}
}

// Stop stops accepting, lets in-flight replies leave, syncs the state and
// stops Raft. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		close(s.stop)
		if s.listener != nil {
			s.listener.Close()
		}
		if s.admin != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = s.admin.Shutdown(ctx)
			cancel()
		}
		// Finish in-flight requests: wait (bounded) until nothing is pending.
		deadline := time.Now().Add(5 * time.Second)
		for s.metrics.outstanding.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		for _, c := range s.snapshotConns() {
			c.closeAfterFlush()
			c.abortSoon()
		}
		s.shutdownRaft()
		s.wg.Wait()
		s.log.Info().Msg("zkbridge stopped")
	})
}

func (s *Server) shutdownRaft() {
	if s.store != nil {
		if err := s.store.Sync(); err != nil {
			s.log.Error().Err(err).Msg("final sync of the state failed")
		}
	}
	if s.node != nil {
		s.node.close()
	}
}

// reaperLoop is the leader's container and TTL reaper: it proposes guarded
// deletes, which apply re-checks, every ReaperInterval.
func (s *Server) reaperLoop(stop <-chan struct{}) {
	tick := time.NewTicker(s.cfg.ReaperInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if s.node.isLeader() {
				s.reap(now)
			}
		}
	}
}

// reapBatch bounds how many nodes one reaper pass deletes (ZooKeeper:
// znode.container.maxPerMinute, 10000).
const reapBatch = 10000

func (s *Server) reap(now time.Time) {
	v, err := s.store.View()
	if err != nil {
		return
	}
	containers, ttls, err := v.ReapCandidates(now.UnixMilli(), 0, reapBatch)
	v.Close()
	if err != nil {
		s.log.Warn().Err(err).Msg("reaper scan failed")
		return
	}
	for _, p := range containers {
		s.proposeReap(&sm.ReapContainer{Path: p}, now)
	}
	for _, p := range ttls {
		s.proposeReap(&sm.ReapTTL{Path: p}, now)
	}
}

func (s *Server) proposeReap(op sm.Op, now time.Time) {
	cmd := &sm.Command{Header: sm.Header{Time: now.UnixMilli()}, Op: op}
	res, err := s.node.proposeSync(cmd)
	if err != nil {
		s.log.Warn().Err(err).Msg("reaper proposal failed")
		return
	}
	if res.Err == zkproto.ErrOK {
		s.log.Debug().Interface("op", op).Msg("reaped")
	}
}

// noopCommand is an entry that changes nothing and consumes no zxid (a
// TouchSessions without sessions).
func noopCommand() *sm.Command {
	return &sm.Command{Header: sm.Header{Time: time.Now().UnixMilli()}, Op: &sm.TouchSessions{}}
}
