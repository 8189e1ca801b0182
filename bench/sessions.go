package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The sessions workload holds Connections idle sessions that ping the way
// ZooKeeper's Java client does (when idle for a third of the negotiated
// timeout), measures the ping round trip, and then, with StormAddr set,
// runs a reconnect storm: the Hook's "storm" phase kills the server at
// StormAddr, every session it held reconnects to another address with its
// session id and password (after a random pause of up to
// ReconnectJitter, as the Java client waits up to 1 s), and the run
// measures how long until every one is resumed and how many expired.
//
// A process can hold no more connections than its open-file limit, so a
// run of more sessions than one process may hold is split over child
// processes of the same binary (Config.ChildCommand), each holding a share
// and driven over its stdin and stdout.

// sessionsChildEnv carries a child's share, as JSON, to the child.
const sessionsChildEnv = "ZKBRIDGE_BENCH_SESSIONS_CHILD"

// SessionsResult is what the sessions workload measured.
type SessionsResult struct {
	Sessions  int     `json:"sessions"`   // sessions held when the measurement started
	Processes int     `json:"processes"`  // load-generator processes holding them
	OpenS     float64 `json:"open_s"`     // time to open all of them
	IntervalS float64 `json:"ping_every"` // seconds between a session's pings
	// PerNode: RSS growth of each server process (ServerPIDs, in Addrs
	// order) from before the sessions were opened to after, per session it
	// holds.
	PerNode []NodeSessions `json:"per_node,omitempty"`
	// The storm (StormAddr set).
	StormAddr string `json:"storm_addr,omitempty"`
	// Before the storm: connections that failed while only pinging (a
	// server or the load generator starved past the timeout) and sessions
	// that expired then.
	LostBeforeStorm    int `json:"lost_before_storm"`
	ExpiredBeforeStorm int `json:"expired_before_storm"`
	// From the start, the storm included:
	Lost        int     `json:"lost"`           // sessions whose connection failed
	Resumed     int     `json:"resumed"`        // reconnected to another server, session intact
	Expired     int     `json:"expired"`        // the server said the session was gone
	Unresolved  int     `json:"unresolved"`     // neither within StormWait
	StormS      float64 `json:"storm_resume_s"` // from the kill to the last session resumed
	StormKilled bool    `json:"storm_killed"`   // the storm hook ran and succeeded
}

// NodeSessions is one server's share of the sessions and its memory.
type NodeSessions struct {
	Addr            string  `json:"addr"`
	PID             int     `json:"pid"`
	Sessions        int     `json:"sessions"`
	RSSBeforeMB     float64 `json:"rss_before_mb"`
	RSSAfterMB      float64 `json:"rss_after_mb"`
	RSSPerSessionKB float64 `json:"rss_per_session_kb"`
}

// sessionsShare is one process's part of a sessions run.
type sessionsShare struct {
	Addrs           []string      `json:"addrs"`
	First           int           `json:"first"` // the share's first session (its index picks the server)
	Count           int           `json:"count"`
	SessionTimeout  time.Duration `json:"session_timeout"`
	Timeout         time.Duration `json:"timeout"`
	StormAddr       string        `json:"storm_addr"`
	StormWait       time.Duration `json:"storm_wait"`
	ReconnectJitter time.Duration `json:"reconnect_jitter"`
}

// shareReport is what a share reports at the end.
type shareReport struct {
	Pings            Histogram `json:"pings"`
	Resumes          Histogram `json:"resumes"`
	PingTimeouts     int64     `json:"ping_timeouts"`
	LostBefore       int       `json:"lost_before_storm"`
	ExpiredBefore    int       `json:"expired_before_storm"`
	Lost             int       `json:"lost"`
	Resumed          int       `json:"resumed"`
	Expired          int       `json:"expired"`
	Unresolved       int       `json:"unresolved"`
	LastResumedUnixN int64     `json:"last_resumed_unix_ns"`
	Interval         float64   `json:"interval_s"`
	Err              string    `json:"error,omitempty"`
}

// sessionGroup holds one share's sessions.
type sessionGroup struct {
	share     sessionsShare
	sessions  []*heldSession
	measuring atomic.Bool // record pings
	stopping  atomic.Bool // no more reconnects: the run is ending

	mu          sync.Mutex // guards what follows
	pings       Histogram
	resumes     Histogram
	pingLate    int64
	lost        int
	lostBefore  int // lost and expired when the storm began
	expBefore   int
	resumed     int
	expired     int
	lastResumed time.Time
	interval    time.Duration
	changed     chan struct{} // signalled on every loss and resolution
}

