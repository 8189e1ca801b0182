package zk

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server/config"
	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
)

// Server is the ZooKeeper front door of one node: its client listener and
// connections, their request pipelines, watches and four-letter words.
type Server struct {
	cfg  config.Config
	log  zerolog.Logger
	node *node.Node

	watches *watchManager
	metrics *metrics

	// slots holds one token per request in flight on this door, up to
	// globalOutstandingLimit.
	slots chan struct{}
	// proposals bounds the bytes of writes in flight (backpressure.go).
	proposals *byteBudget
	// gate lists the connections whose deferred reads must run before
	// their next write is applied (deferred.go).
	gate *readGate

	connMu    sync.Mutex
	conns     map[*conn]struct{}
	bySession map[int64]map[*conn]struct{}
	perIP     map[string]int

	mask atomic.Int64 // gtmk/stmk trace mask
	ro   atomic.Bool  // serving read-only (see readonly.go)

	// dynamicConfig is /zookeeper/config as ZooKeeper renders it (config.go).
	dynamicConfig struct {
		sync.Mutex
		text  string
		mtime int64
		zxid  int64
	}

	listener net.Listener
	wg       sync.WaitGroup

	// sasl is the SASL and auth-enforcement setup (sasl.go).
	sasl saslState
	// throttle is the global connection rate limit (limits.go).
	throttle *connThrottle
	// tenantLimits are a tenant's quotas and rate limit (tenant.go).
	tenantLimits tenantLimits
	// identity selects tenants by TLS identity on this door's secure
	// port (identity.go).
	identity identityRouterRef
}

// New creates the door of node n and subscribes it to the node's applied
// changes, membership and leader changes. Call it before n.Start; cfg must
// be normalized and valid.
func New(cfg config.Config, n *node.Node, log zerolog.Logger) *Server {
	s := &Server{
		cfg:       cfg,
		log:       log,
		node:      n,
		watches:   newWatchManager(),
		metrics:   newMetrics(),
		conns:     map[*conn]struct{}{},
		bySession: map[int64]map[*conn]struct{}{},
		perIP:     map[string]int{},
		slots:     make(chan struct{}, requestSlots(cfg)),
		proposals: newByteBudget(proposalBudgetBytes),
		throttle:  newConnThrottle(cfg.Limits),
		gate:      newReadGate(),
	}
	s.mask.Store(306) // ZooKeeper's default trace mask
	s.initSASL()
	n.AddApplyBarrier(s.gate)
	n.Subscribe(node.Hooks{
		Applied:           s.applied,
		MembershipChanged: s.membershipChanged,
		LeaderLost:        s.leaderLost,
		LeaderBack:        s.leaveReadOnly,
	})
	return s
}

// Listen binds the client port. A port in use fails fast, before Raft
// opens its logs.
func (s *Server) Listen() error {
	ln, err := s.listenClients()
	if err != nil {
		return err
	}
	s.listener = ln
	return nil
}

// Addr returns the address the client listener is bound to.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Serve accepts clients until Close.
func (s *Server) Serve() {
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.acceptLoop() }()
}

// Close stops accepting, lets in-flight replies leave (bounded), then
// closes every connection. Wait waits for their goroutines.
func (s *Server) Close() {
	if s.listener != nil {
		s.listener.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.metrics.outstanding.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range s.snapshotConns() {
		c.closeAfterFlush()
		c.abortSoon()
	}
}

// Wait blocks until every connection's goroutines have ended.
func (s *Server) Wait() { s.wg.Wait() }

// Connections is the number of open client connections.
func (s *Server) Connections() int { return len(s.snapshotConns()) }

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
	key := c.cnxnKey()
	if s.cfg.MaxClientCnxns > 0 && s.perIP[key] >= s.cfg.MaxClientCnxns {
		return false
	}
	s.perIP[key]++
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
	key := c.cnxnKey()
	if s.perIP[key]--; s.perIP[key] <= 0 {
		delete(s.perIP, key)
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

// kickSession closes this door's connections of a session other than keep
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

// lastZxid is the zxid of the last transaction applied locally.
func (s *Server) lastZxid() int64 { return s.node.LastZxid() }

// applied is the node's Applied hook: it runs on the apply path with the
// apply lock held, after the batch is committed. It fires watches and
// closes the connections of sessions that ended.
func (s *Server) applied(results []*sm.Result) {
	for _, res := range results {
		for _, ev := range res.Events {
			s.watches.trigger(ev.Type, ev.Path, ev.ACL)
		}
		if id := res.ClosedSession; id != 0 {
			s.kickSession(id, nil)
		}
	}
}

// leaderLost is the node's LeaderLost hook: without a leader for longer
// than an election, the door serves read-only (if enabled) and closes its
// other connections so that those clients fail over to a node that can
// serve them, as those of a ZooKeeper follower that lost its leader do.
func (s *Server) leaderLost(without time.Duration) {
	s.enterReadOnly()
	var conns []*conn
	for _, c := range s.snapshotConns() {
		if !c.readOnly.Load() {
			conns = append(conns, c)
		}
	}
	if len(conns) > 0 {
		s.log.Warn().Int("connections", len(conns)).Dur("without_leader", without).
			Msg("no Raft leader: closing client connections so they fail over")
	}
	for _, c := range conns {
		c.abort()
	}
}
