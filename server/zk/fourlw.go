package zk

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// ZooKeeperVersion is the version zkbridge reports where ZooKeeper reports
// its own (srvr, mntr, envi): the protocol level it matches, then zkbridge's.
const ZooKeeperVersion = "3.8.4-zkbridge-0.1.0, built on 2026-12-02 00:00 UTC"

const notServing = "This ZooKeeper instance is not currently serving requests\n"

// fourLetterWord answers a four-letter command on a fresh connection and
// closes it, as ZooKeeper does.
func (s *Server) fourLetterWord(c *conn, cmd string) {
	defer c.closeAfterFlush()
	if cmd == zkproto.TelnetClose {
		return
	}
	if !s.cfg.FourLetterWordEnabled(cmd) {
		c.enqueue([]byte(cmd + " is not executed because it is not in the whitelist.\n"))
		return
	}
	var out string
	switch cmd {
	case "ruok":
		out = "imok"
	case "isro":
		out = "rw"
		if s.readOnly() {
			out = "ro"
		}
	case "gtmk":
		out = strconv.FormatInt(s.traceMask(), 10)
	case "stmk":
		var b [8]byte
		_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c.in, b[:]); err != nil {
			return
		}
		s.setTraceMask(int64(binary.BigEndian.Uint64(b[:])))
		out = strconv.FormatInt(s.traceMask(), 10)
	case "conf":
		out = s.confText()
	case "envi":
		out = s.enviText()
	case "dirs":
		out = s.dirsText()
	case "srst":
		s.metrics.reset()
		out = "Server stats reset.\n"
	case "crst":
		for _, cc := range s.snapshotConns() {
			cc.resetStats()
		}
		out = "Connection stats reset.\n"
	default:
		if !s.serving() && !s.readOnly() { // a read-only node serves, as ZooKeeper's
			out = notServing
			break
		}
		switch cmd {
		case "srvr":
			out = s.srvrText(false)
		case "stat":
			out = s.srvrText(true)
		case "mntr":
			out = s.mntrText()
		case "cons":
			out = s.consText()
		case "wchs":
			out = s.wchsText()
		case "wchc":
			out = s.wchcText()
		case "wchp":
			out = s.wchpText()
		case "dump":
			out = s.dumpText()
		case "hash":
			out = fmt.Sprintf("%x: %d\n", s.lastZxid(), 0)
		}
	}
	c.enqueue([]byte(out))
}

// serving reports whether the node has a leader and can answer requests.
func (s *Server) serving() bool { return s.node.Serving() }

func (s *Server) mode() string {
	st := s.node.Raft()
	switch {
	case s.readOnly():
		return "read-only"
	case s.node.Voters() <= 1 && !s.cfg.Observer:
		return "standalone"
	case st.IsLeader:
		return "leader"
	case s.node.IsObserver():
		return "observer"
	}
	return "follower"
}

