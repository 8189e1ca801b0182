package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/schollz/progressbar/v3"
	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/migrate"
	"github.com/zkbridge/zkbridge/server/config"
)

// `zkbridge migrate`: move a ZooKeeper ensemble (live, or its data
// directory) into zkbridge with every stat field, ACL and session kept
// (docs/migration.md).
func migrateCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "migrate",
		Usage: "move a ZooKeeper ensemble into zkbridge: export, import, validate, convert, live",
		Description: `Every znode moves with its data, full stat (zxids, versions, the next sequential
suffix, times) and ACL; sessions move with their ids, timeouts and ZooKeeper's
passwords, so clients resume them on zkbridge. --to is any zkbridge node's client
address; the import goes through that node's native API (--native, by default the
same host on port 2191). docs/migration.md is the runbook.`,
		Subcommands: []*ucli.Command{migrateExportCommand(), migrateImportCommand(), migrateValidateCommand(), migrateConvertCommand(), migrateLiveCommand()},
	}
}

func fromFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "from", Usage: "the ZooKeeper ensemble, `HOSTS` (host:port,host:port,...): every server of it", Required: true}
}
func toFlag(required bool) ucli.Flag {
	return &ucli.StringFlag{Name: "to", Usage: "a zkbridge node's client `ADDR` (host:port)", Required: required}
}
func nativeFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "native", Usage: "the zkbridge node's native API `ADDR` (default: --to's host, port 2191); --tls-* flags secure it"}
}

// dialTarget connects to the native API (--native, --tls-*).
func dialTarget(c *ucli.Context) (*migrate.Target, error) {
	addr, err := nativeAddr(c)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := clientTLS(c)
	if err != nil {
		return nil, fmt.Errorf("%w; see --tls-ca, --tls-cert, --tls-key", err)
	}
	return migrate.DialTarget(addr, tlsCfg)
}
func pathFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "path", Value: "/", Usage: "the subtree `PATH` to migrate"}
}
func authFlag() ucli.Flag {
	return &ucli.StringSliceFlag{Name: "auth", Usage: "authenticate as `SCHEME:CRED` (e.g. digest:super:pw; repeatable) to read ACL-protected nodes"}
}
func jsonFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "json", Usage: "print the summary as one JSON object"}
}
func migrateTimeoutFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "timeout", Value: 15 * time.Second, Usage: "bound on connecting to each side"}
}
func sessionTimeoutFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "session-timeout", Value: 30 * time.Second,
		Usage: "timeout given to a session no server shows a connection of (cons shows the others')"}
}
func mergeFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "merge", Usage: "import into a non-empty target: keep the nodes it has, add the missing ones (also: resume a failed import)"}
}

// migrateArgs checks the positional arguments (flags must come first).
func migrateArgs(c *ucli.Context, want int) ([]string, error) {
	args := c.Args().Slice()
	for _, a := range args {
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("flag %s after the arguments: put flags first, e.g. zkbridge migrate %s [flags] %s", a, c.Command.Name, c.Command.ArgsUsage)
		}
	}
	if len(args) != want {
		return nil, fmt.Errorf("%d arguments, want %d: zkbridge migrate %s [flags] %s", len(args), want, c.Command.Name, c.Command.ArgsUsage)
	}
	return args, nil
}

func exportOptions(c *ucli.Context) (migrate.ExportOptions, error) {
	hosts, err := migrate.SplitHosts(c.String("from"))
	if err != nil {
		return migrate.ExportOptions{}, fmt.Errorf("--from: %w", err)
	}
	p := c.String("path")
	if p == "" || p[0] != '/' || (len(p) > 1 && strings.HasSuffix(p, "/")) {
		return migrate.ExportOptions{}, fmt.Errorf("--path %q: want an absolute znode path such as / or /kafka", p)
	}
	return migrate.ExportOptions{Hosts: hosts, Path: p, Auth: c.StringSlice("auth"), Timeout: c.Duration("timeout"),
		DefaultSessionTimeout: int32(c.Duration("session-timeout").Milliseconds()), Workers: 32}, nil
}

// nativeAddr is --native, or --to's host with the default native port.
func nativeAddr(c *ucli.Context) (string, error) {
	if a := c.String("native"); a != "" {
		return a, nil
	}
	to := c.String("to")
	if to == "" {
		return "", errors.New("--to or --native is required: the zkbridge node to import into")
	}
	host, _, err := net.SplitHostPort(to)
	if err != nil {
		return "", fmt.Errorf("--to %q: %w", to, err)
	}
	_, port, _ := net.SplitHostPort(config.DefaultNativeAddr)
	return net.JoinHostPort(host, port), nil
}

