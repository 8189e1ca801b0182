package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/shell"
	"github.com/zkbridge/zkbridge/shell/zkclient"
)

func shellCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "shell",
		Usage:     "a zkCli.sh-compatible ZooKeeper shell without a JVM (against zkbridge or any ZooKeeper)",
		ArgsUsage: "[-server host:port[,...][/chroot]] [-timeout ms] [-r] [-waitforconnection] [-client-configuration file] [cmd args...]",
		Description: "zkCli.sh 3.8's invocation, commands, flags, output and exit codes (0 ok, 1 failed, 127 unknown\n" +
			"command, 2 bad invocation), checked against the real zkCli.sh. With a command it runs it and\n" +
			"exits; without, a prompt with line editing, history (~/.zkbridge_history, or $ZKBRIDGE_HISTORY)\n" +
			"and tab completion of commands and znode paths. Lines on stdin run one by one when stdin is\n" +
			"not a terminal.\n" +
			"\n" +
			"Beyond zkCli: --json on the read commands (get, ls, stat, getAcl, getEphemerals,\n" +
			"getAllChildrenNumber, whoami, config, listquota, tree, du, find), get --format raw|hex|base64\n" +
			"(default: text when printable, else a hex dump), tree [-d depth] path, du path, find path\n" +
			"[--name GLOB] [--ephemeral] [--owner SID], watch path [--count N], dump path -o file,\n" +
			"load file [--overwrite], help. See docs/shell.md.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge shell -server 127.0.0.1:2181\n" +
			"  zkbridge shell -server zk1:2181,zk2:2181,zk3:2181/app ls -R /\n" +
			"  zkbridge shell -server 127.0.0.1:2181 get --json /config | jq -r .data\n" +
			"  zkbridge shell -server 127.0.0.1:2181 du /\n" +
			"  printf 'create /a x\\nget -s /a\\n' | zkbridge shell -server 127.0.0.1:2181",
		SkipFlagParsing: true,
		Action: func(c *ucli.Context) error {
			args := c.Args().Slice()
			if len(args) > 0 && slices.Contains([]string{"-h", "--help", "-help"}, args[0]) {
				return ucli.ShowSubcommandHelp(c)
			}
			opts, cmd, err := shell.ParseArgs(args)
			if err != nil {
				fmt.Fprintln(c.App.ErrWriter, err)
				return ucli.Exit("", 2)
			}
			opts.HistoryFile = shell.DefaultHistoryFile()
			shell.Version = Version
			code := shell.New(opts, os.Stdin, c.App.Writer, c.App.ErrWriter).Run(cmd)
			if code != 0 {
				return ucli.Exit("", code)
			}
			return nil
		},
	}
}

func topCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "top",
		Usage:     "a live view of servers from mntr/srvr: role, latency, outstanding, connections, znodes, watches, Raft lag",
		ArgsUsage: " ",
		Description: "Polls each server's four-letter words mntr and srvr (they must be allowed:\n" +
			"4lw.commands.whitelist) every --interval and redraws one line per server. Works on zkbridge\n" +
			"and ZooKeeper; the Raft columns are zkbridge's (how many entries a node has applied fewer than\n" +
			"the most advanced one shown, and its committed-but-unapplied entries). A server that does not\n" +
			"answer shows as DOWN with the reason. Ctrl-C quits.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge top --server 127.0.0.1:2181\n" +
			"  zkbridge top --server zb1:2181,zb2:2181,zb3:2181 --interval 1s\n" +
			"  zkbridge top --server 127.0.0.1:2181 --json --count 1 | jq .znodes",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "server", Aliases: []string{"s"}, Value: "127.0.0.1:2181", Usage: "servers to watch, `HOST:PORT[,...]`"},
			&ucli.DurationFlag{Name: "interval", Aliases: []string{"i"}, Value: 2 * time.Second, Usage: "time between refreshes"},
			&ucli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "stop after `N` refreshes (0: until Ctrl-C)"},
			&ucli.BoolFlag{Name: "json", Usage: "print one JSON object per server and refresh"},
		},
		Action: func(c *ucli.Context) error {
			servers, _, err := zkclient.ParseConnectString(c.String("server"))
			if err != nil {
				return fmt.Errorf("--server: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			f, isFile := c.App.Writer.(*os.File)
			return shell.Top(ctx, shell.TopOptions{Servers: servers, Interval: c.Duration("interval"),
				Iterations: c.Int("count"), JSON: c.Bool("json"), Plain: !isFile || !isTerminal(f)}, c.App.Writer)
		},
	}
}
