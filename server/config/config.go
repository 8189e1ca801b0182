package config

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/zkbridge/zkbridge/zkproto"
)

// Config is one node's configuration. Zero values are filled in by
// Normalize with ZooKeeper's defaults (tickTime 2000 ms, sessions 2×–20×
// tick, only srvr among the four-letter words, …).
type Config struct {
	// DataDir holds the state machine (Pebble) and, unless DataLogDir is
	// set, the Raft log.
	DataDir string `yaml:"data_dir"`
	// DataLogDir holds the Raft log (zoo.cfg dataLogDir).
	DataLogDir string `yaml:"data_log_dir"`
	// LogSyncDisabled acknowledges writes without fsyncing the Raft log
	// (zoo.cfg forceSync=no). A machine crash can then lose acknowledged
	// writes, on several nodes at once; a process crash loses nothing,
	// since the data is in the kernel's page cache. For benchmarks and
	// throwaway clusters.
	LogSyncDisabled bool `yaml:"log_sync_disabled"`
	// ClientAddr is the ZooKeeper client listener, host:port.
	ClientAddr string `yaml:"client_addr"`
	// AdminAddr is the admin HTTP listener (/commands, /metrics).
	AdminAddr string `yaml:"admin_addr"`
	// AdminDisabled turns the admin HTTP listener off (admin.enableServer=false).
	AdminDisabled bool `yaml:"admin_disabled"`
	// AdminUsers are the web console's administrators (/ui/ on the admin
	// listener) as ZooKeeper digest identities, "name:<base64 sha1 of
	// name:password>" (the identity zkCli's addauth digest name:password
	// carries); they sign in with HTTP Basic auth and read
	// the tree with that digest identity, so ACLs apply as to a client.
	// "x509:<DN>" names a client certificate instead (admin HTTPS with
	// ssl.clientAuth).
	AdminUsers []string `yaml:"admin_users"`
	// ConsoleWrites lets signed-in administrators change znodes and expire
	// sessions from the web console (off: the console is read-only).
	ConsoleWrites bool `yaml:"console_writes"`
	// NativeAddr is the native gRPC API's listener, host:port; empty: off.
	// `zkbridge server` defaults it to DefaultNativeAddr.
	NativeAddr string `yaml:"native_addr"`
	// NativeOptional: NativeAddr is the default, not asked for, so a port in
	// use there is a warning and the node serves without the native API
	// (as ZooKeeper starts without its AdminServer when 8080 is taken).
	NativeOptional bool `yaml:"-"`
	// PeerAddr is the Raft transport address of this node.
	PeerAddr string `yaml:"peer_addr"`
	// PeerListenAddr is where the Raft transport listens when that differs
	// from the PeerAddr the other nodes dial (NAT, a proxy); empty: PeerAddr.
	PeerListenAddr string `yaml:"peer_listen_addr"`
	// ReplicaID is this node's id in the cluster (ZooKeeper's myid).
	ReplicaID uint64 `yaml:"replica_id"`
	// Peers maps every voting replica's id to its Raft address, this node
	// included (zoo.cfg server.N lines). Empty means a single node.
	Peers map[uint64]string `yaml:"peers"`
	// Observers maps the non-voting replicas of the static configuration
	// (zoo.cfg server.N=…:observer) to their Raft addresses. The leader adds
	// any that are not yet members; they serve reads and forward writes.
	Observers map[uint64]string `yaml:"observers"`
	// Observer starts this node as a non-voting replica (implied when its
	// ReplicaID is among Observers). It joins the running cluster.
	Observer bool `yaml:"observer"`
	// Join starts a replica added to a running cluster (raft add-voter)
	// instead of bootstrapping one.
	Join bool `yaml:"join"`
	// InitLimit and SyncLimit are zoo.cfg's, kept only for conf (Raft has
	// its own timeouts); 0 means 10 and 5.
	InitLimit int `yaml:"init_limit"`
	SyncLimit int `yaml:"sync_limit"`
	// ReadOnlyMode lets a node without a leader serve clients that asked
	// for canBeReadOnly, read-only (ZooKeeper's readonlymode.enabled).
	ReadOnlyMode bool `yaml:"read_only_mode"`
	// ReconfigEnabled admits the reconfig operation (zoo.cfg reconfigEnabled);
	// off, it fails with ReconfigDisabled as in ZooKeeper.
	ReconfigEnabled bool `yaml:"reconfig_enabled"`
	// SnapshotEntries is how many applied entries trigger a Raft snapshot,
	// after which the log before it is compacted (zoo.cfg snapCount).
	SnapshotEntries uint64 `yaml:"snapshot_entries"`
	// SnapshotBytes is how many bytes of applied entries trigger a Raft
	// snapshot as well (zoo.cfg snapSizeLimitInKb): with large values the
	// entry count alone lets the log outgrow the disk.
	SnapshotBytes uint64 `yaml:"snapshot_bytes"`
	// ElectionTimeout is Raft's election timeout (randomized up to twice
	// it); a leader that hears from no quorum for that long steps down.
	// Short means a fast failover; on a loaded machine where a node can
	// stall for longer, it means spurious elections.
	ElectionTimeout time.Duration `yaml:"election_timeout"`

	// TickTime is ZooKeeper's basic time unit.
	TickTime time.Duration `yaml:"tick_time"`
	// MinSessionTimeout and MaxSessionTimeout bound negotiated session
	// timeouts; 0 means 2× and 20× TickTime.
	MinSessionTimeout time.Duration `yaml:"min_session_timeout"`
	MaxSessionTimeout time.Duration `yaml:"max_session_timeout"`

	// FourLetterWords lists the enabled four-letter words; "*" enables all.
	// Empty means ZooKeeper's default: srvr only.
	FourLetterWords []string `yaml:"four_letter_words"`
	// MaxClientCnxns limits concurrent connections per client IP; 0 = no limit.
	MaxClientCnxns int `yaml:"max_client_cnxns"`
	// MaxBuffer is jute.maxbuffer: the largest request frame accepted.
	MaxBuffer int `yaml:"max_buffer"`
	// GlobalOutstandingLimit bounds requests in flight per node; a
	// connection stops being read while the node is over it.
	GlobalOutstandingLimit int `yaml:"global_outstanding_limit"`
	// ReaperInterval is how often the leader looks for empty containers and
	// expired TTL nodes (znode.container.checkIntervalMs).
	ReaperInterval time.Duration `yaml:"reaper_interval"`
	// ExtendedTypesDisabled turns TTL nodes off (ZooKeeper's
	// zookeeper.extendedTypesEnabled=false, its default). zkbridge enables
	// them by default.
	ExtendedTypesDisabled bool `yaml:"extended_types_disabled"`
	// ChangeLogMaxRecords and ChangeLogMaxBytes bound the change log the
	// native change feed (FetchMetadata) reads; 0: sm's defaults (100,000
	// records, 64 MiB). Every replica must use the same values.
	ChangeLogMaxRecords int64 `yaml:"change_log_max_records"`
	ChangeLogMaxBytes   int64 `yaml:"change_log_max_bytes"`
	// SuperDigest is "super:<base64 sha1>" (DigestAuthenticationProvider.superDigest).
	SuperDigest string `yaml:"super_digest"`
	// Auth is SASL authentication and its enforcement (security.go).
	Auth AuthConfig `yaml:",inline"`
	// Limits are the connection and request throttles (security.go).
	Limits LimitsConfig `yaml:",inline"`

	// TLS holds the ssl.* settings (tls.go).
	TLS TLSConfig `yaml:",inline"`

	// Warnings collects what loading the configuration noticed but accepted
	// (unknown zoo.cfg keys, settings that do not apply yet).
	Warnings []string `yaml:"-"`
	// Source names the file the configuration came from, if any.
	Source string `yaml:"-"`
}