// javaDouble prints a float as Java's Double.toString does for the values
// ZooKeeper's stats produce (always a fractional part: "0.0", "1.3467").
func javaDouble(v float64) string {
	v = math.Round(v*10000) / 10000
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func (s *Server) srvrText(withClients bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", ZooKeeperVersion)
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range s.sortedConns() {
			b.WriteString(c.brief())
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	lo, avg, hi := s.metrics.latency()
	fmt.Fprintf(&b, "Latency min/avg/max: %d/%s/%d\n", lo, javaDouble(avg), hi)
	fmt.Fprintf(&b, "Received: %d\n", s.metrics.packetsReceived.Load())
	fmt.Fprintf(&b, "Sent: %d\n", s.metrics.packetsSent.Load())
	fmt.Fprintf(&b, "Connections: %d\n", len(s.snapshotConns()))
	fmt.Fprintf(&b, "Outstanding: %d\n", s.metrics.outstanding.Load())
	fmt.Fprintf(&b, "Zxid: 0x%x\n", s.lastZxid())
	fmt.Fprintf(&b, "Mode: %s\n", s.mode())
	fmt.Fprintf(&b, "Node count: %d\n", s.treeStats().nodeCount())
	return b.String()
}

func (s *Server) sortedConns() []*conn {
	cs := s.snapshotConns()
	sort.Slice(cs, func(i, j int) bool { return cs[i].stats.established.Before(cs[j].stats.established) })
	return cs
}

// monitorValue is one mntr line; num is set for numeric values.
type monitorValue struct {
	key, help, text string
	num             *float64
}

func (s *Server) monitorValues() []monitorValue {
	var out []monitorValue
	str := func(k, v string) { out = append(out, monitorValue{key: k, text: v}) }
	num := func(k, help string, v float64, text string) {
		out = append(out, monitorValue{key: k, help: help, text: text, num: &v})
	}
	integer := func(k, help string, v int64) { num(k, help, float64(v), strconv.FormatInt(v, 10)) }

	str("zk_version", ZooKeeperVersion)
	str("zk_server_state", s.mode())
	lo, avg, hi := s.metrics.latency()
	num("zk_avg_latency", "average request latency, ms", avg, javaDouble(avg))
	integer("zk_max_latency", "maximum request latency, ms", hi)
	integer("zk_min_latency", "minimum request latency, ms", lo)
	integer("zk_packets_received", "packets received", s.metrics.packetsReceived.Load())
	integer("zk_packets_sent", "packets sent", s.metrics.packetsSent.Load())
	integer("zk_num_alive_connections", "open client connections", int64(len(s.snapshotConns())))
	integer("zk_outstanding_requests", "requests in flight", s.metrics.outstanding.Load())
	ts := s.treeStats()
	integer("zk_znode_count", "znodes (the root counted twice, as ZooKeeper)", ts.nodeCount())
	ws := s.watches.stats()
	integer("zk_watch_count", "watch registrations (data and child)", int64(ws.AllWatches))
	integer("zk_ephemerals_count", "ephemeral znodes", ts.Ephemerals)
	integer("zk_approximate_data_size", "bytes of data and paths", ts.DataBytes)
	open, max := fileDescriptors()
	integer("zk_open_file_descriptor_count", "open file descriptors", open)
	integer("zk_max_file_descriptor_count", "file descriptor limit", max)
	integer("zk_uptime", "ms since start", time.Since(s.node.Started()).Milliseconds())
	integer("zk_global_sessions", "sessions", int64(s.node.SessionCount()))
	integer("zk_local_sessions", "local sessions (never used by zkbridge)", 0)
	integer("zk_auth_failed_count", "failed authentications", s.metrics.authFailed.Load())
	integer("zkbridge_cutover_fenced_writes", "ZooKeeper-port writes refused by a cutover policy", s.metrics.fencedWrites.Load())
	integer("zk_connection_drop_probability", "always 0", 0)
	integer("zk_last_client_response_size", "bytes of the last reply or notification (-1 before any)", s.metrics.respLast.Load())
	integer("zk_max_client_response_size", "largest reply or notification, bytes", s.metrics.respMax.Load())
	integer("zk_min_client_response_size", "smallest reply or notification, bytes", s.metrics.respMin.Load())
	// zkbridge serves no TLS: these ZooKeeper gauges are always 0
	integer("zk_outstanding_tls_handshake", "always 0 (no TLS)", 0)
	integer("zk_non_mtls_remote_conn_count", "always 0 (no TLS)", 0)
	integer("zk_non_mtls_local_conn_count", "always 0 (no TLS)", 0)
	st := s.node.Raft()
	role := int64(2)
	if st.IsLeader {
		role = 1
	}
	if !st.HasLeader {
		role = 0
	}
	integer("raft_role", "0 no leader, 1 leader, 2 follower", role)
	integer("raft_term", "current Raft term", int64(st.Term))
	applied := int64(s.node.AppliedIndex())
	integer("raft_applied_index", "last Raft index applied locally", applied)
	commit := int64(s.node.CommitIndex())
	if commit < applied { // the persisted commit may trail the applied entries
		commit = applied
	}
	integer("raft_commit_index", "last Raft index known committed (persisted)", commit)
	integer("raft_apply_lag", "committed but not yet applied entries", commit-applied)
	nm := s.node.Metrics()
	integer("raft_leader_changes_total", "new leaders seen since start", nm.LeaderChanges)
	integer("raft_applied_entries_total", "entries applied since start", nm.Applied)
	flo, favg, fhi, fcnt := nm.FsyncMin, nm.FsyncAvg, nm.FsyncMax, nm.FsyncCount
	num("zk_min_fsynctime", "Raft log write+fsync, min ms", flo, javaDouble(flo))
	num("zk_avg_fsynctime", "Raft log write+fsync, avg ms", favg, javaDouble(favg))
	num("zk_max_fsynctime", "Raft log write+fsync, max ms", fhi, javaDouble(fhi))
	integer("zk_cnt_fsynctime", "Raft log writes", int64(fcnt))
	return out
}

func (s *Server) mntrText() string {
	var b strings.Builder
	for _, v := range s.monitorValues() {
		fmt.Fprintf(&b, "%s\t%s\n", v.key, v.text)
	}
	return b.String()
}

func fileDescriptors() (open, max int64) {
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = int64(len(ents))
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		max = int64(rl.Cur)
	}
	return open, max
}

func (s *Server) confText() string {
	var b strings.Builder
	port := s.cfg.ClientAddr
	if s.listener != nil {
		port = s.listener.Addr().String()
	}
	_, p, _ := strings.Cut(port, ":")
	if i := strings.LastIndexByte(port, ':'); i >= 0 {
		p = port[i+1:]
	}
	fmt.Fprintf(&b, "clientPort=%s\n", p)
	b.WriteString("secureClientPort=-1\n")
	abs := func(d string) string {
		if a, err := filepath.Abs(d); err == nil {
			return a
		}
		return d
	}
	dataDir := abs(s.cfg.DataDir)
	logDir := dataDir
	if s.cfg.DataLogDir != "" {
		logDir = abs(s.cfg.DataLogDir)
	}
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintf(&b, "dataDirSize=%d\n", dirSize(dataDir))
	fmt.Fprintf(&b, "dataLogDir=%s\n", logDir)
	fmt.Fprintf(&b, "dataLogSize=%d\n", dirSize(logDir))
	fmt.Fprintf(&b, "tickTime=%d\n", s.cfg.TickTime.Milliseconds())
	fmt.Fprintf(&b, "maxClientCnxns=%d\n", s.cfg.MaxClientCnxns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "maxSessionTimeout=%d\n", s.cfg.MaxSessionTimeout.Milliseconds())
	b.WriteString("clientPortListenBacklog=-1\n")
	fmt.Fprintf(&b, "serverId=%d\n", s.cfg.ReplicaID)
	if s.node.Voters() > 1 || s.cfg.Observer {
		// A quorum peer's keys; Raft has one peer port for both of ZooKeeper's.
		_, peerPort, _ := net.SplitHostPort(s.cfg.PeerAddr)
		peerType := 0
		if s.node.IsObserver() {
			peerType = 1
		}
		fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\nelectionAlg=3\nelectionPort=%s\nquorumPort=%s\npeerType=%d\n",
			s.cfg.InitLimit, s.cfg.SyncLimit, peerPort, peerPort, peerType)
		b.WriteString("membership: \n")
		text, _, _ := s.configText()
		if text != "" {
			b.WriteString(text + "\n")
		}
	}
	return b.String()
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return total
}

