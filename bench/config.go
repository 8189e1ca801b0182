package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Op is one kind of request a workload issues.
type Op int

// The ops a mix can name, then the ops of the other workloads: OpWatch is
// a watch round, OpConnect a session's handshake and OpClose its
// closeSession, OpChurn a whole churn cycle, OpPing a held session's ping,
// OpResume a lost session's resumption elsewhere, OpArm a watch set by a
// read, OpEvent a watch event's delivery, OpAfterReply the part of a watch
// round after the write's reply.
const (
	OpCreate Op = iota
	OpDelete
	OpSet
	OpGet
	OpExists
	OpList
	OpMulti
	OpWatch
	OpConnect
	OpClose
	OpChurn
	OpPing
	OpResume
	OpArm
	OpEvent
	OpAfterReply
	numOps
)

var opNames = [numOps]string{"create", "delete", "set", "get", "exists", "list", "multi", "watch", "connect", "close", "churn", "ping", "resume", "arm", "event", "after_reply"}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

// Workloads lists the workload names Run accepts.
var Workloads = []string{"create", "set", "get", "exists", "list", "mixed", "multi", "watch", "connect",
	"churn", "sessions", "watches", "recursive"}

// DefaultMix is the mixed workload's default ratio, read-heavy like
// keeper-bench's example configurations.
const DefaultMix = "get:45,list:45,set:8,create:1,delete:1"

// Mix is a weight per op (a mixed workload picks each op with probability
// weight/total). Delete removes a node this connection created earlier
// and becomes a create while there is none.
type Mix [numOps]int

// ParseMix reads "op:weight,...", e.g. "get:45,list:45,set:8,create:1,delete:1".
// Ops are create, delete, set, get, exists, list and multi; weights are
// non-negative integers and at least one must be positive.
func ParseMix(s string) (Mix, error) {
	var m Mix
	seen := map[string]bool{}
	total := 0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, w, ok := strings.Cut(part, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return m, fmt.Errorf("mix %q: %q is not OP:WEIGHT", s, part)
		}
		i := slices.Index(opNames[:OpWatch], name)
		if i < 0 {
			return m, fmt.Errorf("mix %q: unknown op %q (want one of %s)", s, name, strings.Join(opNames[:OpWatch], ", "))
		}
		if seen[name] {
			return m, fmt.Errorf("mix %q: op %q given twice", s, name)
		}
		seen[name] = true
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 || n > 1_000_000 {
			return m, fmt.Errorf("mix %q: weight of %s must be an integer in 0…1000000, not %q", s, name, w)
		}
		m[i] = n
		total += n
	}
	if total == 0 {
		return m, fmt.Errorf("mix %q: every weight is 0", s)
	}
	return m, nil
}

// String formats the mix as ParseMix reads it (ops with weight 0 left out).
func (m Mix) String() string {
	var parts []string
	for i, w := range m {
		if w > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", Op(i), w))
		}
	}
	return strings.Join(parts, ",")
}

// pick maps r ∈ [0, total) to an op.
func (m Mix) pick(r int) Op {
	for i, w := range m {
		if r < w {
			return Op(i)
		}
		r -= w
	}
	return OpGet
}

func (m Mix) total() int {
	t := 0
	for _, w := range m {
		t += w
	}
	return t
}

