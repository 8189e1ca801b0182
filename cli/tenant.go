package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server"
)

// tenantCommand is `zkbridge tenant …`: the tenant registry through any
// node's admin address.
func tenantCommand() *ucli.Command {
	admin := &ucli.StringFlag{Name: "admin", Usage: "admin HTTP address of any node, `HOST:PORT` (HTTPS with --tls or a --tls-* flag: admin.forceHttps)", Value: server.DefaultAdminAddr}
	settings := []ucli.Flag{
		&ucli.IntFlag{Name: "port", Usage: "client `PORT` the tenant is served on, on every node"},
		&ucli.IntFlag{Name: "secure-port", Usage: "TLS client `PORT` (needs the nodes' client TLS: ssl.keyStore.*)"},
		&ucli.StringSliceFlag{Name: "identity", Usage: "`NAME` that selects the tenant on the nodes' shared secure port: a TLS server name (SNI) clients connect by, or a client certificate's subject DN (CN=app,O=Example), CN or DNS SAN (repeatable; see the server's --tenant-unknown-identity)"},
		&ucli.Int64Flag{Name: "max-znodes", Usage: "at most `N` znodes (0: no limit)"},
		&ucli.Int64Flag{Name: "max-bytes", Usage: "at most `B` bytes of znode data (0: no limit)"},
		&ucli.Int64Flag{Name: "max-sessions", Usage: "at most `N` sessions (0: no limit)"},
		&ucli.Int64Flag{Name: "max-ops-per-sec", Usage: "at most `N` requests per second (0: no limit)"},
	}
	jsonFlag := &ucli.BoolFlag{Name: "json", Usage: "print JSON"}
	return &ucli.Command{
		Name:  "tenant",
		Usage: "create, list, change and delete tenants: independent ZooKeeper namespaces, each its own Raft shard",
		Description: `A tenant is a ZooKeeper namespace of its own (data, sessions, zxids, watches)
served by its own Raft shard on the same cluster. Clients pick it by the port
they connect to, or by their TLS server name or client certificate on the
nodes' shared secure port (--identity); nothing changes in the client.

Examples:
  zkbridge tenant create --admin 127.0.0.1:8080 --port 2182 kafka-a
  zkbridge tenant list --admin 127.0.0.1:8080
  zkbridge tenant update --admin 127.0.0.1:8080 --max-znodes 100000 kafka-a
  zkbridge tenant delete --admin 127.0.0.1:8080 --force kafka-a
  zkbridge tenant rebalance --admin 127.0.0.1:8080 --dry-run`,
		Subcommands: []*ucli.Command{
			tenantRebalanceCommand(admin),
			{
				Name:      "create",
				Usage:     "register a tenant; every node it is placed on serves it at once",
				ArgsUsage: "NAME",
				Description: `Examples:
  zkbridge tenant create --admin 127.0.0.1:8080 --port 2182 --replicas 3 kafka-a
  zkbridge tenant create --admin 127.0.0.1:8080 --port 2183 --identity kafka-b.zk.example.com kafka-b`,
				Flags: append(append([]ucli.Flag{admin, jsonFlag,
					&ucli.IntFlag{Name: "replicas", Usage: "host the shard on `N` nodes (default: all up to 5, else 3)"}},
					settings...), clientTLSFlags()...),
				Action: func(c *ucli.Context) error { return putTenant(c, "create") },
			},
			{
				Name:      "update",
				Usage:     "change a tenant's ports, identities and limits (the settings given; the others stay)",
				ArgsUsage: "NAME",
				Description: `Example:
  zkbridge tenant update --admin 127.0.0.1:8080 --port 2182 --max-sessions 500 kafka-a`,
				Flags:  append(append([]ucli.Flag{admin, jsonFlag}, settings...), clientTLSFlags()...),
				Action: func(c *ucli.Context) error { return putTenant(c, "update") },
			},
			{
				Name:  "list",
				Usage: "every tenant: shard, ports, leader, replicas, znodes, sessions, ops/s (as the node asked sees them)",
				Description: `Example:
  zkbridge tenant list --admin 127.0.0.1:8080 --json`,
				Flags: append([]ucli.Flag{admin, jsonFlag}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					var list []server.TenantInfo
					if err := adminCall(c, http.MethodGet, "/tenants", nil, &list); err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c.App.Writer, list)
					}
					printTenants(c.App.Writer, list)
					return nil
				},
			},
			{
				Name:      "delete",
				Usage:     "delete a tenant and its data on every node (refused while it has sessions, unless --force)",
				ArgsUsage: "NAME",
				Description: `Example:
  zkbridge tenant delete --admin 127.0.0.1:8080 kafka-a`,
				Flags: append([]ucli.Flag{admin, &ucli.BoolFlag{Name: "force", Usage: "delete even with open sessions (they end)"}}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					name, err := tenantName(c)
					if err != nil {
						return err
					}
					form := url.Values{"name": {name}, "force": {strconv.FormatBool(c.Bool("force"))}}
					var out map[string]string
					if err := adminCall(c, http.MethodPost, "/tenants/delete", form, &out); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "tenant %s deleted; every node hosting it removes its data\n", name)
					return nil
				},
			},
		},
	}
}

