package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	zkbridgev1 "github.com/zkbridge/zkbridge/api/zkbridge/v1"
	"github.com/zkbridge/zkbridge/client"
	"github.com/zkbridge/zkbridge/server"
)

// nativeFlags are the flags of every command that talks to the native API.
func nativeFlags(extra ...ucli.Flag) []ucli.Flag {
	return append([]ucli.Flag{
		&ucli.StringFlag{Name: "addr", Aliases: []string{"a"}, Value: client.DefaultAddr, EnvVars: []string{"ZKBRIDGE_NATIVE_ADDR"},
			Usage: "native API of one or more nodes, `HOST:PORT[,...]` (zkbridge server --native-addr); calls move to the next when one is down"},
		&ucli.StringFlag{Name: "tenant", Usage: "tenant `NAME` (only the default tenant, empty, exists today)"},
		&ucli.BoolFlag{Name: "json", Usage: "print JSON, one object per line"},
		&ucli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "bound on connecting and on each call (not on a stream or a held lease)"},
	}, append(clientTLSFlags(), extra...)...)
}

func nativeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "native",
		Usage: "use the native gRPC API: leases (register, heartbeat), the change feed (fetch, snapshot), ids, znodes, status",
		Description: "Each subcommand talks to the native API of the nodes in --addr (default " + client.DefaultAddr + ",\n" +
			"zkbridge server --native-addr). Reads move to the next node when one is down; a write moves only\n" +
			"when the node refused it before doing anything. The contract: docs/native-api.md.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native put /app config-v1\n" +
			"  zkbridge native get /app\n" +
			"  zkbridge native register --group workers --member w1 --payload host-a:9000 --ttl 10s\n" +
			"  zkbridge native fetch --prefix /app --follow --json\n" +
			"  zkbridge native allocate-id --count 100 /table_seqid\n" +
			"  zkbridge native status --addr 10.0.0.1:2191,10.0.0.2:2191,10.0.0.3:2191\n" +
			"  zkbridge native status --tls-ca ca.pem --tls-cert client.pem   (a node with ssl.* configured)",
		Subcommands: []*ucli.Command{
			nativeRegisterCommand(),
			nativeHeartbeatCommand(),
			nativeFetchCommand(),
			nativeSnapshotCommand(),
			nativeAllocateCommand(),
			nativeGetCommand(),
			nativePutCommand(),
			nativeDeleteCommand(),
			nativeListCommand(),
			nativeStatusCommand(),
			nativeSessionsCommand(),
		},
	}
}

// dialNative connects to --addr.
func dialNative(c *ucli.Context) (*client.Client, error) {
	addrs := splitAddrs(c.String("addr"))
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, errors.New("--timeout must be positive")
	}
	tlsCfg, err := clientTLS(c)
	if err != nil {
		return nil, fmt.Errorf("%w; see --tls-ca, --tls-cert, --tls-key", err)
	}
	cl, err := client.Dial(c.Context, addrs, client.WithTenant(c.String("tenant")), client.WithDialTimeout(timeout),
		client.WithFailoverWindow(timeout), client.WithTLS(tlsCfg))
	if err != nil {
		return nil, fmt.Errorf("%w; see --addr", err)
	}
	return cl, nil
}

// callContext bounds one call by --timeout.
func callContext(c *ucli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, c.Duration("timeout"))
}

// serializableFlag is --serializable of the reads.
func serializableFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "serializable", Usage: "read the answering node's replica as it is (possibly stale)"}
}

// readOptions are a read's options from its flags.
func readOptions(c *ucli.Context) []client.ReadOption {
	if c.Bool("serializable") {
		return []client.ReadOption{client.Serializable()}
	}
	return nil
}