// Defaults of a node started with no configuration at all.
const (
	DefaultDataDir    = "zkbridge-data"
	DefaultClientAddr = "127.0.0.1:2181"
	DefaultAdminAddr  = "127.0.0.1:8080"
	DefaultNativeAddr = "127.0.0.1:2191"
	DefaultPeerAddr   = "127.0.0.1:2888"
	// DefaultSnapshotEntries is ZooKeeper's snapCount. A snapshot flushes
	// the state's memtables (it keeps no WAL) with the apply path waiting:
	// every 10,000 entries that cost set@64 a third of its throughput and
	// doubled its p99. snapshot_bytes bounds the log's size either way.
	DefaultSnapshotEntries = 100000
	// DefaultSnapshotBytes is smaller than ZooKeeper's snapSizeLimitInKb
	// (4 GB) for the same reason; the log keeps about twice it.
	DefaultSnapshotBytes = 256 << 20
	// DefaultElectionTimeout: 10 Raft ticks of 20 ms.
	DefaultElectionTimeout = 200 * time.Millisecond
)

// DefaultConfig returns the embedded single-node default.
func DefaultConfig() Config {
	c := Config{}
	c.Normalize()
	return c
}

// Normalize fills unset fields with defaults.
func (c *Config) Normalize() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.ClientAddr == "" {
		c.ClientAddr = DefaultClientAddr
	}
	if c.AdminAddr == "" && !c.AdminDisabled {
		c.AdminAddr = DefaultAdminAddr
	}
	if c.PeerAddr == "" && c.Peers[c.ReplicaID] != "" {
		c.PeerAddr = c.Peers[c.ReplicaID]
	}
	if c.PeerAddr == "" && c.Observers[c.ReplicaID] != "" {
		c.PeerAddr = c.Observers[c.ReplicaID]
	}
	if _, ok := c.Observers[c.ReplicaID]; ok && c.ReplicaID != 0 {
		c.Observer = true
	}
	if c.PeerAddr == "" {
		c.PeerAddr = DefaultPeerAddr
	}
	if c.ReplicaID == 0 {
		c.ReplicaID = 1
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = DefaultSnapshotEntries
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = DefaultSnapshotBytes
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.InitLimit <= 0 {
		c.InitLimit = 10
	}
	if c.SyncLimit <= 0 {
		c.SyncLimit = 5
	}
	if c.TickTime <= 0 {
		c.TickTime = 2000 * time.Millisecond
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if len(c.FourLetterWords) == 0 {
		c.FourLetterWords = []string{"srvr"}
	}
	if c.MaxBuffer <= 0 {
		c.MaxBuffer = zkproto.DefaultMaxBuffer
	}
	if c.GlobalOutstandingLimit <= 0 {
		c.GlobalOutstandingLimit = 1000
	}
	if c.ReaperInterval <= 0 {
		c.ReaperInterval = 60 * time.Second
	}
	c.Limits.normalize()
}

// Validate reports settings that cannot work.
func (c *Config) Validate() error {
	for name, addr := range map[string]string{"client address": c.ClientAddr, "peer address": c.PeerAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("config: %s %q: %w", name, addr, err)
		}
	}
	if c.NativeAddr != "" {
		if _, _, err := net.SplitHostPort(c.NativeAddr); err != nil {
			return fmt.Errorf("config: native address %q: %w", c.NativeAddr, err)
		}
	}
	if !c.AdminDisabled {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			return fmt.Errorf("config: admin address %q: %w", c.AdminAddr, err)
		}
	}
	if minimum := MinElectionTicks * RaftTick; c.ElectionTimeout < minimum || c.ElectionTimeout > time.Minute {
		return fmt.Errorf("config: election timeout %v is outside %v..1m", c.ElectionTimeout, minimum)
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		return fmt.Errorf("config: minSessionTimeout %v is larger than maxSessionTimeout %v", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	for id := range c.Observers {
		if _, ok := c.Peers[id]; ok {
			return fmt.Errorf("config: replica %d is listed both as a voter and as an observer", id)
		}
	}
	if len(c.Observers) > 0 && len(c.Peers) == 0 {
		return fmt.Errorf("config: observers %v need voters (peers) to follow", SortedIDs(c.Observers))
	}
	if c.Observer && len(c.Observers) > 0 && c.Observers[c.ReplicaID] != c.PeerAddr {
		return fmt.Errorf("config: peer address %s differs from observer %d's entry %s", c.PeerAddr, c.ReplicaID, c.Observers[c.ReplicaID])
	}
	if len(c.Peers) > 0 && !c.Join && !c.Observer {
		addr, ok := c.Peers[c.ReplicaID]
		if !ok {
			return fmt.Errorf("config: replica id %d is not among the peers %v", c.ReplicaID, c.Peers)
		}
		if addr != c.PeerAddr {
			return fmt.Errorf("config: peer address %s differs from replica %d's entry %s in the peers", c.PeerAddr, c.ReplicaID, addr)
		}
	}
	for _, u := range c.AdminUsers {
		if name, digest, ok := strings.Cut(u, ":"); !ok || name == "" || digest == "" {
			return fmt.Errorf("config: admin user %q must look like name:<base64 sha1 of name:password>", u)
		}
	}
	if err := c.TLS.validate(c); err != nil {
		return err
	}
	if c.SuperDigest != "" && !strings.Contains(c.SuperDigest, ":") {
		return fmt.Errorf("config: super digest %q must look like super:<base64 sha1>", c.SuperDigest)
	}
	if err := c.Auth.validate(); err != nil {
		return err
	}
	return nil
}

// FourLetterWordEnabled reports whether the whitelist admits cmd.
func (c *Config) FourLetterWordEnabled(cmd string) bool {
	for _, w := range c.FourLetterWords {
		if w == "*" || w == cmd {
			return true
		}
	}
	return false
}

// LoadConfigFile reads a YAML file or a ZooKeeper zoo.cfg, detected by
// extension (.yaml/.yml, .cfg) or, failing that, by content.
func LoadConfigFile(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var c Config
	switch ext := strings.ToLower(filepath.Ext(path)); {
	case ext == ".yaml" || ext == ".yml":
		c, err = ParseYAMLConfig(raw)
	case ext == ".cfg" || looksLikeZooCfg(raw):
		c, err = ParseZooCfg(raw, filepath.Dir(path))
	default:
		c, err = ParseYAMLConfig(raw)
	}
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

// looksLikeZooCfg reports whether the first meaningful line is key=value.
func looksLikeZooCfg(raw []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		eq, colon := strings.IndexByte(line, '='), strings.IndexByte(line, ':')
		return eq > 0 && (colon < 0 || eq < colon)
	}
	return false
}

// ParseYAMLConfig reads zkbridge's native YAML configuration. Durations
// are Go durations ("2s", "500ms"). Unknown keys are an error: a typo must
// not silently fall back to a default.
func ParseYAMLConfig(raw []byte) (Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && err.Error() != "EOF" {
		return Config{}, fmt.Errorf("yaml: %w", err)
	}
	return c, nil
}

// ParseZooCfg reads a ZooKeeper zoo.cfg as ZooKeeper does (Java properties:
// key=value, # comments). dir resolves relative paths and finds myid.
// Unknown keys become warnings, never silent.
func ParseZooCfg(raw []byte, dir string) (Config, error) {
	var c Config
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Config{}, fmt.Errorf("zoo.cfg line %d: %q is not key=value", lineNo, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return Config{}, err
	}

	clientHost := "127.0.0.1"
	if h, ok := props["clientPortAddress"]; ok {
		clientHost = h
	}
	ms := func(key string, v string) (time.Duration, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("zoo.cfg %s=%q: not an integer", key, v)
		}
		if n < 0 {
			return 0, nil // -1 means "use the default" in ZooKeeper
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	integer := func(key, v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("zoo.cfg %s=%q: not an integer", key, v)
		}
		return n, nil
	}
	servers := map[uint64]string{}
	adminHost, adminPort, adminEnabled := "127.0.0.1", "", true

	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic warnings
	var err error
	for _, k := range keys {
		v := props[k]
		switch {
		case k == "dataDir":
			c.DataDir = resolve(dir, v)
		case k == "dataLogDir":
			c.DataLogDir = resolve(dir, v)
		case k == "forceSync" || k == "zookeeper.forceSync":
			// ZooKeeper skips the txn log's fsync only for exactly "no".
			c.LogSyncDisabled = v == "no"
		case k == "clientPort":
			c.ClientAddr = net.JoinHostPort(clientHost, v)
		case k == "clientPortAddress":
			// used with clientPort above
		case isZooCfgTLSKey(k):
			// read together below (zooCfgTLS), as they depend on each other
		case k == "tickTime":
			c.TickTime, err = ms(k, v)
		case k == "minSessionTimeout":
			c.MinSessionTimeout, err = ms(k, v)
		case k == "maxSessionTimeout":
			c.MaxSessionTimeout, err = ms(k, v)
		case k == "4lw.commands.whitelist":
			c.FourLetterWords = nil
			for _, w := range strings.Split(v, ",") {
				if w = strings.TrimSpace(w); w != "" {
					c.FourLetterWords = append(c.FourLetterWords, w)
				}
			}
		case k == "maxClientCnxns":
			c.MaxClientCnxns, err = integer(k, v)
		case k == "jute.maxbuffer":
			c.MaxBuffer, err = integer(k, v)
		case k == "globalOutstandingLimit":
			c.GlobalOutstandingLimit, err = integer(k, v)
		case k == "snapCount":
			var n int
			if n, err = integer(k, v); err == nil && n > 0 {
				c.SnapshotEntries = uint64(n)
			}
		case k == "snapSizeLimitInKb":
			var n int
			if n, err = integer(k, v); err == nil && n > 0 {
				c.SnapshotBytes = uint64(n) << 10
			}
		case k == "znode.container.checkIntervalMs":
			c.ReaperInterval, err = ms(k, v)
		case k == "extendedTypesEnabled" || k == "zookeeper.extendedTypesEnabled":
			c.ExtendedTypesDisabled = v != "true"
		case k == "DigestAuthenticationProvider.superDigest" || k == "zookeeper.DigestAuthenticationProvider.superDigest":
			c.SuperDigest = v
		case k == "admin.enableServer":
			adminEnabled = v != "false"
		case k == "admin.serverPort":
			adminPort = v
		case k == "admin.serverAddress":
			adminHost = v
		case strings.HasPrefix(k, "server."):
			id, perr := strconv.ParseUint(strings.TrimPrefix(k, "server."), 10, 64)
			if perr != nil || id == 0 {
				return Config{}, fmt.Errorf("zoo.cfg %s: server id must be a positive integer", k)
			}
			servers[id] = v
		case k == "reconfigEnabled":
			c.ReconfigEnabled = v == "true"
		case k == "readonlymode.enabled" || k == "zookeeper.readonlymode.enabled":
			c.ReadOnlyMode = v == "true"
		case k == "initLimit":
			c.InitLimit, err = integer(k, v)
		case k == "syncLimit":
			c.SyncLimit, err = integer(k, v)
		case k == "standaloneEnabled" ||
			k == "autopurge.snapRetainCount" || k == "autopurge.purgeInterval" || k == "preAllocSize" ||
			k == "electionAlg" || k == "quorumListenOnAllIPs" || k == "clientPortListenBacklog":
			// ZooKeeper tuning that has no meaning for a Raft node.
			c.Warnings = append(c.Warnings, fmt.Sprintf("zoo.cfg %s: accepted, not used by zkbridge", k))
		default:
			var known bool
			if known, err = c.securityKey(k, v); known {
				break
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("zoo.cfg %s: unknown key, ignored", k))
		}
		if err != nil {
			return Config{}, err
		}
	}
	if err := c.zooCfgTLS(props, clientHost, dir); err != nil {
		return Config{}, err
	}
	if _, ok := props["maxClientCnxns"]; !ok {
		c.MaxClientCnxns = DefaultZooCfgMaxClientCnxns
	}
	if c.Auth.JAASFile != "" {
		c.Auth.JAASFile = resolve(dir, c.Auth.JAASFile)
	}
	if c.Auth.Krb5Conf != "" {
		c.Auth.Krb5Conf = resolve(dir, c.Auth.Krb5Conf)
	}
	if adminEnabled && adminPort != "" {
		c.AdminAddr = net.JoinHostPort(adminHost, adminPort)
	}
	c.AdminDisabled = !adminEnabled
	if c.DataDir != "" {
		if b, rerr := os.ReadFile(filepath.Join(c.DataDir, "myid")); rerr == nil {
			id, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if perr != nil || id == 0 {
				return Config{}, fmt.Errorf("myid file in %s: %q is not a positive integer", c.DataDir, strings.TrimSpace(string(b)))
			}
			c.ReplicaID = id
		}
	}
	for id, spec := range servers {
		// host:peerPort:electionPort[:participant|observer][;[clientHost:]clientPort]
		addr, _, _ := strings.Cut(spec, ";")
		parts := strings.Split(addr, ":")
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return Config{}, fmt.Errorf("zoo.cfg server.%d=%q: want host:peerPort:electionPort", id, spec)
		}
		if len(parts) >= 4 && parts[3] == "observer" {
			if c.Observers == nil {
				c.Observers = map[uint64]string{}
			}
			c.Observers[id] = net.JoinHostPort(parts[0], parts[1])
			continue
		}
		if len(parts) >= 4 && parts[3] != "participant" {
			return Config{}, fmt.Errorf("zoo.cfg server.%d=%q: role %q is neither participant nor observer", id, spec, parts[3])
		}
		if len(servers) == 1 && c.ReplicaID == 0 {
			c.ReplicaID = id
		}
		if c.Peers == nil {
			c.Peers = map[uint64]string{}
		}
		c.Peers[id] = net.JoinHostPort(parts[0], parts[1])
	}
	if len(c.Observers) > 0 && len(c.Peers) == 0 {
		return Config{}, fmt.Errorf("zoo.cfg lists only observers (%v): they need participants to follow", SortedIDs(c.Observers))
	}
	if len(c.Peers) == 1 && len(c.Observers) == 0 {
		for _, a := range c.Peers {
			c.PeerAddr = a
		}
		c.Peers = nil // one server line is a single node
	} else if len(c.Peers)+len(c.Observers) > 1 {
		if c.ReplicaID == 0 {
			return Config{}, fmt.Errorf("zoo.cfg lists %d servers but %s has no myid file saying which one this node is", len(c.Peers), filepath.Join(c.DataDir, "myid"))
		}
		c.PeerAddr = c.Peers[c.ReplicaID]
		if a, ok := c.Observers[c.ReplicaID]; ok {
			c.PeerAddr = a
		}
	}
	return c, nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// RaftTick is dragonboat's tick: election and heartbeat timeouts count in
// it. Every tick wakes a node's tick and step workers: at 10 ms an idle
// 3-node cluster switched threads about 2,600 times a second, at 20 ms
// about 1,800, and a write at one outstanding request waited a little less
// for a core behind them (docs/performance.md).
const RaftTick = 20 * time.Millisecond

// MinElectionTicks is the shortest election timeout in ticks: dragonboat
// wants more than two heartbeats (one tick each), and warns below ten.
const MinElectionTicks = 3

// SortedIDs returns the replica ids of m in increasing order.
func SortedIDs(m map[uint64]string) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
