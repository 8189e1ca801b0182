package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/bench"
)

func benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "bench",
		Usage:       "load-test any ZooKeeper-protocol server (zkbridge or ZooKeeper) and report ops/s and latency percentiles",
		Subcommands: []*ucli.Command{benchNativeCommand()},
		ArgsUsage:   " ",
		Description: "Workloads: " + strings.Join(bench.Workloads, ", ") + ".\n" +
			"  create  creates new nodes under ROOT/c\n" +
			"  set, get, exists  on random nodes of a keyspace made beforehand (ROOT/d*/k*)\n" +
			"  list    getChildren of a random keyspace directory (--fanout children each)\n" +
			"  mixed   ops picked by --mix weights (delete removes a node the connection created)\n" +
			"  multi   transactions of --multi-ops setData each\n" +
			"  watch   --watchers sessions watch ROOT/w, one more sets it; latency is from the\n" +
			"          write's send to the last watcher's event, after_reply the part after the\n" +
			"          write's reply (rounds run one at a time)\n" +
			"  connect --connections connectors each open a session, close it (closeSession, awaiting\n" +
			"          its reply) and start over; ops/s is sessions/s, latency the handshake's\n" +
			"          (--connect-exists: one exists on ROOT per session)\n" +
			"  churn   as connect, with an ephemeral create in each session; the unit is the whole cycle\n" +
			"  sessions  --connections sessions held open, pinging every third of --session-timeout as\n" +
			"          ZooKeeper's Java client does: ping round trip over --duration, each server's RSS per\n" +
			"          session (--server-pids in --addr order); with --storm-addr, the --hook's \"storm\" phase\n" +
			"          must stop that server, and the run times until its sessions resumed elsewhere\n" +
			"          (none may expire). More sessions than one process may open are split over\n" +
			"          child processes of zkbridge bench.\n" +
			"  watches --watches one-shot data watches (getData with watch) over --keyspace nodes from\n" +
			"          --connections sessions: time to set them, server RSS per watch (--server-pids)\n" +
			"  recursive  a persistent recursive watch on /, while the set workload runs (--rate):\n" +
			"          each setData's event delivery, from the send to the event\n" +
			"  (--watch-kind children: the watch workload's watchers watch ROOT/w's children, fired\n" +
			"          by a create or delete of a child, NodeChildrenChanged)\n" +
			"--hook CMD runs `CMD PHASE` at a workload's phases (sessions: held, storm; watches: before,\n" +
			"armed) and waits for it: the moment for a script to measure or act on the servers.\n" +
			"With --tls (or --tls-ca, --tls-cert) connections speak TLS, e.g. to a secureClientPort\n" +
			"(--probe stays plaintext); " +
			"the connect workload's handshake latency then includes the TLS handshake.\n" +
			"With --probe PATH there is no workload: the first --addr is polled until\n" +
			"getAllChildrenNumber(PATH) answers (with at least --probe-min descendants), and the\n" +
			"time that took is printed; start it with a server to time its restart.\n" +
			"Each connection pipelines up to --outstanding requests (--rate paces them at a fixed ops/s,\n" +
			"to compare servers at the same load). The run warms up, then measures\n" +
			"for --duration or --ops; a progress line goes to stderr, the report to stdout.\n" +
			"Only the servers given in --addr are contacted. Ctrl-C ends the run early with a report.\n" +
			"ZooKeeper refuses more than maxClientCnxns (default 60) connections per client address.\n" +
			"On Linux it re-executes itself once with GODEBUG=" + quietSysmonSetting + ", as the server\n" +
			"does, so that the Go runtime's wake-ups add less to what it measures (GODEBUG=schedtrace=0: not).",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "addr", Aliases: []string{"a"}, Value: "127.0.0.1:2181",
				Usage: "load the server(s) at `HOST:PORT[,...]`, connections spread over them round-robin"},
			&ucli.StringFlag{Name: "workload", Aliases: []string{"w"}, Value: "mixed",
				Usage: "workload `NAME`: " + strings.Join(bench.Workloads, ", ")},
			&ucli.StringFlag{Name: "mix", Value: bench.DefaultMix,
				Usage: "mixed workload's weights, `OP:W,...` (ops: create, delete, set, get, exists, list, multi)"},
			&ucli.IntFlag{Name: "connections", Aliases: []string{"c"}, Value: 10, Usage: "sessions issuing requests (not used by watch; connect: concurrent connectors)"},
			&ucli.IntFlag{Name: "outstanding", Aliases: []string{"o"}, Value: 32, Usage: "requests in flight per connection"},
			&ucli.Float64Flag{Name: "rate", Usage: "pace requests at `OPS` per second over all connections (0: as fast as replies come; not for watch and connect)"},
			&ucli.IntFlag{Name: "payload", Value: 100, Usage: "data `BYTES` per create and set (keyspace nodes hold this much)"},
			&ucli.IntFlag{Name: "keyspace", Value: 1000, Usage: "`N` nodes for set, get, exists, list, multi and mixed"},
			&ucli.IntFlag{Name: "fanout", Value: 10, Usage: "keyspace nodes per directory (children a list returns)"},
			&ucli.IntFlag{Name: "multi-ops", Value: 10, Usage: "setData ops per multi transaction"},
			&ucli.IntFlag{Name: "watchers", Value: 50, Usage: "watch workload: sessions watching the node"},
			&ucli.BoolFlag{Name: "connect-exists", Usage: "connect workload: one exists on ROOT per session before closing it"},
			&ucli.StringFlag{Name: "watch-kind", Value: "data", Usage: "watch workload: `KIND` of watch, data (getData, fired by setData) or children (getChildren, fired by a child's create/delete)"},
			&ucli.IntFlag{Name: "watches", Value: 1000, Usage: "watches workload: one-shot watches to set (at most keyspace × connections)"},
			&ucli.StringFlag{Name: "hook", Usage: "run `CMD PHASE` (sh -c) at the workload's phases and wait for it"},
			&ucli.StringFlag{Name: "storm-addr", Usage: "sessions workload: the server (`HOST:PORT`, one of --addr) the hook's storm phase stops"},
			&ucli.DurationFlag{Name: "storm-wait", Usage: "sessions workload: bound on waiting for the storm's sessions to resume (default 2 × session timeout + 30 s)"},
			&ucli.DurationFlag{Name: "reconnect-jitter", Value: time.Second, Usage: "sessions workload: a lost session waits a random time up to this before reconnecting (the Java client's 1 s)"},
			&ucli.StringFlag{Name: "probe", Usage: "no workload: poll until getAllChildrenNumber(`PATH`) answers, print how long that took (bounded by --timeout)"},
			&ucli.Int64Flag{Name: "probe-min", Usage: "--probe: wait until PATH has at least `N` descendants"},
			&ucli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Value: 10 * time.Second, Usage: "measured time (ignored with --ops)"},
			&ucli.Int64Flag{Name: "ops", Aliases: []string{"n"}, Usage: "measure this many ops (watch: rounds) instead of a duration"},
			&ucli.DurationFlag{Name: "warmup", Value: 2 * time.Second, Usage: "unmeasured load before measuring"},
			&ucli.StringFlag{Name: "root", Value: "/zkbridge-bench", Usage: "`PATH` every node of the run lives under"},
			&ucli.BoolFlag{Name: "no-cleanup", Usage: "keep the nodes the run created (default: delete them at the end)"},
			&ucli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "bound on connecting and on waiting for replies and events"},
			&ucli.DurationFlag{Name: "session-timeout", Value: 30 * time.Second, Usage: "session timeout requested"},
			&ucli.StringFlag{Name: "server-pids", Usage: "also report what these local server processes (`PID[,...]`) spent per op over the measured time: CPU, run-queue wait, switches (Linux)"},
			&ucli.StringFlag{Name: "stages", Usage: "also break a write's time down by stage, from the servers' records over the measured time: their admin addresses (`ADMIN[,...]`, the first --addr's node first; servers started with ZKBRIDGE_WRITE_STAGES=1, same machine)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&ucli.DurationFlag{Name: "progress", Value: time.Second, Usage: "progress line `INTERVAL` on stderr (0: none)"},
		}, clientTLSFlags()...),
		Action: runBench,
	}
}