func (s *Server) dirsText() string {
	dataDir := s.cfg.DataDir
	logDir := filepath.Join(dataDir, "raft")
	if s.cfg.DataLogDir != "" {
		logDir = s.cfg.DataLogDir
	}
	return fmt.Sprintf("datadir_size: %d\nlogdir_size: %d\n", dirSize(filepath.Join(dataDir, "state")), dirSize(logDir))
}

func (s *Server) enviText() string {
	var b strings.Builder
	b.WriteString("Environment:\n")
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	u, _ := user.Current()
	name, home := "", ""
	if u != nil {
		name, home = u.Username, u.HomeDir
	}
	kv := [][2]string{
		{"zookeeper.version", ZooKeeperVersion},
		{"host.name", host},
		{"go.version", runtime.Version()},
		{"os.name", runtime.GOOS},
		{"os.arch", runtime.GOARCH},
		{"os.version", osVersion()},
		{"user.name", name},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", strconv.FormatUint(memFree()/(1<<20), 10) + "MB"},
		{"zkbridge.replica.id", strconv.FormatUint(s.cfg.ReplicaID, 10)},
	}
	for _, p := range kv {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	return b.String()
}

// osVersion is the kernel release, as Java's os.version ("" if unknown).
func osVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func memFree() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapIdle
}