// heldSession is one session and its current connection.
type heldSession struct {
	g        *sessionGroup
	idx      int
	addr     atomic.Int32 // index into share.Addrs of the server it is on
	id       int64
	passwd   []byte
	zxid     atomic.Int64
	timeout  time.Duration
	ncMu     sync.Mutex // guards nc against close
	nc       net.Conn
	pingSent atomic.Int64 // unix ns of the unanswered ping, 0 if none
	state    atomic.Int32 // sessionUp, sessionLost, sessionExpired
	onStorm  bool         // was on StormAddr when the storm began
	quit     chan struct{}
	done     chan struct{}
}

const (
	sessionUp int32 = iota
	sessionLost
	sessionExpired
)

// handshake opens (id 0) or resumes a session on addr. expired is true
// when the server answered that the session is gone.
func (s *heldSession) handshake(addr string, timeout time.Duration) (expired bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false, err
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	req := zkproto.ConnectRequest{LastZxidSeen: s.zxid.Load(), TimeOut: int32(s.g.share.SessionTimeout.Milliseconds()),
		SessionID: s.id, Passwd: s.passwd, HasReadOnly: true}
	if req.Passwd == nil {
		req.Passwd = make([]byte, zkproto.PasswordLength)
	}
	if err := zkproto.WriteFrame(nc, zkproto.Marshal(&req)); err != nil {
		nc.Close()
		return false, err
	}
	fr := zkproto.NewFrameReader(bufio.NewReaderSize(nc, 512), 0)
	frame, err := fr.Next()
	if err != nil {
		nc.Close()
		return false, err
	}
	var resp zkproto.ConnectResponse
	if err := zkproto.Unmarshal(frame, &resp); err != nil {
		nc.Close()
		return false, err
	}
	if resp.TimeOut <= 0 {
		nc.Close()
		return true, nil
	}
	_ = nc.SetDeadline(time.Time{})
	s.ncMu.Lock()
	s.id, s.passwd, s.timeout, s.nc = resp.SessionID, resp.Passwd, time.Duration(resp.TimeOut)*time.Millisecond, nc
	s.ncMu.Unlock()
	s.pingSent.Store(0)
	go s.read(fr, nc)
	return false, nil
}

// read consumes a connection's frames: ping replies are timed, the zxid
// of every reply is kept for a resume. It returns when the connection
// fails, and reports the loss.
func (s *heldSession) read(fr *zkproto.FrameReader, nc net.Conn) {
	for {
		frame, err := fr.Next()
		if err != nil {
			nc.Close()
			select {
			case s.done <- struct{}{}:
			case <-s.quit:
			}
			return
		}
		at := time.Now()
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if h.Decode(d) != nil {
			continue
		}
		if h.Zxid > 0 {
			s.zxid.Store(h.Zxid)
		}
		if h.Xid == zkproto.XidPing {
			if sent := s.pingSent.Swap(0); sent != 0 && s.g.measuring.Load() {
				s.g.mu.Lock()
				s.g.pings.Record(at.Sub(time.Unix(0, sent)))
				s.g.mu.Unlock()
			}
		}
	}
}

var pingFrame = func() []byte {
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.RequestHeader{Xid: zkproto.XidPing, Type: zkproto.OpPing}).Encode(&e)
	e.FinishFrame(off)
	return e.Bytes()
}()

// live pings the session every third of its timeout until the connection
// fails, then resumes it elsewhere, until the group stops.
func (s *heldSession) live(rng *rand.Rand) {
	g := s.g
	every := s.timeout / 3
	t := time.NewTimer(time.Duration(rng.Int64N(int64(every)) + 1))
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			if s.pingSent.Load() != 0 && g.measuring.Load() {
				g.mu.Lock()
				g.pingLate++ // the last ping is still unanswered a third of the timeout later
				g.mu.Unlock()
			}
			s.pingSent.Store(time.Now().UnixNano())
			_ = s.nc.SetWriteDeadline(time.Now().Add(every))
			_, _ = s.nc.Write(pingFrame) // a failed write shows up in the reader
			t.Reset(every)
		case <-s.done:
			if g.stopping.Load() {
				return
			}
			if !s.resume(rng) {
				return
			}
			t.Reset(every)
		}
	}
}

