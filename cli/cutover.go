package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/client"
)

func cutoverCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cutover",
		Usage: "fence subtrees during a move from ZooKeeper-mode clients to the native API (zk, native, read-only)",
		Description: "A policy says who may write under a subtree: zk (both protocols: no policy), native (writes\n" +
			"through the ZooKeeper port are refused with NoAuth, counted in mntr's zkbridge_cutover_fenced_writes\n" +
			"and logged once per connection; native writes pass) or read-only (every write is refused).\n" +
			"Policies are replicated and survive restarts; the deepest policy covering a path wins.\n" +
			"A staged cutover step by step: docs/cutover.md.\n" +
			"\n" +
			"Examples:\n" +
			"  zkbridge cutover set /fluss/tabletservers native\n" +
			"  zkbridge cutover list\n" +
			"  zkbridge cutover set /fluss/tabletservers zk      # roll back",
		Subcommands: []*ucli.Command{
			{
				Name:      "set",
				Usage:     "set SUBTREE's mode: zk (lifts the policy), native or read-only",
				ArgsUsage: "SUBTREE MODE",
				Description: "Examples:\n" +
					"  zkbridge cutover set /fluss native\n" +
					"  zkbridge cutover set --addr 10.0.0.1:2191,10.0.0.2:2191 /fluss zk",
				Flags:  nativeFlags(),
				Action: runCutoverSet,
			},
			{
				Name:  "list",
				Usage: "list the subtrees with a policy (every other subtree is zk)",
				Description: "Examples:\n" +
					"  zkbridge cutover list\n" +
					"  zkbridge cutover list --json",
				Flags:  nativeFlags(),
				Action: runCutoverList,
			},
		},
	}
}

func runCutoverSet(c *ucli.Context) error {
	args, err := nativeArgs(c, 2)
	if err != nil {
		return err
	}
	mode, err := client.ParseCutoverMode(args[1])
	if err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		if err := cl.SetCutoverPolicy(ctx, args[0], mode); err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, map[string]any{"subtree": args[0], "mode": client.CutoverModeName(mode)})
		}
		what := map[string]string{
			"zk":        "both protocols write (no policy)",
			"native":    "ZooKeeper-port writes are refused (NoAuth), native writes pass",
			"read-only": "every write is refused",
		}[client.CutoverModeName(mode)]
		_, err = fmt.Fprintf(c.App.Writer, "%s: %s: %s\n", args[0], client.CutoverModeName(mode), what)
		return err
	})
}

func runCutoverList(c *ucli.Context) error {
	if _, err := nativeArgs(c, 0); err != nil {
		return err
	}
	return withNative(c, func(ctx context.Context, cl *client.Client) error {
		ps, err := cl.ListCutoverPolicies(ctx)
		if err != nil {
			return explain(err)
		}
		if c.Bool("json") {
			out := []map[string]string{}
			for _, p := range ps {
				out = append(out, map[string]string{"subtree": p.Subtree, "mode": client.CutoverModeName(p.Mode)})
			}
			return printJSON(c.App.Writer, map[string]any{"policies": out})
		}
		if len(ps) == 0 {
			_, err := fmt.Fprintln(c.App.Writer, "no cutover policies: every subtree is zk (both protocols write)")
			return err
		}
		tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBTREE\tMODE")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\n", p.Subtree, client.CutoverModeName(p.Mode))
		}
		return tw.Flush()
	})
}