// withNative dials --addr and runs one call, bounded by --timeout.
func withNative(c *ucli.Context, call func(ctx context.Context, cl *client.Client) error) error {
	cl, err := dialNative(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := callContext(c)
	defer cancel()
	return call(ctx, cl)
}

// nativeArgs checks the positional arguments: exactly want of them, and no
// flag among them (urfave/cli stops reading flags at the first argument).
func nativeArgs(c *ucli.Context, want int) ([]string, error) {
	args := c.Args().Slice()
	usage := "zkbridge " + c.Command.FullName() + " [flags] " + c.Command.ArgsUsage
	for _, a := range args {
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("flag %s after the arguments: put flags first, e.g. %s", a, usage)
		}
	}
	if len(args) != want {
		return nil, fmt.Errorf("%d arguments, want %d: %s", len(args), want, usage)
	}
	return args, nil
}

// explain adds what to do next to a native API error.
func explain(err error) error {
	if err == nil {
		return nil
	}
	var conflict *client.ConflictError
	if errors.As(err, &conflict) {
		return fmt.Errorf("%s is registered already (epoch %d, lease 0x%x): to take it over, register with --expected-epoch %d",
			conflict.Path, conflict.HolderEpoch, uint64(conflict.HolderLease), conflict.HolderEpoch)
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		if !strings.Contains(msg, "--native-addr") {
			msg += " (is zkbridge running with --native-addr at --addr, with a quorum? try another node: --addr a,b,c; zkbridge native status)"
		}
	case codes.DeadlineExceeded:
		msg += " (no answer within --timeout: is the cluster overloaded or without a leader? zkbridge native status)"
	case codes.PermissionDenied:
		msg += " (refused by a cutover policy or the znode's ACL: zkbridge cutover list)"
	case codes.Aborted:
		msg += " (the znode changed: read it again for its current version)"
	case codes.Unimplemented:
		msg += " (this server has no such call: an older zkbridge?)"
	}
	return errors.New(msg)
}

func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// hexID prints a lease or session id as ZooKeeper does.
func hexID(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// parseLease reads a lease id in hex (0x…) or decimal.
func parseLease(s string) (int64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("--lease %q is not a lease id (0x… as register prints it, or decimal)", s)
	}
	return int64(n), nil
}

// statJSON is a znode's stat in the CLI's JSON.
type statJSON struct {
	Czxid          int64  `json:"czxid"`
	Mzxid          int64  `json:"mzxid"`
	Pzxid          int64  `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeral_owner,omitempty"`
	DataLength     int32  `json:"data_length"`
	NumChildren    int32  `json:"num_children"`
}

func statOf(s *zkbridgev1.Stat) *statJSON {
	if s == nil {
		return nil
	}
	out := &statJSON{Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, DataLength: s.DataLength, NumChildren: s.NumChildren}
	if s.EphemeralOwner != 0 {
		out.EphemeralOwner = hexID(s.EphemeralOwner)
	}
	return out
}

// dataJSON sets data (text) or data_base64 (anything else) in m.
func dataJSON(m map[string]any, data []byte) {
	if utf8.Valid(data) {
		m["data"] = string(data)
	} else {
		m["data_base64"] = base64.StdEncoding.EncodeToString(data)
	}
}

func nativeRegisterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "register",
		Usage: "register a member under a lease and hold it (heartbeats) until interrupted; Ctrl-C deregisters",
		Description: "Creates the member's ephemeral znode (profile generic: /GROUP/ids/MEMBER; fluss:\n" +
			"/fluss/tabletservers/ids/MEMBER with TabletServerRegistration JSON), prints its epoch, lease\n" +
			"and path, and keeps the lease alive, moving to another node of --addr when one fails.\n" +
			"SIGINT or SIGTERM deregisters (the znode goes at once) and exits 0; a lost lease exits 1.\n" +
			"A live registration of the same member is refused with its epoch: --expected-epoch takes it over.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native register --group workers --member w1 --payload host-a:9000 --ttl 10s\n" +
			"  zkbridge native register --profile fluss --member 3 --ttl 20s \\\n" +
			"      --payload '{\"version\":4,\"listeners\":\"FLUSS://10.0.0.3:9123\",\"register_timestamp\":1765000000000}'",
		Flags: nativeFlags(
			&ucli.StringFlag{Name: "profile", Value: "generic", Usage: "`PROFILE`: generic or fluss"},
			&ucli.StringFlag{Name: "group", Usage: "group `NAME` (fluss: tabletservers, the default there)"},
			&ucli.StringFlag{Name: "member", Usage: "member `ID`, one path segment (fluss: the tablet server id)"},
			&ucli.StringFlag{Name: "payload", Usage: "the znode's data, `TEXT`"},
			&ucli.StringFlag{Name: "payload-file", Usage: "the znode's data from `FILE` (- for standard input)"},
			&ucli.DurationFlag{Name: "ttl", Value: 10 * time.Second, Usage: "lease `TTL`, clamped by the server to its session timeout bounds"},
			&ucli.Int64Flag{Name: "expected-epoch", Usage: "take over the live registration whose epoch is `EPOCH`"},
		),
		Action: runRegister,
	}
}

