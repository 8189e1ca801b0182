package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/bench/bridgebench"
)

func benchNativeCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "native",
		Usage:     "load-test zkbridge's native API (and etcd side by side, with --etcd)",
		ArgsUsage: " ",
		Description: "Workloads: " + strings.Join(bridgebench.Workloads, ", ") + ".\n" +
			"  leases    registers --leases members (TTL --ttl), renews each every --heartbeat over\n" +
			"            --streams keep-alive streams; reports heartbeat round trips and leases held/lost\n" +
			"            (etcd: leases with a key each, LeaseKeepAlive streams)\n" +
			"  feed      --subscribers follow a prefix while --writers write --rate ops/s; latency is\n" +
			"            from a write's acknowledgement to each subscriber's delivery (etcd: watch)\n" +
			"  allocate  32 callers take blocks of --block ids from one counter (etcd: a CAS txn)\n" +
			"  snapshot  fills a subtree with --znodes nodes once, then streams a consistent image\n" +
			"            (etcd: a paged range read at one revision)\n" +
			"Only the addresses given are contacted; the run stops by itself after --duration.\n\n" +
			"Examples:\n" +
			"  zkbridge bench native -w leases --addr 127.0.0.1:2191 --leases 10000\n" +
			"  zkbridge bench native -w feed --addr 127.0.0.1:2191 --etcd 127.0.0.1:2379 --rate 5000",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "addr", Aliases: []string{"a"}, Value: "127.0.0.1:2191", Usage: "zkbridge native API `HOST:PORT[,...]`"},
			&ucli.StringFlag{Name: "etcd", Usage: "also run against etcd at `HOST:PORT[,...]` and print the ratio"},
			&ucli.StringFlag{Name: "workload", Aliases: []string{"w"}, Value: "leases", Usage: "workload `NAME`: " + strings.Join(bridgebench.Workloads, ", ")},
			&ucli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Value: 30e9, Usage: "measured time"},
			&ucli.IntFlag{Name: "leases", Value: 10000, Usage: "leases: `N` leases held"},
			&ucli.DurationFlag{Name: "ttl", Value: 10e9, Usage: "leases: lease TTL"},
			&ucli.DurationFlag{Name: "heartbeat", Value: 2e9, Usage: "leases: heartbeat interval per lease"},
			&ucli.IntFlag{Name: "streams", Value: 16, Usage: "leases: keep-alive streams"},
			&ucli.IntFlag{Name: "subscribers", Value: 10, Usage: "feed: subscribers"},
			&ucli.IntFlag{Name: "rate", Value: 5000, Usage: "feed: writes per second"},
			&ucli.IntFlag{Name: "writers", Value: 64, Usage: "feed: concurrent writers"},
			&ucli.Int64Flag{Name: "block", Value: 100, Usage: "allocate: ids per block"},
			&ucli.IntFlag{Name: "znodes", Value: 1000000, Usage: "snapshot: znodes in the subtree"},
			&ucli.StringFlag{Name: "server-pids", Usage: "zkbridge server `PID,...` whose peak resident set is sampled while measured"},
			&ucli.StringFlag{Name: "etcd-pids", Usage: "etcd `PID,...`, the same"},
			&ucli.BoolFlag{Name: "json", Usage: "print the results as JSON"},
		},
		Action: func(c *ucli.Context) error {
			cfg := bridgebench.Config{Workload: c.String("workload"), Addrs: splitAddrs(c.String("addr")), Etcd: splitAddrs(c.String("etcd")),
				Duration: c.Duration("duration"), Leases: c.Int("leases"), TTL: c.Duration("ttl"), Heartbeat: c.Duration("heartbeat"),
				Streams: c.Int("streams"), Subscribers: c.Int("subscribers"), Rate: c.Int("rate"), Writers: c.Int("writers"),
				Block: c.Int64("block"), Znodes: c.Int("znodes")}
			var err error
			if cfg.Pids, err = parsePids("server-pids", c.String("server-pids")); err != nil {
				return err
			}
			if cfg.EtcdPids, err = parsePids("etcd-pids", c.String("etcd-pids")); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rs, err := bridgebench.Run(ctx, cfg, os.Stderr)
			if err != nil {
				return fmt.Errorf("bench native: %w (is zkbridge serving its native API at --addr?)", err)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(rs)
			}
			fmt.Fprint(c.App.Writer, bridgebench.Table(rs))
			return nil
		},
	}
}