// Config describes one run. Zero values are replaced by Normalize's defaults.
type Config struct {
	Addrs         []string    // servers (HOST:PORT); connections are spread over them round-robin
	TLS           *tls.Config // connect with TLS (nil: plaintext)
	Workload      string      // one of Workloads
	Mix           Mix         // the mixed workload's ratio
	Connections   int         // sessions issuing requests (not the watch workload); connect: concurrent connectors
	Outstanding   int         // requests in flight per connection
	Rate          float64     // request/reply workloads: ops/s over all connections, paced evenly (0: as fast as replies come)
	Payload       int         // bytes of data per create and set
	Keyspace      int         // nodes read and written by get, set, exists, list, multi
	Fanout        int         // keys per directory: list returns this many children
	MultiOps      int         // setData ops per multi transaction
	Watchers      int         // watch workload: sessions watching the node
	ConnectExists bool        // connect workload: one exists on Root per session before closing it
	WatchKind     string      // watch workload: "data" (getData watch, setData fires it) or "children" (getChildren watch, create fires it)
	Watches       int         // watches workload: one-shot watches set, spread over Keyspace nodes and Connections sessions
	// Hook, if set, is a shell command run (with the phase as its last
	// argument) at a workload's phases and waited for: sessions "held" and
	// "storm" (it must stop the server at StormAddr), watches "armed", wide
	// nodes "listed". Scripts measure the servers there, or act on them.
	Hook            string
	StormAddr       string        // sessions: the server the storm hook stops ("" : no storm)
	StormWait       time.Duration // sessions: bound on the storm's settling
	ReconnectJitter time.Duration // sessions: a lost session waits a random time up to this before reconnecting
	// ChildCommand starts this program as a load-generator process, for
	// sessions runs larger than one process's open-file limit (the child
	// recognises itself with IsSessionsChild).
	ChildCommand []string
	// testHook stands in for Hook in this package's tests.
	testHook       func(phase string) error
	Duration       time.Duration // measured time (ignored when Ops > 0)
	Ops            int64         // measured op count (0: run for Duration)
	Warmup         time.Duration // unmeasured load before the measurement
	Root           string        // every node the run touches is below this path
	Cleanup        bool          // delete the nodes this run created, at the end
	Timeout        time.Duration // bound on connecting and on waiting for replies
	SessionTimeout time.Duration
	// ServerPIDs are local server processes whose CPU, run-queue wait and
	// switches over the measured time the result reports per op (Linux).
	ServerPIDs []int

	Progress          io.Writer     // progress lines (nil: none)
	ProgressInterval  time.Duration // how often (default 1 s)
	ProgressOverwrite bool          // end lines with \r instead of \n (a terminal)
}

// Normalize fills defaults into zero fields.
func (c *Config) Normalize() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Connections, 10)
	def(&c.Outstanding, 32)
	def(&c.Keyspace, 1000)
	def(&c.Fanout, 10)
	def(&c.MultiOps, 10)
	def(&c.Watchers, 50)
	if c.WatchKind == "" {
		c.WatchKind = "data"
	}
	if c.Watches == 0 {
		c.Watches = c.Keyspace
	}
	if c.Mix.total() == 0 {
		c.Mix, _ = ParseMix(DefaultMix)
	}
	if c.Duration == 0 && c.Ops == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Root == "" {
		c.Root = "/zkbridge-bench"
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 30 * time.Second
	}
	if c.StormWait == 0 {
		c.StormWait = 2*c.SessionTimeout + 30*time.Second
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = time.Second
	}
}

// maxPayload keeps a request under ZooKeeper's default jute.maxbuffer
// (1,048,575 bytes) with room for the path and headers: a 1 MB
// (1,000,000-byte) value fits.
const maxPayload = zkproto.DefaultMaxBuffer - 16<<10