// resume reconnects a lost session to the other servers in turn, after
// a random pause as the Java client makes, until it is resumed, expired,
// or the group stops. It reports whether the session is up again.
func (s *heldSession) resume(rng *rand.Rand) bool {
	g := s.g
	lostAt := time.Now()
	s.state.Store(sessionLost)
	g.mu.Lock()
	g.lost++
	g.mu.Unlock()
	g.notify()
	if j := g.share.ReconnectJitter; j > 0 {
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(j)))):
		case <-s.quit:
			return false
		}
	}
	n := len(g.share.Addrs)
	for attempt := 1; ; attempt++ {
		select {
		case <-s.quit:
			return false
		default:
		}
		next := (int(s.addr.Load()) + 1) % n
		s.addr.Store(int32(next))
		expired, err := s.handshake(g.share.Addrs[next], g.share.Timeout)
		if expired {
			s.state.Store(sessionExpired)
			g.mu.Lock()
			g.expired++
			g.mu.Unlock()
			g.notify()
			return false
		}
		if err == nil {
			now := time.Now()
			s.state.Store(sessionUp)
			g.mu.Lock()
			g.resumed++
			g.resumes.Record(now.Sub(lostAt))
			if now.After(g.lastResumed) {
				g.lastResumed = now
			}
			g.mu.Unlock()
			g.notify()
			return true
		}
		if attempt%n == 0 { // every server refused: wait a little, as a client does
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.quit:
				return false
			}
		}
	}
}

func (g *sessionGroup) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// open establishes the share's sessions, a few handshakes at a time, and
// starts their ping loops.
func (g *sessionGroup) open() error {
	sh := g.share
	g.changed = make(chan struct{}, 1)
	g.sessions = make([]*heldSession, sh.Count)
	sem := make(chan struct{}, 32)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for i := range sh.Count {
		s := &heldSession{g: g, idx: sh.First + i, quit: make(chan struct{}), done: make(chan struct{}, 1)}
		s.addr.Store(int32((sh.First + i) % len(sh.Addrs)))
		g.sessions[i] = s
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var err error
			for try := 0; try < 3; try++ { // a handshake lost in a burst is retried
				var expired bool
				if expired, err = s.handshake(sh.Addrs[s.addr.Load()], sh.Timeout); err == nil && !expired {
					return
				}
				if err == nil {
					err = fmt.Errorf("no session")
				}
			}
			select {
			case errs <- fmt.Errorf("session %d on %s: %w", s.idx, sh.Addrs[s.addr.Load()], err):
			default:
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		g.close()
		return err
	default:
	}
	for _, s := range g.sessions {
		g.interval = s.timeout / 3
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(s.idx)))
		go s.live(rng)
	}
	return nil
}

// storm marks the sessions on StormAddr and waits, up to StormWait, until
// each of them has been lost and every lost session is resumed or expired.
func (g *sessionGroup) storm() {
	sh := g.share
	g.mu.Lock()
	g.lostBefore, g.expBefore = g.lost, g.expired
	g.mu.Unlock()
	if sh.StormAddr == "" {
		return
	}
	marked := 0
	for _, s := range g.sessions {
		if sh.Addrs[s.addr.Load()] == sh.StormAddr {
			s.onStorm = true
			marked++
		}
	}
	deadline := time.NewTimer(sh.StormWait)
	defer deadline.Stop()
	for {
		settled := true
		for _, s := range g.sessions {
			st := s.state.Load()
			if st == sessionLost || (s.onStorm && st == sessionUp && sh.Addrs[s.addr.Load()] == sh.StormAddr) {
				settled = false
				break
			}
		}
		if settled {
			return
		}
		select {
		case <-g.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline.C:
			return
		}
	}
}

func (g *sessionGroup) report() shareReport {
	g.mu.Lock()
	defer g.mu.Unlock()
	rep := shareReport{Pings: g.pings, Resumes: g.resumes, PingTimeouts: g.pingLate, Lost: g.lost,
		LostBefore: g.lostBefore, ExpiredBefore: g.expBefore,
		Resumed: g.resumed, Expired: g.expired, Interval: g.interval.Seconds()}
	if !g.lastResumed.IsZero() {
		rep.LastResumedUnixN = g.lastResumed.UnixNano()
	}
	for _, s := range g.sessions {
		if s.state.Load() == sessionLost {
			rep.Unresolved++
		}
	}
	return rep
}