func runRegister(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	spec := client.RegisterSpec{Profile: c.String("profile"), Group: c.String("group"), MemberID: c.String("member"), TTL: c.Duration("ttl")}
	if spec.Profile == "fluss" && spec.Group == "" {
		spec.Group = "tabletservers"
	}
	if spec.Group == "" || spec.MemberID == "" {
		return errors.New("--group and --member are required, e.g. zkbridge native register --group workers --member w1")
	}
	switch {
	case c.IsSet("payload") && c.IsSet("payload-file"):
		return errors.New("--payload or --payload-file, not both")
	case c.IsSet("payload-file"):
		var data []byte
		var err error
		if f := c.String("payload-file"); f == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return fmt.Errorf("--payload-file: %w", err)
		}
		spec.Payload = data
	default:
		spec.Payload = []byte(c.String("payload"))
	}
	if c.IsSet("expected-epoch") {
		e := c.Int64("expected-epoch")
		spec.ExpectedEpoch = &e
	}
	// Interrupts deregister; from here on they no longer kill the process.
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl, err := dialNative(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	lease, err := cl.Register(rctx, spec)
	cancel()
	if err != nil {
		return explain(err)
	}
	if c.Bool("json") {
		printJSON(c.App.Writer, map[string]any{"event": "registered", "path": lease.Path(), "epoch": lease.Epoch(),
			"lease": hexID(lease.ID()), "ttl_ms": lease.TTL().Milliseconds()})
	} else {
		fmt.Fprintf(c.App.Writer, "registered %s: epoch %d, lease %s, TTL %v; holding it until interrupted (Ctrl-C deregisters)\n",
			lease.Path(), lease.Epoch(), hexID(lease.ID()), lease.TTL())
	}
	select {
	case <-lease.Lost():
		return fmt.Errorf("%v (register again to come back)", lease.Err())
	case <-ctx.Done():
	}
	stop()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.Duration("timeout"))
	defer cancel()
	if err := lease.Close(dctx); err != nil {
		return fmt.Errorf("deregister %s: %w (it expires within its TTL anyway)", lease.Path(), explain(err))
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"event": "deregistered", "path": lease.Path(), "lease": hexID(lease.ID())})
	}
	_, err = fmt.Fprintf(c.App.Writer, "deregistered %s (lease %s)\n", lease.Path(), hexID(lease.ID()))
	return err
}

func nativeHeartbeatCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "heartbeat",
		Usage: "renew a lease once (its deadline becomes now + its TTL)",
		Description: "For a lease held by a process that cannot heartbeat itself for a while; `register`\n" +
			"renews its own lease. A lease that expired is gone with its znodes: register again.\n" +
			"\n" +
			"Example:\n" +
			"  zkbridge native heartbeat --lease 0x100000002a0001",
		Flags:  nativeFlags(&ucli.StringFlag{Name: "lease", Usage: "lease `ID` as register prints it (0x…)", Required: true}),
		Action: runHeartbeat,
	}
}

func runHeartbeat(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	id, err := parseLease(c.String("lease"))
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		ttl, err := cl.Heartbeat(ctx, id)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("lease %s expired or never existed: its registration is gone (register again)", hexID(id))
		}
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"lease": hexID(id), "ttl_ms": ttl})
		}
		_, err = fmt.Fprintf(c.App.Writer, "lease %s renewed: TTL %v from now\n", hexID(id), time.Duration(ttl)*time.Millisecond)
		return err
	})
}