func benchConfig(c *ucli.Context) (bench.Config, error) {
	cfg := bench.Config{
		Workload:         c.String("workload"),
		Connections:      c.Int("connections"),
		Outstanding:      c.Int("outstanding"),
		Rate:             c.Float64("rate"),
		Payload:          c.Int("payload"),
		Keyspace:         c.Int("keyspace"),
		Fanout:           c.Int("fanout"),
		MultiOps:         c.Int("multi-ops"),
		Watchers:         c.Int("watchers"),
		ConnectExists:    c.Bool("connect-exists"),
		WatchKind:        c.String("watch-kind"),
		Watches:          c.Int("watches"),
		Hook:             c.String("hook"),
		StormAddr:        c.String("storm-addr"),
		StormWait:        c.Duration("storm-wait"),
		ReconnectJitter:  c.Duration("reconnect-jitter"),
		Duration:         c.Duration("duration"),
		Ops:              c.Int64("ops"),
		Warmup:           c.Duration("warmup"),
		Root:             c.String("root"),
		Cleanup:          !c.Bool("no-cleanup"),
		Timeout:          c.Duration("timeout"),
		SessionTimeout:   c.Duration("session-timeout"),
		ProgressInterval: c.Duration("progress"),
	}
	if c.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (flags go before it?)", c.Args().First())
	}
	cfg.Addrs = splitAddrs(c.String("addr"))
	tlsCfg, err := clientTLS(c)
	if err != nil {
		return cfg, fmt.Errorf("%w; see --tls-ca, --tls-cert, --tls-key", err)
	}
	cfg.TLS = tlsCfg
	pids, err := parsePids("server-pids", c.String("server-pids"))
	if err != nil {
		return cfg, err
	}
	cfg.ServerPIDs = pids
	// Zero would mean "default" to Normalize; on the command line it is a mistake.
	for _, f := range []string{"connections", "outstanding", "keyspace", "fanout", "multi-ops", "watchers"} {
		if c.Int(f) <= 0 {
			return cfg, fmt.Errorf("--%s must be positive, not %d", f, c.Int(f))
		}
	}
	if c.Duration("duration") <= 0 && c.Int64("ops") <= 0 {
		return cfg, fmt.Errorf("--duration must be positive (or give --ops)")
	}
	if c.Duration("timeout") <= 0 {
		return cfg, fmt.Errorf("--timeout must be positive")
	}
	if c.IsSet("watch-kind") && cfg.Workload != "watch" {
		return cfg, fmt.Errorf("--watch-kind applies to the watch workload only (--workload watch)")
	}
	if c.IsSet("watches") && cfg.Workload != "watches" {
		return cfg, fmt.Errorf("--watches applies to the watches workload only (--workload watches)")
	}
	if (c.IsSet("storm-addr") || c.IsSet("storm-wait") || c.IsSet("reconnect-jitter")) && cfg.Workload != "sessions" {
		return cfg, fmt.Errorf("--storm-addr, --storm-wait and --reconnect-jitter apply to the sessions workload only (--workload sessions)")
	}
	if may, _ := c.App.Metadata[mayReexecKey].(bool); may && cfg.Workload == "sessions" {
		// More sessions than this process may open go to child processes.
		if self, err := os.Executable(); err == nil {
			cfg.ChildCommand = []string{self, "bench"}
		}
	}
	if c.Bool("connect-exists") && cfg.Workload != "connect" {
		return cfg, fmt.Errorf("--connect-exists applies to the connect workload only (--workload connect)")
	}
	if c.IsSet("mix") && cfg.Workload != "mixed" {
		return cfg, fmt.Errorf("--mix applies to the mixed workload only (--workload mixed)")
	}
	mix, err := bench.ParseMix(c.String("mix"))
	if err != nil {
		return cfg, fmt.Errorf("--mix: %w", err)
	}
	cfg.Mix = mix
	if cfg.ProgressInterval > 0 {
		cfg.Progress = c.App.ErrWriter
		if f, ok := c.App.ErrWriter.(*os.File); ok && isTerminal(f) {
			cfg.ProgressOverwrite = true
		}
	}
	return cfg, nil
}