// close ends every session politely (closeSession, not awaited) and the
// connections.
func (g *sessionGroup) close() {
	g.stopping.Store(true)
	var e zkproto.Encoder
	off := e.StartFrame()
	(&zkproto.RequestHeader{Xid: 1 << 30, Type: zkproto.OpCloseSession}).Encode(&e)
	e.FinishFrame(off)
	for _, s := range g.sessions {
		if s == nil {
			continue
		}
		close(s.quit)
		s.ncMu.Lock()
		if s.nc != nil {
			if s.state.Load() == sessionUp {
				_ = s.nc.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = s.nc.Write(e.Bytes())
			}
			s.nc.Close()
		}
		s.ncMu.Unlock()
	}
}

// shareHandle is the parent's view of a share, in this process or a child.
type shareHandle interface {
	ready() error                 // blocks until the share's sessions are open
	command(string) error         // "measure" (record pings), "storm" (settle the storm, then report)
	result() (shareReport, error) // after "storm": blocks until the share reports
	finish()
}

// localShare runs a share in this process.
type localShare struct {
	g      *sessionGroup
	openEr chan error
	rep    chan shareReport
}

func startLocalShare(sh sessionsShare) *localShare {
	l := &localShare{g: &sessionGroup{share: sh}, openEr: make(chan error, 1), rep: make(chan shareReport, 1)}
	go func() { l.openEr <- l.g.open() }()
	return l
}

func (l *localShare) ready() error { return <-l.openEr }
func (l *localShare) command(c string) error {
	switch c {
	case "measure":
		l.g.measuring.Store(true)
	case "storm":
		l.g.measuring.Store(false)
		go func() { l.g.storm(); l.rep <- l.g.report() }()
	}
	return nil
}
func (l *localShare) result() (shareReport, error) { return <-l.rep, nil }
func (l *localShare) finish()                      { l.g.close() }

// childShare runs a share in a child process.
type childShare struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	wait  chan error
	stder *strings.Builder
}

func startChildShare(command []string, sh sessionsShare) (*childShare, error) {
	b, _ := json.Marshal(sh)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), sessionsChildEnv+"="+string(b))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &childShare{cmd: cmd, in: in, out: bufio.NewScanner(out), wait: make(chan error, 1), stder: &strings.Builder{}}
	c.out.Buffer(make([]byte, 1<<20), 16<<20)
	cmd.Stderr = c.stder
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a load-generator process: %w", err)
	}
	return c, nil
}

func (c *childShare) line() (string, error) {
	if c.out.Scan() {
		return c.out.Text(), nil
	}
	err := c.cmd.Wait()
	return "", fmt.Errorf("load-generator process ended (%v): %s", err, strings.TrimSpace(c.stder.String()))
}

func (c *childShare) ready() error {
	l, err := c.line()
	if err != nil {
		return err
	}
	if msg, ok := strings.CutPrefix(l, "error "); ok {
		return fmt.Errorf("%s", msg)
	}
	if l != "ready" {
		return fmt.Errorf("load-generator process said %q, not ready", l)
	}
	return nil
}

func (c *childShare) command(s string) error {
	_, err := io.WriteString(c.in, s+"\n")
	return err
}

func (c *childShare) result() (shareReport, error) {
	var rep shareReport
	l, err := c.line()
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal([]byte(l), &rep); err != nil {
		return rep, fmt.Errorf("load-generator process report: %w", err)
	}
	return rep, nil
}

func (c *childShare) finish() {
	_ = c.command("end")
	c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// IsSessionsChild reports whether this process was started as a sessions
// share by a parent `zkbridge bench` (RunSessionsChild then serves it).
func IsSessionsChild() bool { return os.Getenv(sessionsChildEnv) != "" }

// RunSessionsChild serves a parent's share: it opens the sessions, says
// "ready", starts recording pings on "measure", and on "storm" waits for
// the storm to settle and prints its report as one JSON line; on "end" (or
// the end of stdin) it closes the sessions.
func RunSessionsChild(in io.Reader, out io.Writer) error {
	var sh sessionsShare
	if err := json.Unmarshal([]byte(os.Getenv(sessionsChildEnv)), &sh); err != nil {
		return fmt.Errorf("%s: %w", sessionsChildEnv, err)
	}
	g := &sessionGroup{share: sh}
	if err := g.open(); err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		return err
	}
	defer g.close()
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "measure":
			g.measuring.Store(true)
		case "storm":
			g.measuring.Store(false)
			g.storm()
			b, _ := json.Marshal(g.report())
			fmt.Fprintln(out, string(b))
		case "end":
			return nil
		}
	}
	return nil
}