var changeNames = map[zkbridgev1.ChangeType]string{
	zkbridgev1.ChangeType_CHANGE_TYPE_CREATED:         "created",
	zkbridgev1.ChangeType_CHANGE_TYPE_DELETED:         "deleted",
	zkbridgev1.ChangeType_CHANGE_TYPE_DATA:            "data",
	zkbridgev1.ChangeType_CHANGE_TYPE_ACL:             "acl",
	zkbridgev1.ChangeType_CHANGE_TYPE_SESSION_CREATED: "session-created",
	zkbridgev1.ChangeType_CHANGE_TYPE_SESSION_CLOSED:  "session-closed",
}

func changeName(t zkbridgev1.ChangeType) string {
	if s, ok := changeNames[t]; ok {
		return s
	}
	return strings.ToLower(strings.TrimPrefix(t.String(), "CHANGE_TYPE_"))
}

func prefixFlag() ucli.Flag {
	return &ucli.StringSliceFlag{Name: "prefix", Aliases: []string{"p"}, Usage: "subtree `PATH` (repeatable; none: the whole tree, session openings and closings too)"}
}

func nativeFetchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "fetch",
		Usage: "print the change feed: every committed change under the prefixes, in offset (zxid) order",
		Description: "Prints the changes from --from (0: the oldest retained) up to the newest, or with --follow\n" +
			"keeps streaming until interrupted, resuming on another node of --addr after a failure without\n" +
			"a gap or a repeat. When --from is older than the retained change log, a snapshot of the\n" +
			"subtrees is printed first and the feed goes on after its offset.\n" +
			"Text: one line per change, OFFSET TYPE PATH and what changed. --json: one object per line,\n" +
			"{\"offset\",\"time\",\"changes\":[…]} per transaction, {\"snapshot_offset\",\"nodes\":[…]} per snapshot.\n" +
			"Resume a feed from the last offset printed + 1.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native fetch --prefix /app\n" +
			"  zkbridge native fetch --prefix /fluss --from 4294967312 --follow --json",
		Flags: nativeFlags(prefixFlag(),
			&ucli.Int64Flag{Name: "from", Usage: "first `OFFSET` wanted (0: the oldest retained)"},
			&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep streaming new changes until interrupted"},
		),
		Action: runFetch,
	}
}

