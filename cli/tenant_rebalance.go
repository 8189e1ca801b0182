package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server"
)

// tenantRebalanceCommand is `zkbridge tenant rebalance`: move tenant
// replicas onto nodes that joined, then spread the leaders.
func tenantRebalanceCommand(admin ucli.Flag) *ucli.Command {
	return &ucli.Command{
		Name:  "rebalance",
		Usage: "move tenant replicas so every node hosts about as many tenant shards (after adding a node), then spread the leaders",
		Description: `Plans replica moves from the nodes hosting the most tenant shards to those
hosting the fewest (a node just added hosts none) until no two nodes differ by
more than one, and carries them out one at a time: the new replica joins as a
non-voting member and catches up (snapshot streaming), is promoted, the old one
is removed and its node deletes the shard's data. Then tenant leaderships move
until no node leads two more shards than another. Clients keep working; a
client of a moved replica's node sees a connection loss and reconnects.

Any node may be asked: a move of a tenant it does not host is carried out by a
node that does (through its admin address), and its progress shown here.
Interrupting it is safe: every move is recorded in the tenant registry before
the Raft membership changes, and the next run finishes it first.

Examples:
  zkbridge tenant rebalance --admin 127.0.0.1:8080 --dry-run
  zkbridge tenant rebalance --admin 127.0.0.1:8080
  zkbridge tenant rebalance --admin 127.0.0.1:8080 --json`,
		Flags: append([]ucli.Flag{admin,
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the plan (and any unfinished move) without moving anything"},
			&ucli.BoolFlag{Name: "json", Usage: "print every progress event as a JSON line, the summary last"},
		}, clientTLSFlags()...),
		Action: tenantRebalance,
	}
}

func tenantRebalance(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return fmt.Errorf("tenant rebalance takes no arguments (got %q); put flags such as --dry-run before any", c.Args().Slice())
	}
	tlsCfg, err := clientTLS(c)
	if err != nil {
		return fmt.Errorf("%w; see --tls-ca, --tls-cert, --tls-key", err)
	}
	u := "http://" + c.String("admin") + "/tenants/rebalance"
	client := &http.Client{} // no overall timeout: a move streams a snapshot
	if tlsCfg != nil {
		u = "https://" + c.String("admin") + "/tenants/rebalance"
		client.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	}
	resp, err := client.PostForm(u, url.Values{"dry_run": {strconv.FormatBool(c.Bool("dry-run"))}})
	if err != nil {
		return fmt.Errorf("tenant rebalance: %w (is a node's admin listener at %s? see --admin)", err, c.String("admin"))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("tenant rebalance: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	w := c.App.Writer
	f, _ := w.(*os.File)
	p := rebalancePrinter{w: w, live: f != nil && isTerminal(f), json: c.Bool("json")}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var summary *server.RebalanceResult
	var failed []string
	for sc.Scan() {
		var e server.RebalanceEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("tenant rebalance: unreadable progress line %q: %w", sc.Text(), err)
		}
		p.event(e, sc.Bytes())
		switch e.Step {
		case "summary":
			summary = e.Summary
		case "failed":
			failed = append(failed, e.Tenant+": "+e.Error)
		case "error":
			p.endLine()
			return fmt.Errorf("tenant rebalance stopped: %s; run it again to finish (unfinished moves are resumed first)", e.Error)
		}
	}
	p.endLine()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tenant rebalance: the node stopped answering: %w; run it again to finish (unfinished moves are resumed first)", err)
	}
	if summary == nil {
		return errors.New("tenant rebalance: the node ended without a summary; run it again to finish (unfinished moves are resumed first)")
	}
	if !p.json {
		printRebalanceSummary(w, *summary)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d moves failed (%s); fix the cause and run zkbridge tenant rebalance again", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// rebalancePrinter shows progress: a line per tenant step, and on a
// terminal the catch-up as a counter rewritten in place.
type rebalancePrinter struct {
	w          io.Writer
	live, json bool
	open       bool // a catch-up line is being rewritten
}

func (p *rebalancePrinter) endLine() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

func (p *rebalancePrinter) event(e server.RebalanceEvent, raw []byte) {
	if p.json {
		fmt.Fprintln(p.w, string(raw))
		return
	}
	line := ""
	switch e.Step {
	case "resume":
		line = fmt.Sprintf("%s: resuming a move an earlier run left unfinished (node %d -> node %d)", e.Tenant, e.From, e.To)
	case "plan":
		if len(e.Plan) == 0 {
			line = "plan: nothing to move (" + e.Message + ")"
			break
		}
		parts := make([]string, len(e.Plan))
		for i, mv := range e.Plan {
			parts[i] = fmt.Sprintf("%s %d->%d", mv.Tenant, mv.From, mv.To)
		}
		line = fmt.Sprintf("plan: %s: %s", e.Message, strings.Join(parts, ", "))
	case "adding":
		line = fmt.Sprintf("%s: adding a replica on node %d (to replace node %d's)", e.Tenant, e.To, e.From)
	case "catching_up":
		text := fmt.Sprintf("%s: catching up on node %d: %d/%d", e.Tenant, e.To, e.Applied, e.Target)
		if p.live {
			fmt.Fprintf(p.w, "\r%s", text)
			p.open = true
			return
		}
		if e.Applied < e.Target {
			return // off a terminal: the first and last lines only
		}
		line = text
	case "promoting":
		line = fmt.Sprintf("%s: node %d caught up, promoting it to voter", e.Tenant, e.To)
	case "transferring_leader":
		line = fmt.Sprintf("%s: moving the leadership off node %d", e.Tenant, e.From)
		if e.Message != "" {
			line += ": " + e.Message
		}
	case "removing":
		line = fmt.Sprintf("%s: removing node %d's replica (its node deletes the shard's data)", e.Tenant, e.From)
	case "done":
		line = fmt.Sprintf("%s: done", e.Tenant)
	case "failed":
		line = fmt.Sprintf("%s: FAILED moving node %d -> node %d: %s", e.Tenant, e.From, e.To, e.Error)
	case "leader":
		if e.Error != "" {
			line = fmt.Sprintf("%s: leadership %d -> %d not moved: %s", e.Tenant, e.From, e.To, e.Error)
		} else {
			line = fmt.Sprintf("%s: leadership moved from node %d to node %d", e.Tenant, e.From, e.To)
		}
	default:
		return
	}
	p.endLine()
	fmt.Fprintln(p.w, line)
}

func printRebalanceSummary(w io.Writer, s server.RebalanceResult) {
	perNode := func(m map[uint64]int) string {
		ids := make([]uint64, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("node %d: %d", id, m[id])
		}
		return strings.Join(parts, ", ")
	}
	if s.DryRun {
		fmt.Fprintf(w, "dry run: %d moves planned, nothing changed (run without --dry-run to move)\n", s.Planned)
	} else {
		fmt.Fprintf(w, "rebalance: %d of %d planned moves done, %d failed, %d unfinished moves resumed, %d leaderships moved, in %.1f s\n",
			s.Moved, s.Planned, s.Failed, s.Resumed, s.LeaderTransfers, s.Seconds)
	}
	fmt.Fprintf(w, "tenant replicas per node: %s\n", perNode(s.Replicas))
	fmt.Fprintf(w, "shards led per node (the default tenant and the tenants the node asked hosts): %s\n", perNode(s.Leaders))
}