// Validate reports the first setting that cannot work, naming it.
func (c *Config) Validate() error {
	if len(c.Addrs) == 0 {
		return fmt.Errorf("no server address given")
	}
	for _, a := range c.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return fmt.Errorf("address %q is not HOST:PORT", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("address %q: bad port", a)
		}
	}
	if !slices.Contains(Workloads, c.Workload) {
		return fmt.Errorf("unknown workload %q (want one of %s)", c.Workload, strings.Join(Workloads, ", "))
	}
	switch {
	case c.Connections < 1 || c.Connections > 10000 && c.Workload != "sessions":
		return fmt.Errorf("connections must be in 1…10000, not %d", c.Connections)
	case c.Connections > 1_000_000:
		return fmt.Errorf("sessions must be in 1…1000000, not %d", c.Connections)
	case c.WatchKind != "data" && c.WatchKind != "children":
		return fmt.Errorf("watch kind must be data or children, not %q", c.WatchKind)
	case c.Watches < 1 || c.Watches > 100_000_000:
		return fmt.Errorf("watches must be in 1…100000000, not %d", c.Watches)
	case c.Workload == "watches" && c.Watches > c.Keyspace*c.Connections:
		return fmt.Errorf("watches (%d) must be at most keyspace × connections (%d): a session sets one watch per node", c.Watches, c.Keyspace*c.Connections)
	case c.StormAddr != "" && !slices.Contains(c.Addrs, c.StormAddr):
		return fmt.Errorf("storm address %s is not one of the servers", c.StormAddr)
	case c.StormAddr != "" && len(c.Addrs) < 2:
		return fmt.Errorf("a storm needs another server for the sessions to move to")
	case c.StormAddr != "" && c.Hook == "" && c.testHook == nil:
		return fmt.Errorf("a storm needs a hook that stops the server at %s", c.StormAddr)
	case c.ReconnectJitter < 0 || c.StormWait < 0:
		return fmt.Errorf("reconnect jitter and storm wait must not be negative")
	case c.Outstanding < 1 || c.Outstanding > 100000:
		return fmt.Errorf("outstanding must be in 1…100000, not %d", c.Outstanding)
	case c.Payload < 0 || c.Payload > maxPayload:
		return fmt.Errorf("payload must be in 0…%d bytes, not %d", maxPayload, c.Payload)
	case c.Keyspace < 1 || c.Keyspace > 10_000_000:
		return fmt.Errorf("keyspace must be in 1…10000000, not %d", c.Keyspace)
	case c.Fanout < 1 || c.Fanout > c.Keyspace:
		return fmt.Errorf("fanout must be in 1…keyspace (%d), not %d", c.Keyspace, c.Fanout)
	case c.MultiOps < 1 || c.MultiOps > c.Keyspace || c.MultiOps > 1000:
		return fmt.Errorf("multi-ops must be in 1…min(keyspace, 1000), not %d", c.MultiOps)
	case c.Watchers < 1 || c.Watchers > 10000:
		return fmt.Errorf("watchers must be in 1…10000, not %d", c.Watchers)
	case c.Duration < 0:
		return fmt.Errorf("duration must not be negative")
	case c.Ops < 0:
		return fmt.Errorf("ops must not be negative")
	case c.Warmup < 0:
		return fmt.Errorf("warmup must not be negative")
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive")
	case c.SessionTimeout < time.Millisecond || c.SessionTimeout > 24*time.Hour:
		return fmt.Errorf("session timeout must be in 1ms…24h")
	case c.ProgressInterval < 0:
		return fmt.Errorf("progress interval must not be negative")
	case c.Rate < 0 || c.Rate > 10_000_000 || c.Rate != c.Rate:
		return fmt.Errorf("rate must be in 0…10000000 ops/s, not %v", c.Rate)
	}
	if c.Rate > 0 && (c.Workload == "watch" || c.Workload == "connect" || c.Workload == "churn" || c.Workload == "sessions" || c.Workload == "watches") {
		return fmt.Errorf("rate applies to request/reply workloads, not %s", c.Workload)
	}
	if c.TLS != nil && c.Workload == "sessions" {
		return fmt.Errorf("the sessions workload speaks plaintext only (no --tls)")
	}
	if c.StormAddr != "" && c.Workload != "sessions" {
		return fmt.Errorf("a storm applies to the sessions workload only")
	}
	if c.ConnectExists && c.Workload != "connect" {
		return fmt.Errorf("connect-exists applies to the connect workload only")
	}
	if err := zkproto.ValidatePath(c.Root); err != nil || c.Root == "/" {
		return fmt.Errorf("root %q is not a valid path below /", c.Root)
	}
	return nil
}