func runFetch(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	if c.Int64("from") < 0 {
		return errors.New("--from must not be negative")
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl, err := dialNative(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Without --follow: up to the newest offset when the fetch started.
	target := int64(-1)
	if !c.Bool("follow") {
		gctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
		root, err := cl.Get(gctx, "/")
		cancel()
		if err != nil {
			return explain(err)
		}
		target = root.Zxid
		if c.Int64("from") > target {
			return nil
		}
	}
	w := cl.Watch(ctx, c.StringSlice("prefix"), c.Int64("from"), client.WithProgress(), client.WithMaxWait(200*time.Millisecond))
	defer w.Close()
	out := c.App.Writer
	for ev := range w.Events() {
		switch {
		case ev.Snapshot != nil:
			if err := printSnapshot(out, c.Bool("json"), ev.Snapshot, true); err != nil {
				return err
			}
		case ev.Record != nil:
			if err := printRecord(out, c.Bool("json"), ev.Record); err != nil {
				return err
			}
		}
		if target >= 0 && ev.Progress >= target {
			return nil
		}
	}
	if err := w.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return explain(err)
	}
	return nil
}

func printRecord(w io.Writer, asJSON bool, r *zkbridgev1.ChangeRecord) error {
	if asJSON {
		var changes []map[string]any
		for _, ch := range r.Changes {
			m := map[string]any{"type": changeName(ch.Type)}
			if ch.Path != "" {
				m["path"] = ch.Path
			}
			if ch.Session != 0 {
				m["session"] = hexID(ch.Session)
			}
			if ch.DataSuperseded {
				m["data_superseded"] = true
			} else if ch.Type == zkbridgev1.ChangeType_CHANGE_TYPE_CREATED || ch.Type == zkbridgev1.ChangeType_CHANGE_TYPE_DATA {
				dataJSON(m, ch.Data)
			}
			if ch.Stat != nil {
				m["stat"] = statOf(ch.Stat)
			}
			changes = append(changes, m)
		}
		return printJSON(w, map[string]any{"offset": r.Offset, "time": r.Time, "changes": changes})
	}
	for _, ch := range r.Changes {
		line := fmt.Sprintf("%d %s", r.Offset, changeName(ch.Type))
		if ch.Path != "" {
			line += " " + ch.Path
		}
		if ch.Session != 0 {
			line += " session " + hexID(ch.Session)
		}
		if ch.Stat != nil {
			line += fmt.Sprintf(" version %d", ch.Stat.Version)
			if ch.Stat.EphemeralOwner != 0 {
				line += " ephemeral " + hexID(ch.Stat.EphemeralOwner)
			}
		}
		if ch.DataSuperseded {
			line += " (data superseded by a later change)"
		} else if ch.Type == zkbridgev1.ChangeType_CHANGE_TYPE_CREATED || ch.Type == zkbridgev1.ChangeType_CHANGE_TYPE_DATA {
			line += " " + strconv.Quote(string(ch.Data))
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// printSnapshot prints an image: in a feed (JSON: one object) or alone
// (JSON: one object per znode).
func printSnapshot(w io.Writer, asJSON bool, s *client.Snapshot, inFeed bool) error {
	node := func(n *zkbridgev1.SnapshotNode) map[string]any {
		m := map[string]any{"path": n.Path, "stat": statOf(n.Stat)}
		dataJSON(m, n.Data)
		return m
	}
	if asJSON {
		if inFeed {
			nodes := []map[string]any{}
			for _, n := range s.Nodes {
				nodes = append(nodes, node(n))
			}
			return printJSON(w, map[string]any{"snapshot_offset": s.Offset, "nodes": nodes})
		}
		for _, n := range s.Nodes {
			m := node(n)
			m["offset"] = s.Offset
			if err := printJSON(w, m); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(w, "snapshot at offset %d: %d znodes\n", s.Offset, len(s.Nodes))
	for _, n := range s.Nodes {
		line := fmt.Sprintf("%s version %d %s", n.Path, n.Stat.GetVersion(), strconv.Quote(string(n.Data)))
		if n.Stat.GetEphemeralOwner() != 0 {
			line += " ephemeral " + hexID(n.Stat.EphemeralOwner)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if inFeed {
		_, err := fmt.Fprintf(w, "(the feed goes on from offset %d)\n", s.Offset+1)
		return err
	}
	return nil
}

func nativeSnapshotCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "snapshot",
		Usage: "print a consistent image of subtrees at one offset (resume a feed from that offset + 1)",
		Description: "Every znode under the prefixes, parents first, as of one offset. Text: a header line with\n" +
			"the offset, then PATH version N \"DATA\" per znode. --json: one object per znode, each with the offset.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native snapshot --prefix /fluss\n" +
			"  zkbridge native snapshot --json",
		Flags:  nativeFlags(prefixFlag()),
		Action: runSnapshot,
	}
}

func runSnapshot(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		s, err := cl.Snapshot(ctx, c.StringSlice("prefix"))
		if err != nil {
			return explain(err)
		}
		return printSnapshot(c.App.Writer, c.Bool("json"), s, false)
	})
}

func nativeAllocateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "allocate-id",
		Usage:     "reserve a block of ids from a counter znode (Curator DistributedAtomicLong format)",
		ArgsUsage: "COUNTER_PATH",
		Description: "Reserves --count consecutive ids and prints the first and the last. The counter holds an\n" +
			"8-byte big-endian long, as Curator's DistributedAtomicLong does, so ZooKeeper-mode code\n" +
			"incrementing the same znode never gets an id twice. A missing counter starts at 0.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native allocate-id /table_seqid\n" +
			"  zkbridge native allocate-id --count 100 --json /table_seqid",
		Flags:  nativeFlags(&ucli.Int64Flag{Name: "count", Aliases: []string{"n"}, Value: 1, Usage: "ids to reserve, `N`"}),
		Action: runAllocate,
	}
}

func runAllocate(c *ucli.Context) error {
	args, err := nativeArgs(c, 1)
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		first, last, err := cl.AllocateID(ctx, args[0], c.Int64("count"))
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"counter": args[0], "first": first, "last": last})
		}
		_, err = fmt.Fprintf(c.App.Writer, "%d %d\n", first, last)
		return err
	})
}

func nativeGetCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "get",
		Usage:     "print a znode's data (linearizable unless --serializable)",
		ArgsUsage: "PATH",
		Description: "Examples:\n" +
			"  zkbridge native get /app\n" +
			"  zkbridge native get --stat /app\n" +
			"  zkbridge native get --json --serializable /fluss/tabletservers/ids/3",
		Flags: nativeFlags(
			serializableFlag(),
			&ucli.BoolFlag{Name: "stat", Aliases: []string{"s"}, Usage: "print the stat too"},
		),
		Action: runGet,
	}
}

func runGet(c *ucli.Context) error {
	args, err := nativeArgs(c, 1)
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		r, err := cl.Get(ctx, args[0], readOptions(c)...)
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			m := map[string]any{"path": args[0], "stat": statOf(r.Stat), "zxid": r.Zxid}
			dataJSON(m, r.Data)
			return printJSON(c.App.Writer, m)
		}
		w := c.App.Writer
		w.Write(r.Data)
		fmt.Fprintln(w)
		if c.Bool("stat") {
			printStat(w, r.Stat)
		}
		return nil
	})
}

// printStat prints a stat as zkCli.sh's stat does (times in UTC).
func printStat(w io.Writer, s *zkbridgev1.Stat) {
	ms := func(t int64) string { return time.UnixMilli(t).UTC().Format(time.RFC3339Nano) }
	fmt.Fprintf(w, "cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\ncversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\ndataLength = %d\nnumChildren = %d\n",
		s.Czxid, ms(s.Ctime), s.Mzxid, ms(s.Mtime), s.Pzxid, s.Cversion, s.Version, s.Aversion, uint64(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

func nativePutCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "put",
		Usage:     "create a persistent znode or replace its data (its parent must exist)",
		ArgsUsage: "PATH DATA",
		Description: "--version makes it a compare-and-set (a mismatch fails); --create-only fails on an existing znode.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native put /app config-v1\n" +
			"  zkbridge native put --version 0 /app config-v2\n" +
			"  zkbridge native put --create-only /app/lock holder-1",
		Flags: nativeFlags(
			&ucli.IntFlag{Name: "version", Value: -1, Usage: "expected `VERSION` (-1: any)"},
			&ucli.BoolFlag{Name: "create-only", Usage: "fail when the znode exists"},
		),
		Action: runPut,
	}
}

func runPut(c *ucli.Context) error {
	args, err := nativeArgs(c, 2)
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		opts := []client.WriteOption{client.ExpectVersion(int32(c.Int("version")))}
		if c.Bool("create-only") {
			opts = append(opts, client.CreateOnly())
		}
		r, err := cl.Put(ctx, args[0], []byte(args[1]), opts...)
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"path": args[0], "created": r.Created, "stat": statOf(r.Stat)})
		}
		verb := "set"
		if r.Created {
			verb = "created"
		}
		_, err = fmt.Fprintf(c.App.Writer, "%s %s, version %d\n", verb, args[0], r.Stat.GetVersion())
		return err
	})
}

func nativeDeleteCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "delete",
		Usage:     "delete a znode without children",
		ArgsUsage: "PATH",
		Description: "Examples:\n" +
			"  zkbridge native delete /app/lock\n" +
			"  zkbridge native delete --version 3 /app",
		Flags:  nativeFlags(&ucli.IntFlag{Name: "version", Value: -1, Usage: "expected `VERSION` (-1: any)"}),
		Action: runDelete,
	}
}

