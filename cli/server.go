package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server"
)

func serverCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "server",
		Usage: "run a zkbridge node (with no flags: one node on 127.0.0.1:2181, data in ./zkbridge-data)",
		Description: "Serves the ZooKeeper client protocol. --config accepts zkbridge's YAML or a ZooKeeper\n" +
			"zoo.cfg as is (detected by extension or content); flags override the file.\n" +
			"SIGTERM or SIGINT stops accepting, lets in-flight replies leave, syncs and exits 0.\n" +
			"On Linux the server re-executes itself once with GODEBUG=" + quietSysmonSetting + " added, which keeps\n" +
			"the Go runtime's monitor thread from waking for every write (docs/performance.md);\n" +
			"GODEBUG=schedtrace=0 keeps the runtime's default.",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "config", Usage: "YAML or zoo.cfg `FILE`"},
			&ucli.StringFlag{Name: "data-dir", Usage: "state and Raft log `DIR`", Value: server.DefaultDataDir},
			&ucli.StringFlag{Name: "data-log-dir", Usage: "Raft log `DIR` (default: inside --data-dir)"},
			&ucli.BoolFlag{Name: "force-sync", Usage: "fsync the Raft log before a write is acknowledged (zoo.cfg forceSync); --force-sync=false risks losing acknowledged writes if the machine crashes", Value: true},
			&ucli.StringFlag{Name: "client-addr", Usage: "ZooKeeper client listener `HOST:PORT`", Value: server.DefaultClientAddr},
			&ucli.StringFlag{Name: "admin-addr", Usage: "admin HTTP listener `HOST:PORT` (/commands, /metrics)", Value: server.DefaultAdminAddr},
			&ucli.BoolFlag{Name: "no-admin", Usage: "do not start the admin HTTP listener"},
			&ucli.StringFlag{Name: "native-addr", Usage: "native gRPC API listener `HOST:PORT` (empty: off; the default is skipped with a warning when in use)", Value: server.DefaultNativeAddr},
			&ucli.StringFlag{Name: "peer-addr", Usage: "Raft transport `HOST:PORT`", Value: server.DefaultPeerAddr},
			&ucli.StringFlag{Name: "peer-listen-addr", Usage: "where the Raft transport listens, when not --peer-addr (NAT, a proxy): `HOST:PORT`"},
			&ucli.Uint64Flag{Name: "replica-id", Usage: "this node's id (ZooKeeper's myid)", Value: 1},
			&ucli.BoolFlag{Name: "join", Usage: "join a running cluster this replica was added to (zkbridge raft add-voter)"},
			&ucli.StringFlag{Name: "peers", Usage: "every voter's Raft address, this node's included: `ID=HOST:PORT,...` (omit for a single node)"},
			&ucli.StringFlag{Name: "observers", Usage: "non-voting replicas of the static configuration: `ID=HOST:PORT,...` (the leader adds them)"},
			&ucli.BoolFlag{Name: "observer", Usage: "start this node as a non-voting observer (implied when --replica-id is among --observers)"},
			&ucli.BoolFlag{Name: "read-only-mode", Usage: "without a leader, serve clients that allow it read-only (readonlymode.enabled)"},
			&ucli.BoolFlag{Name: "reconfig-enabled", Usage: "admit the reconfig operation, for super or WRITE on /zookeeper/config (reconfigEnabled)"},
			&ucli.DurationFlag{Name: "tick-time", Usage: "ZooKeeper tickTime", Value: 2 * time.Second},
			&ucli.DurationFlag{Name: "election-timeout", Usage: "Raft election timeout: a leader that hears from no quorum this long steps down (failover takes about 1-2x this)", Value: server.DefaultElectionTimeout},
			&ucli.Uint64Flag{Name: "snapshot-entries", Usage: "applied entries between Raft snapshots, after which the log is compacted (zoo.cfg snapCount)", Value: server.DefaultSnapshotEntries},
			&ucli.Uint64Flag{Name: "snapshot-bytes", Usage: "bytes of applied entries that also trigger a Raft snapshot, bounding the log's size with large values (zoo.cfg snapSizeLimitInKb, in bytes here)", Value: server.DefaultSnapshotBytes},
			&ucli.DurationFlag{Name: "reaper-interval", Usage: "how often empty containers and expired TTL nodes are removed", Value: 60 * time.Second},
			&ucli.StringSliceFlag{Name: "4lw", Usage: "enabled four-letter words (`CMD`, repeatable; * for all; default srvr)"},
			&ucli.StringFlag{Name: "super-digest", Usage: "super user `super:<base64 sha1>`"},
			&ucli.StringFlag{Name: "secure-client-addr", Usage: "TLS client listener `HOST:PORT` (zoo.cfg secureClientPort); needs --ssl-keystore"},
			&ucli.StringFlag{Name: "ssl-keystore", Usage: "key store `FILE` of the TLS ports: PEM (key and chain) or .p12 (ssl.keyStore.location)"},
			&ucli.StringFlag{Name: "ssl-keystore-password", Usage: "`PASSWORD` of a .p12 key store (ssl.keyStore.password)"},
			&ucli.StringFlag{Name: "ssl-truststore", Usage: "trust store `FILE` client certificates must chain to: PEM or .p12 (ssl.trustStore.location)"},
			&ucli.StringFlag{Name: "ssl-truststore-password", Usage: "`PASSWORD` of a .p12 trust store (ssl.trustStore.password)"},
			&ucli.StringFlag{Name: "ssl-client-auth", Usage: "`none`, want or need a client certificate (ssl.clientAuth; default need)"},
			&ucli.StringFlag{Name: "tenant-unknown-identity", Usage: "a TLS client whose server name (SNI) and certificate name no tenant has as --identity: `default` (served by the default tenant) or refuse (closed, with a log line)", Value: "default"},
			&ucli.StringFlag{Name: "jaas", Usage: "JAAS login `FILE` whose Server section lists the SASL DIGEST-MD5 users or a Krb5LoginModule keytab for GSSAPI (also zoo.cfg java.security.auth.login.config, or -Djava.security.auth.login.config in $SERVER_JVMFLAGS)"},
		}, logFlags()...),
		Action: runServer,
	}
}