// progress is a spinner counting nodes on a terminal (nothing otherwise).
func progress(c *ucli.Context, what string) (func(int64), func()) {
	f, ok := c.App.ErrWriter.(*os.File)
	if !ok || !isTerminal(f) || c.Bool("json") {
		return func(int64) {}, func() {}
	}
	bar := progressbar.NewOptions64(-1, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("znodes"),
		progressbar.OptionClearOnFinish())
	return func(n int64) { _ = bar.Set64(n) }, func() { _ = bar.Finish() }
}

// summary prints v as JSON with --json, else text.
func summary(c *ucli.Context, v any, text string) error {
	if c.Bool("json") {
		return json.NewEncoder(c.App.Writer).Encode(v)
	}
	_, err := fmt.Fprintln(c.App.Writer, text)
	return err
}

// interruptible is a context that ends on SIGINT or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func migrateExportCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "export",
		Usage:     "read a live ZooKeeper ensemble (data, stat, ACLs, sessions) into a file",
		ArgsUsage: " ",
		Description: `Walks the tree through the client port and reads the sessions with the four-letter
words srvr, cons and dump of every server (4lw.commands.whitelist must admit them).
The file is JSON lines (gzip when it ends in .gz), version 1, with an end record:
a truncated file is refused by import.

Examples:
  zkbridge migrate export --from zk1:2181,zk2:2181,zk3:2181 -o zk.jsonl.gz
  zkbridge migrate export --from zk1:2181 --path /kafka --auth digest:super:secret -o kafka.jsonl`,
		Flags: []ucli.Flag{fromFlag(), pathFlag(), authFlag(), jsonFlag(), migrateTimeoutFlag(), sessionTimeoutFlag(),
			&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the export `FILE` (.gz: compressed)", Required: true}},
		Action: func(c *ucli.Context) error {
			if _, err := migrateArgs(c, 0); err != nil {
				return err
			}
			o, err := exportOptions(c)
			if err != nil {
				return err
			}
			ctx, stop := interruptible()
			defer stop()
			var done func()
			o.Progress, done = progress(c, "export")
			start := time.Now()
			end, err := migrate.ExportToFile(ctx, o, c.String("output"))
			done()
			if err != nil {
				return fmt.Errorf("export: %w (nothing usable was written: run it again)", err)
			}
			out := map[string]any{"file": c.String("output"), "nodes": end.Nodes, "sessions": end.Sessions,
				"last_zxid": fmt.Sprintf("%#x", end.LastZxid), "seconds": time.Since(start).Seconds()}
			return summary(c, out, fmt.Sprintf("exported %d znodes and %d sessions to %s (last zxid %#x) in %s",
				end.Nodes, end.Sessions, c.String("output"), end.LastZxid, time.Since(start).Round(time.Millisecond)))
		},
	}
}

func migrateImportCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "import",
		Usage:     "load an export (or a live ensemble, --from) into zkbridge",
		ArgsUsage: "[FILE]",
		Description: `Bulk-loads through replicated commands in large batches, every stat field kept;
raises zxidBase above the source's epoch. The target subtree must be empty unless
--merge (which also resumes a failed import: nodes already there are kept).

Examples:
  zkbridge migrate import --to 10.0.0.5:2181 zk.jsonl.gz
  zkbridge migrate import --to 127.0.0.1:2181 --native 127.0.0.1:2191 --merge zk.jsonl.gz
  zkbridge migrate import --from zk1:2181,zk2:2181 --to 10.0.0.5:2181`,
		Flags: append([]ucli.Flag{toFlag(false), nativeFlag(), mergeFlag(), jsonFlag(), migrateTimeoutFlag(),
			&ucli.StringFlag{Name: "from", Usage: "import straight from the ensemble `HOSTS` instead of a file"},
			pathFlag(), authFlag(), sessionTimeoutFlag()}, clientTLSFlags()...),
		Action: func(c *ucli.Context) error {
			want := 1
			if c.String("from") != "" {
				want = 0
			}
			args, err := migrateArgs(c, want)
			if err != nil {
				return err
			}
			t, err := dialTarget(c)
			if err != nil {
				return err
			}
			defer t.Close()
			ctx, stop := interruptible()
			defer stop()
			prog, done := progress(c, "import")
			start := time.Now()
			var stats migrate.ImportStats
			if want == 1 {
				stats, err = migrate.ImportFile(ctx, t, args[0], c.Bool("merge"), prog)
			} else {
				stats, err = importFromEnsemble(ctx, c, t, prog)
			}
			done()
			if err != nil {
				return err
			}
			secs := time.Since(start).Seconds()
			out := map[string]any{"nodes": stats.Nodes, "sessions": stats.Sessions, "batches": stats.Batches, "retries": stats.Retries,
				"last_zxid": fmt.Sprintf("%#x", stats.LastZxid), "seconds": secs, "znodes_per_second": float64(stats.Nodes) / secs}
			return summary(c, out, fmt.Sprintf("imported %d znodes and %d sessions in %d batches in %.2fs (%.0f znodes/s); target's last zxid %#x",
				stats.Nodes, stats.Sessions, stats.Batches, secs, float64(stats.Nodes)/secs, stats.LastZxid))
		},
	}
}