func (s *Server) consText() string {
	var b strings.Builder
	for _, c := range s.sortedConns() {
		b.WriteString(c.full())
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

func (s *Server) wchsText() string {
	ws := s.watches.stats()
	return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", ws.Connections, ws.Paths, ws.DataWatches)
}

func (s *Server) wchcText() string {
	by := s.watches.bySession()
	ids := make([]int64, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "0x%x\n", uint64(id))
		for _, p := range by[id] {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func (s *Server) wchpText() string {
	by := s.watches.byPathSessions()
	paths := make([]string, 0, len(by))
	for p := range by {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "%s\n", p)
		for _, id := range by[p] {
			fmt.Fprintf(&b, "\t0x%x\n", uint64(id))
		}
	}
	b.WriteString("\n")
	return b.String()
}

func (s *Server) dumpText() string {
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	deadlines := s.node.SessionDeadlines()
	ids := make([]int64, 0, len(deadlines))
	for id := range deadlines {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	v, verr := s.node.View()
	if verr == nil {
		defer v.Close()
	}
	if s.mode() == "follower" || s.mode() == "observer" {
		// A ZooKeeper learner lists the ensemble's sessions, not deadlines.
		var global []*sm.SessionInfo
		if verr == nil {
			_ = v.Sessions(func(si *sm.SessionInfo) error { global = append(global, si); return nil })
		}
		fmt.Fprintf(&b, "Global Sessions(%d):\n", len(global))
		ids = ids[:0]
		for _, si := range global {
			fmt.Fprintf(&b, "0x%x\t%dms\n", uint64(si.ID), si.Timeout)
			ids = append(ids, si.ID)
		}
	} else {
		fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(ids), len(ids))
		for _, id := range ids {
			fmt.Fprintf(&b, "0x%x expire at %s\n", uint64(id), deadlines[id].UTC().Format("Mon Jan 02 15:04:05 MST 2006"))
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	eph := map[int64][]string{}
	if verr == nil {
		for _, id := range ids {
			if ps, err := v.Ephemerals(id); err == nil && len(ps) > 0 {
				eph[id] = ps
			}
		}
	}
	fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", len(eph))
	for _, id := range ids {
		if ps, ok := eph[id]; ok {
			fmt.Fprintf(&b, "0x%x:\n", uint64(id))
			for _, p := range ps {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
	}
	conns := s.sortedConns()
	fmt.Fprintf(&b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(conns), len(conns))
	for _, c := range conns {
		if id := c.sessionID(); id != 0 {
			fmt.Fprintf(&b, "0x%x\n", uint64(id))
		}
	}
	return b.String()
}

// traceMask is gtmk/stmk's value; zkbridge keeps it only to answer them.
func (s *Server) traceMask() int64 { return s.mask.Load() }

func (s *Server) setTraceMask(v int64) { s.mask.Store(v) }

// brief is a connection's line in stat.
func (c *conn) brief() string {
	interest, queued := c.interest(), c.queued() // before stats.mu: lock order
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return fmt.Sprintf(" /%s[%d](queued=%d,recved=%d,sent=%d)", c.remote, interest, queued, c.stats.received, c.stats.sent)
}

// full is a connection's line in cons.
func (c *conn) full() string {
	interest, queued := c.interest(), c.queued() // before stats.mu: lock order
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, " /%s[%d](queued=%d,recved=%d,sent=%d", c.remote, interest, queued, c.stats.received, c.stats.sent)
	if id := c.sessionID(); id != 0 {
		fmt.Fprintf(&b, ",sid=0x%x,lop=%s,est=%d,to=%d", uint64(id), orNA(c.stats.lastOp), c.stats.established.UnixMilli(), atomic.LoadInt32(&c.timeout))
		if c.stats.lastCxid >= 0 {
			fmt.Fprintf(&b, ",lcxid=0x%x", c.stats.lastCxid)
		}
		lzxid := uint64(c.stats.lastZxid)
		fmt.Fprintf(&b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d", lzxid, monotonicMs(c.stats.lastResp),
			c.stats.lastLatency, max(c.stats.minLatency, 0), avgInt(c.stats.sumLatency, c.stats.countLat), c.stats.maxLatency)
	}
	b.WriteString(")")
	return b.String()
}

func orNA(s string) string {
	if s == "" {
		return "NA"
	}
	return s
}

func avgInt(sum, n int64) int64 {
	if n == 0 {
		return 0
	}
	return sum / n
}

var processStart = time.Now()

// monotonicMs mirrors ZooKeeper's lresp, which is Time.currentElapsedTime
// (a monotonic clock), not wall time.
func monotonicMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Sub(processStart).Milliseconds()
}

func (c *conn) interest() int {
	if c.isClosed() {
		return 0
	}
	return 1
}

func (c *conn) queued() int {
	c.pendMu.Lock()
	defer c.pendMu.Unlock()
	return len(c.pending)
}

func (c *conn) resetStats() {
	c.stats.mu.Lock()
	c.stats.received, c.stats.sent = 0, 0
	c.stats.lastLatency, c.stats.minLatency, c.stats.maxLatency, c.stats.sumLatency, c.stats.countLat = 0, -1, 0, 0, 0
	c.stats.lastOp, c.stats.lastCxid, c.stats.lastZxid = "NA", -1, -1
	c.stats.mu.Unlock()
}

// Mode is the server state srvr reports: standalone, leader, follower,
// observer or read-only.
func (s *Server) Mode() string { return s.mode() }