// tenantName is the one NAME argument, with flags before it.
func tenantName(c *ucli.Context) (string, error) {
	args := c.Args().Slice()
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return "", fmt.Errorf("flag %s after the name: put flags first, e.g. zkbridge tenant %s --admin HOST:PORT NAME", a, c.Command.Name)
		}
	}
	if len(args) != 1 {
		return "", fmt.Errorf("give one tenant NAME (see zkbridge tenant %s --help)", c.Command.Name)
	}
	return args[0], nil
}

func putTenant(c *ucli.Context, op string) error {
	name, err := tenantName(c)
	if err != nil {
		return err
	}
	form := url.Values{"name": {name}}
	for _, f := range []string{"port", "secure-port", "replicas"} {
		if c.IsSet(f) {
			form.Set(strings.ReplaceAll(f, "-", "_"), strconv.Itoa(c.Int(f)))
		}
	}
	for _, f := range []string{"max-znodes", "max-bytes", "max-sessions", "max-ops-per-sec"} {
		if c.IsSet(f) {
			form.Set(strings.ReplaceAll(f, "-", "_"), strconv.FormatInt(c.Int64(f), 10))
		}
	}
	if c.IsSet("identity") {
		form["identity"] = c.StringSlice("identity")
	}
	var info server.TenantInfo
	if err := adminCall(c, http.MethodPost, "/tenants/"+op, form, &info); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, info)
	}
	verb := "created"
	if op == "update" {
		verb = "updated"
	}
	fmt.Fprintf(c.App.Writer, "tenant %s %s: shard %d on replicas %v", info.Name, verb, info.Shard, info.Replicas)
	if info.Port != 0 {
		fmt.Fprintf(c.App.Writer, ", port %d", info.Port)
	}
	if info.SecurePort != 0 {
		fmt.Fprintf(c.App.Writer, ", secure port %d", info.SecurePort)
	}
	fmt.Fprintln(c.App.Writer)
	return nil
}

func printTenants(w io.Writer, list []server.TenantInfo) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no tenants besides the default (create one with zkbridge tenant create)")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSHARD\tPORT\tSECURE\tLEADER\tREPLICAS\tZNODES\tSESSIONS\tOPS/S")
	for _, t := range list {
		ids := make([]string, len(t.Replicas))
		for i, id := range t.Replicas {
			ids[i] = strconv.FormatUint(id, 10)
		}
		port, secure := "-", "-"
		if t.Port != 0 {
			port = strconv.Itoa(t.Port)
		}
		if t.SecurePort != 0 {
			secure = strconv.Itoa(t.SecurePort)
		}
		leader, znodes, sessions, ops := "?", "?", "?", "?"
		if t.Hosted {
			leader = strconv.FormatUint(t.Leader, 10)
			znodes = strconv.FormatInt(t.Znodes, 10)
			sessions = strconv.Itoa(t.Sessions)
			ops = strconv.FormatFloat(t.OpsPerSec, 'f', 1, 64)
		}
		replicas := strings.Join(ids, ",")
		// A rebalance's move in progress (tenant rebalance resumes it).
		for _, m := range []struct {
			what string
			ids  []uint64
		}{{"joining", t.Joining}, {"leaving", t.Leaving}} {
			for _, id := range m.ids {
				replicas += fmt.Sprintf(" (%d %s)", id, m.what)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Shard, port, secure, leader, replicas, znodes, sessions, ops)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "(? : not hosted by the node asked; ask one of its replicas)")
}