func importFromEnsemble(ctx context.Context, c *ucli.Context, t *migrate.Target, prog func(int64)) (migrate.ImportStats, error) {
	o, err := exportOptions(c)
	if err != nil {
		return migrate.ImportStats{}, err
	}
	o.Progress = prog
	im, err := t.NewImporter(ctx, migrate.ImporterOptions{Merge: c.Bool("merge")})
	if err != nil {
		return migrate.ImportStats{}, err
	}
	end, err := migrate.Export(ctx, o, func(h migrate.Header) error { return t.Begin(ctx, h.Path, c.Bool("merge"), h.LastZxid) }, im)
	stats, cerr := im.Close()
	if err != nil {
		return stats, fmt.Errorf("import: %w (rerun with --merge to complete it)", err)
	}
	if cerr != nil {
		return stats, fmt.Errorf("import: %w (rerun with --merge to complete it)", cerr)
	}
	last, err := t.Finish(ctx, end.LastZxid)
	stats.LastZxid = last
	return stats, err
}

// dialTargetZK connects a ZooKeeper client to --to.
func dialTargetZK(c *ucli.Context) (*zk.Conn, error) {
	to := c.String("to")
	if to == "" {
		return nil, errors.New("--to is required: a zkbridge node's client address")
	}
	conn, err := migrate.Dial([]string{to}, c.StringSlice("auth"), c.Duration("timeout"))
	if err != nil {
		return nil, fmt.Errorf("the zkbridge target: %w", err)
	}
	return conn, nil
}

func migrateValidateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "validate",
		Usage:     "compare ZooKeeper and zkbridge node by node (data, stat, ACL); exit 1 on a difference",
		ArgsUsage: " ",
		Description: `Examples:
  zkbridge migrate validate --from zk1:2181,zk2:2181 --to 10.0.0.5:2181
  zkbridge migrate validate --from zk1:2181 --to 127.0.0.1:2181 --path /kafka --auth digest:super:secret --json`,
		Flags: []ucli.Flag{fromFlag(), toFlag(true), pathFlag(), authFlag(), jsonFlag(), migrateTimeoutFlag(),
			&ucli.IntFlag{Name: "max", Value: 20, Usage: "print at most `N` differences"},
			&ucli.StringSliceFlag{Name: "exclude", Usage: "leave the subtree `PATH` out (repeatable), e.g. one whose ephemerals come and go"}},
		Action: func(c *ucli.Context) error {
			if _, err := migrateArgs(c, 0); err != nil {
				return err
			}
			o, err := exportOptions(c)
			if err != nil {
				return err
			}
			src, err := migrate.Dial(o.Hosts, o.Auth, o.Timeout)
			if err != nil {
				return fmt.Errorf("the ZooKeeper source: %w", err)
			}
			defer src.Close()
			dst, err := dialTargetZK(c)
			if err != nil {
				return err
			}
			defer dst.Close()
			ctx, stop := interruptible()
			defer stop()
			res, err := migrate.Validate(ctx, src, dst, o.Path, c.Int("max"), 32, c.StringSlice("exclude")...)
			if err != nil {
				return fmt.Errorf("validate: %w", err)
			}
			if c.Bool("json") {
				if err := json.NewEncoder(c.App.Writer).Encode(res); err != nil {
					return err
				}
			} else {
				for _, d := range res.First {
					fmt.Fprintln(c.App.Writer, d)
				}
				fmt.Fprintf(c.App.Writer, "%d znodes compared, %d differences\n", res.Nodes, res.Count)
			}
			if res.Count > 0 {
				return ucli.Exit(fmt.Sprintf("validate: %d differences (a live migration's catch-up, or `migrate import --merge`, brings the missing nodes over)", res.Count), 1)
			}
			return nil
		},
	}
}

func migrateConvertCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "convert",
		Usage:     "load a stopped ZooKeeper's data directory (snapshot + txn logs) into zkbridge or a file",
		ArgsUsage: " ",
		Description: `Reads the newest snapshot (plain, .gz or .snappy; Adler32 seals verified) and replays
every later transaction; a torn or zero-filled log tail ends the replay, damage in the
middle is an error naming file and offset. Containers and TTL nodes keep their kind.
Stop ZooKeeper first (or copy its directories).

Examples:
  zkbridge migrate convert --snap-dir /var/lib/zookeeper/version-2 --log-dir /var/lib/zookeeper/version-2 --to 10.0.0.5:2181
  zkbridge migrate convert --snap-dir /data/zk --log-dir /datalog/zk -o zk.jsonl.gz`,
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "snap-dir", Usage: "`DIR` holding snapshot.* (dataDir or its version-2)", Required: true},
			&ucli.StringFlag{Name: "log-dir", Usage: "`DIR` holding log.* (dataLogDir or its version-2; default: --snap-dir)"},
			toFlag(false), nativeFlag(), mergeFlag(), pathFlag(), jsonFlag(),
			&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write an export `FILE` instead of importing"}},
			clientTLSFlags()...),
		Action: func(c *ucli.Context) error {
			if _, err := migrateArgs(c, 0); err != nil {
				return err
			}
			start := time.Now()
			var res *migrate.ConvertResult
			var stats migrate.ImportStats
			var err error
			if out := c.String("output"); out != "" {
				var w *migrate.Writer
				res, err = migrate.Convert(c.String("snap-dir"), c.String("log-dir"), c.String("path"), func(h migrate.Header) error {
					w, err = migrate.Create(out, h)
					return err
				}, writerOf(&w))
				if err == nil {
					err = w.Close()
				} else if w != nil {
					w.Abort()
				}
				if err != nil {
					return fmt.Errorf("convert: %w", err)
				}
			} else {
				t, err := dialTarget(c)
				if err != nil {
					return fmt.Errorf("%w (or -o FILE to write an export)", err)
				}
				defer t.Close()
				ctx, stop := interruptible()
				defer stop()
				im, err := t.NewImporter(ctx, migrate.ImporterOptions{Merge: c.Bool("merge")})
				if err != nil {
					return err
				}
				res, err = migrate.Convert(c.String("snap-dir"), c.String("log-dir"), c.String("path"), func(h migrate.Header) error {
					return t.Begin(ctx, h.Path, c.Bool("merge"), h.LastZxid)
				}, im)
				var cerr error
				stats, cerr = im.Close()
				if err == nil {
					err = cerr
				}
				if err != nil {
					return fmt.Errorf("convert: %w", err)
				}
				if stats.LastZxid, err = t.Finish(ctx, res.Zxid); err != nil {
					return err
				}
			}
			secs := time.Since(start).Seconds()
			return summary(c, map[string]any{"convert": res, "import": stats, "seconds": secs},
				fmt.Sprintf("converted %d znodes and %d sessions (snapshot %s, replayed up to zxid %#x) in %.2fs%s",
					res.Nodes, res.Sessions, res.Snapshot, res.Zxid, secs, tailNote(res.Tails)))
		},
	}
}

func tailNote(tails []string) string {
	if len(tails) == 0 {
		return ""
	}
	return "; replay ended at " + strings.Join(tails, ", ")
}

// writerOf is a Sink writing to *w once it exists.
func writerOf(w **migrate.Writer) migrate.Sink { return lazyWriter{w} }

type lazyWriter struct{ w **migrate.Writer }

func (l lazyWriter) Session(s migrate.Session) error { return (*l.w).Session(s) }
func (l lazyWriter) Node(n *migrate.Node) error      { return (*l.w).Node(n) }

func migrateLiveCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "live",
		Usage:     "migrate while ZooKeeper serves: import, then catch up until quiet, then a final pass",
		ArgsUsage: " ",
		Description: `Imports the ensemble, then runs catch-up passes that send every node whose data,
stat or ACL changed (and deletes), printing each pass. Imported sessions are kept
alive on zkbridge meanwhile. On a terminal, press Enter after stopping the old writers
(or moving clients) for the final pass; without a terminal (or with --until-quiet) it
ends by itself after a pass that finds nothing. SIGINT: the final pass, then exit.

Examples:
  zkbridge migrate live --from zk1:2181,zk2:2181,zk3:2181 --to 10.0.0.5:2181
  zkbridge migrate live --from zk1:2181 --to 127.0.0.1:2181 --native 127.0.0.1:2191 --until-quiet --json
  zkbridge migrate live --from zk1:2181,zk2:2181 --to 10.0.0.5:2181 --fence --auth digest:super:secret`,
		Flags: append([]ucli.Flag{fromFlag(), toFlag(true), nativeFlag(), pathFlag(), authFlag(), jsonFlag(), migrateTimeoutFlag(), sessionTimeoutFlag(),
			&ucli.BoolFlag{Name: "merge", Usage: "run again over a target that has part of the subtree (a failed run): the catch-up passes overwrite what differs"},
			&ucli.BoolFlag{Name: "until-quiet", Usage: "end after the first pass that finds no difference (the default without a terminal)"},
			&ucli.BoolFlag{Name: "fence", Usage: "before the final pass, make the migrated subtree read-only on ZooKeeper (ACLs keep only READ; restored if the migration fails; zkbridge gets the original ACLs)"},
			&ucli.DurationFlag{Name: "pause", Value: time.Second, Usage: "pause between catch-up passes"}},
			clientTLSFlags()...),
		Action: func(c *ucli.Context) error {
			if _, err := migrateArgs(c, 0); err != nil {
				return err
			}
			o, err := exportOptions(c)
			if err != nil {
				return err
			}
			t, err := dialTarget(c)
			if err != nil {
				return err
			}
			defer t.Close()
			dst, err := dialTargetZK(c)
			if err != nil {
				return err
			}
			defer dst.Close()
			untilQuiet := c.Bool("until-quiet") || !isTerminal(os.Stdin)
			final := make(chan struct{})
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			finalReq := make(chan struct{}, 2)
			go func() {
				<-sigs
				finalReq <- struct{}{}
			}()
			if !untilQuiet {
				fmt.Fprintln(c.App.ErrWriter, "press Enter for the final pass once the old writers are stopped")
				go func() {
					// Enter (any byte) asks for the final pass; a closed
					// stdin asks for nothing (SIGINT still does).
					if n, _ := io.ReadAll(io.LimitReader(os.Stdin, 1)); len(n) > 0 {
						finalReq <- struct{}{}
					}
				}()
			}
			go func() {
				<-finalReq
				close(final) // the only closer
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// A second signal aborts; the first asks for the final pass,
			// which is bounded so the command ends within 30 s.
			go func() {
				<-final
				select {
				case <-sigs:
				case <-time.After(30 * time.Second):
				case <-ctx.Done():
					return
				}
				cancel()
			}()
			start := time.Now()
			res, err := migrate.Live(ctx, migrate.LiveOptions{Export: o, Target: t, TargetZK: dst, Pause: c.Duration("pause"),
				UntilQuiet: untilQuiet, Final: final, Fence: c.Bool("fence"), FinalWithin: 20 * time.Second, Merge: c.Bool("merge"), Pass: func(p migrate.PassReport) {
					if c.Bool("json") {
						_ = json.NewEncoder(c.App.Writer).Encode(p)
						return
					}
					fmt.Fprintf(c.App.Writer, "pass %d%s: %d znodes caught up, %d deleted, %d new sessions\n", p.Pass, map[bool]string{true: " (final)"}[p.Final], p.Changed, p.Deleted, p.Sessions)
				}})
			if err != nil {
				return fmt.Errorf("live: %w (the target keeps what was imported: rerun with --merge to resume)", err)
			}
			secs := time.Since(start).Seconds()
			if res.Lag > 0 {
				fmt.Fprintf(c.App.ErrWriter, "warning: the last final pass still found %d changes: writers are still active on ZooKeeper; run `zkbridge migrate validate` and catch up with `migrate live` on the subtree, or stop them first\n", res.Lag)
			}
			return summary(c, map[string]any{"live": res, "seconds": secs},
				fmt.Sprintf("live migration done: %d znodes imported, %d catch-up passes, %d znodes fenced read-only on ZooKeeper, target's last zxid %#x, %.1fs", res.Initial.Nodes, res.Passes, res.Fenced, res.LastZxid, secs))
		},
	}
}