// probeInterval spaces --probe's attempts: fine enough for restart times
// of a second or more, coarse enough not to load a starting server.
const probeInterval = 20 * time.Millisecond

func runBench(c *ucli.Context) error {
	// The load generator is a Go process too: without this its own
	// wake-ups would add to every latency it measures, whatever the server.
	if err := quietSysmon(c); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "zkbridge bench: %v; measuring with the runtime's default monitor thread\n", err)
	}
	if bench.IsSessionsChild() {
		// A share of a parent's sessions run (bench/sessions.go).
		return bench.RunSessionsChild(os.Stdin, c.App.Writer)
	}
	cfg, err := benchConfig(c)
	if err != nil {
		return err
	}
	if c.IsSet("probe") || c.IsSet("probe-min") {
		return runProbe(c, cfg)
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal the run ends and cleans up; a second one
		// (default handling again) kills the process, cleanup or not.
		<-ctx.Done()
		stop()
	}()
	stageAdmins := splitAddrs(c.String("stages"))
	if len(stageAdmins) > 0 {
		if err := resetStages(ctx, stageAdmins); err != nil {
			return fmt.Errorf("bench --stages: %w", err)
		}
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if len(stageAdmins) > 0 {
		if res.Stages, err = collectStages(c.Context, stageAdmins, res); err != nil {
			return fmt.Errorf("bench --stages: %w", err)
		}
	}
	if c.Bool("json") {
		return writeJSON(c, res)
	}
	if err := res.WriteTable(c.App.Writer); err != nil {
		return err
	}
	if res.Stages != nil {
		fmt.Fprintln(c.App.Writer)
		res.Stages.Print(c.App.Writer)
	}
	return nil
}

// runProbe is bench --probe: it times how long until the server answers.
func runProbe(c *ucli.Context, cfg bench.Config) error {
	if c.String("probe") == "" {
		return fmt.Errorf("--probe-min needs --probe PATH")
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := bench.Probe(ctx, cfg.Addrs[0], c.String("probe"), c.Int64("probe-min"), probeInterval, cfg.Timeout)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if c.Bool("json") {
		return writeJSON(c, res)
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s answered getAllChildrenNumber(%s) = %d after %.3f s (%d attempts)\n",
		res.Server, res.Path, res.Children, res.Waited, res.Attempts)
	return err
}

func writeJSON(c *ucli.Context, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.App.Writer, string(b))
	return err
}