func loadServerConfig(c *ucli.Context) (server.Config, error) {
	var cfg server.Config
	if path := c.String("config"); path != "" {
		var err error
		if cfg, err = server.LoadConfigFile(path); err != nil {
			return cfg, err
		}
	}
	// zkServer.sh users pass JAAS and SASL settings as JVM system
	// properties; zkbridge reads the ones it knows from the same variable.
	if err := cfg.ApplyServerJVMFlagsEnv(); err != nil {
		return cfg, err
	}
	set := func(name string, apply func()) {
		if c.IsSet(name) || (c.String("config") == "" && name != "4lw") {
			apply()
		}
	}
	set("data-dir", func() { cfg.DataDir = c.String("data-dir") })
	set("data-log-dir", func() { cfg.DataLogDir = c.String("data-log-dir") })
	set("force-sync", func() { cfg.LogSyncDisabled = !c.Bool("force-sync") })
	set("client-addr", func() { cfg.ClientAddr = c.String("client-addr") })
	set("admin-addr", func() { cfg.AdminAddr = c.String("admin-addr") })
	set("no-admin", func() { cfg.AdminDisabled = c.Bool("no-admin") })
	if c.IsSet("native-addr") {
		cfg.NativeAddr = c.String("native-addr") // "" turns it off
	} else if cfg.NativeAddr == "" {
		cfg.NativeAddr, cfg.NativeOptional = server.DefaultNativeAddr, true
	}
	set("peer-addr", func() { cfg.PeerAddr = c.String("peer-addr") })
	set("peer-listen-addr", func() { cfg.PeerListenAddr = c.String("peer-listen-addr") })
	set("replica-id", func() { cfg.ReplicaID = c.Uint64("replica-id") })
	if c.IsSet("peers") {
		peers, err := parsePeers(c.String("peers"))
		if err != nil {
			return cfg, err
		}
		cfg.Peers = peers
		if !c.IsSet("peer-addr") {
			cfg.PeerAddr = peers[cfg.ReplicaID]
		}
	}
	if c.IsSet("observers") {
		observers, err := parsePeers(c.String("observers"))
		if err != nil {
			return cfg, fmt.Errorf("--observers: %w", err)
		}
		cfg.Observers = observers
		if !c.IsSet("peer-addr") && observers[cfg.ReplicaID] != "" {
			cfg.PeerAddr = observers[cfg.ReplicaID]
		}
	}
	// TLS flags override the file's ssl.* keys one by one.
	if c.IsSet("secure-client-addr") {
		cfg.TLS.SecureClientAddr = c.String("secure-client-addr")
	}
	for flag, dst := range map[string]*string{
		"ssl-keystore": &cfg.TLS.Client.KeyStore.Location, "ssl-keystore-password": &cfg.TLS.Client.KeyStore.Password,
		"ssl-truststore": &cfg.TLS.Client.TrustStore.Location, "ssl-truststore-password": &cfg.TLS.Client.TrustStore.Password,
		"ssl-client-auth":         &cfg.TLS.Client.ClientAuth,
		"tenant-unknown-identity": &cfg.TLS.TenantUnknownIdentity,
	} {
		if c.IsSet(flag) {
			*dst = c.String(flag)
		}
	}
	set("join", func() { cfg.Join = c.Bool("join") })
	set("observer", func() { cfg.Observer = c.Bool("observer") })
	set("read-only-mode", func() { cfg.ReadOnlyMode = c.Bool("read-only-mode") })
	set("reconfig-enabled", func() { cfg.ReconfigEnabled = c.Bool("reconfig-enabled") })
	set("tick-time", func() { cfg.TickTime = c.Duration("tick-time") })
	set("reaper-interval", func() { cfg.ReaperInterval = c.Duration("reaper-interval") })
	set("snapshot-entries", func() { cfg.SnapshotEntries = c.Uint64("snapshot-entries") })
	set("snapshot-bytes", func() { cfg.SnapshotBytes = c.Uint64("snapshot-bytes") })
	set("election-timeout", func() { cfg.ElectionTimeout = c.Duration("election-timeout") })
	set("super-digest", func() { cfg.SuperDigest = c.String("super-digest") })
	if c.IsSet("jaas") {
		cfg.Auth.JAASFile = c.String("jaas")
	}
	if c.IsSet("4lw") {
		cfg.FourLetterWords = c.StringSlice("4lw")
	}
	cfg.Normalize()
	return cfg, cfg.Validate()
}

func runServer(c *ucli.Context) error {
	log := newLogger(c)
	if err := quietSysmon(c); err != nil {
		log.Warn().Err(err).Msg("running with the Go runtime's default monitor thread: latency at low load is higher")
	}
	cfg, err := loadServerConfig(c)
	if err != nil {
		return err
	}
	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// Open does not wait for a quorum: a node whose peers are down keeps
	// running and joins once enough of them are up, as a ZooKeeper server.
	if err := srv.Open(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	<-ctx.Done()
	log.Info().Msg("signal received: stopping")
	srv.Stop()
	return nil
}

// parsePeers reads "1=host:port,2=host:port".
func parsePeers(s string) (map[uint64]string, error) {
	peers := map[uint64]string{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.ParseUint(id, 10, 64)
		if !ok || err != nil || n == 0 || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not ID=HOST:PORT", part)
		}
		peers[n] = addr
	}
	return peers, nil
}

// isTerminal reports whether f is a terminal (for console-style logs).
func isTerminal(f *os.File) bool {
	// A character device is not enough: /dev/null is one too, and a
	// command started with no stdin must not wait for an Enter.
	return term.IsTerminal(int(f.Fd()))
}