func runDelete(c *ucli.Context) error {
	args, err := nativeArgs(c, 1)
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		if err := cl.Delete(ctx, args[0], client.ExpectVersion(int32(c.Int("version")))); err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"path": args[0], "deleted": true})
		}
		_, err = fmt.Fprintf(c.App.Writer, "deleted %s\n", args[0])
		return err
	})
}

func nativeListCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "list",
		Usage:     "print a znode's children, sorted, one per line",
		ArgsUsage: "PATH",
		Description: "Examples:\n" +
			"  zkbridge native list /\n" +
			"  zkbridge native list --json /fluss/tabletservers/ids",
		Flags:  nativeFlags(serializableFlag()),
		Action: runList,
	}
}

func runList(c *ucli.Context) error {
	args, err := nativeArgs(c, 1)
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		r, err := cl.List(ctx, args[0], readOptions(c)...)
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			children := r.Children
			if children == nil {
				children = []string{}
			}
			return printJSON(c.App.Writer, map[string]any{"path": args[0], "children": children, "stat": statOf(r.Stat), "zxid": r.Zxid})
		}
		for _, ch := range r.Children {
			fmt.Fprintln(c.App.Writer, ch)
		}
		return nil
	})
}

func nativeStatusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "the answering node's view of the Raft shard: roles, terms, indexes and lag of every replica",
		Description: "The same view as zkbridge raft status, through the native API.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native status\n" +
			"  zkbridge native status --json --addr 10.0.0.1:2191,10.0.0.2:2191",
		Flags:  nativeFlags(),
		Action: runNativeStatus,
	}
}

func runNativeStatus(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		st, err := cl.Status(ctx)
		if err != nil {
			return explain(err)
		}
		replicas := make([]server.ReplicaStatus, 0, len(st.Replicas))
		for _, r := range st.Replicas {
			replicas = append(replicas, server.ReplicaStatus{ReplicaID: r.ReplicaId, Voting: r.Voting, RaftAddress: r.RaftAddress, ClientAddress: r.ClientAddress,
				Role: r.Role, Term: r.Term, CommitIndex: r.CommitIndex, AppliedIndex: r.AppliedIndex, Lag: r.Lag, Error: r.Error})
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"replica_id": st.ReplicaId, "raft_address": st.RaftAddress, "role": st.Role,
				"leader_id": st.LeaderId, "term": st.Term, "commit_index": st.CommitIndex, "applied_index": st.AppliedIndex,
				"last_zxid": st.LastZxid, "sessions": st.Sessions, "replicas": replicas})
		}
		fmt.Fprintf(c.App.Writer, "replica %d (%s): %s, term %d, leader %d, commit index %d, applied index %d, last zxid 0x%x, %d sessions and leases\n",
			st.ReplicaId, st.RaftAddress, st.Role, st.Term, st.LeaderId, st.CommitIndex, st.AppliedIndex, st.LastZxid, st.Sessions)
		printReplicas(c.App.Writer, replicas)
		return nil
	})
}

func nativeSessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sessions",
		Usage: "every session, leases included, with its TTL, owner replica, deadline and ephemerals (as cons and dump)",
		Description: "A lease is a session without a connection: it is listed with the ZooKeeper clients' sessions.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge native sessions\n" +
			"  zkbridge native sessions --json",
		Flags:  nativeFlags(),
		Action: runSessions,
	}
}

func runSessions(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		ss, err := cl.ListSessions(ctx)
		if err != nil {
			return explain(err)
		}
		for _, si := range ss {
			if c.Bool("json") {
				eph := si.Ephemerals
				if eph == nil {
					eph = []string{}
				}
				if err := printJSON(c.App.Writer, map[string]any{"id": hexID(si.Id), "ttl_ms": si.TtlMs,
					"owner_replica": si.OwnerReplica, "expires_in_ms": si.ExpiresInMs, "ephemerals": eph}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(c.App.Writer, "%s\tttl=%dms\towner=%d\texpires_in=%dms\n", hexID(si.Id), si.TtlMs, si.OwnerReplica, si.ExpiresInMs)
			for _, p := range si.Ephemerals {
				fmt.Fprintf(c.App.Writer, "\t%s\n", p)
			}
		}
		return nil
	})
}
