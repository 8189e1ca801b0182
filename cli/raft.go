package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/zkbridge/zkbridge/server"
)

func raftCommand() *ucli.Command {
	admin := &ucli.StringFlag{Name: "admin", Usage: "admin HTTP address of any node, `HOST:PORT` (HTTPS with --tls or a --tls-* flag: admin.forceHttps)", Value: server.DefaultAdminAddr}
	return &ucli.Command{
		Name:  "raft",
		Usage: "inspect and change the Raft cluster through any node's admin address",
		Subcommands: []*ucli.Command{
			{
				Name:  "status",
				Usage: "every replica's role, term, commit and applied index and lag, as the node asked sees them",
				Flags: append([]ucli.Flag{admin,
					&ucli.BoolFlag{Name: "json", Usage: "print JSON"},
					&ucli.DurationFlag{Name: "watch", Usage: "repeat every `INTERVAL` until interrupted"}}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					for {
						var st server.RaftStatus
						if err := adminCall(c, http.MethodGet, "/raft/status", nil, &st); err != nil {
							return err
						}
						if c.Bool("json") {
							b, _ := json.MarshalIndent(st, "", "  ")
							fmt.Fprintln(c.App.Writer, string(b))
						} else {
							printStatus(c.App.Writer, st)
						}
						if c.Duration("watch") <= 0 {
							return nil
						}
						time.Sleep(c.Duration("watch"))
					}
				},
			},
			{
				Name:  "leader",
				Usage: "print the leader's replica id",
				Flags: append([]ucli.Flag{admin}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					var st server.RaftStatus
					if err := adminCall(c, http.MethodGet, "/raft/status", nil, &st); err != nil {
						return err
					}
					if st.LeaderID == 0 {
						return fmt.Errorf("no leader known to the node at %s", c.String("admin"))
					}
					fmt.Fprintf(c.App.Writer, "%d %s\n", st.LeaderID, st.Voters[st.LeaderID])
					return nil
				},
			},
			{
				Name:      "transfer-leader",
				Usage:     "make replica ID the leader",
				ArgsUsage: "ID",
				Flags:     append([]ucli.Flag{admin}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					id, err := argID(c)
					if err != nil {
						return err
					}
					return adminCall(c, http.MethodPost, "/raft/transfer-leader", url.Values{"id": {id}}, nil)
				},
			},
			addMemberCommand(admin, "add-voter", "add replica ID with Raft address ADDR; then start it with --join"),
			addMemberCommand(admin, "add-observer", "add replica ID with Raft address ADDR as a non-voting observer; then start it with --observer --join"),
			{
				Name:      "remove-voter",
				Usage:     "remove replica ID, voter or observer (a voter is refused below a safe majority unless --force)",
				ArgsUsage: "ID",
				Flags:     append([]ucli.Flag{admin, &ucli.BoolFlag{Name: "force", Usage: "remove even below a safe majority"}}, clientTLSFlags()...),
				Action: func(c *ucli.Context) error {
					id, err := argID(c)
					if err != nil {
						return err
					}
					return adminCall(c, http.MethodPost, "/raft/remove-voter", url.Values{"id": {id}, "force": {strconv.FormatBool(c.Bool("force"))}}, nil)
				},
			},
		},
	}
}

// addMemberCommand is `raft add-voter` or `raft add-observer`: ID and
// ADDR posted to the admin endpoint of the same name.
func addMemberCommand(admin ucli.Flag, name, usage string) *ucli.Command {
	return &ucli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "ID ADDR",
		Flags:     append([]ucli.Flag{admin}, clientTLSFlags()...),
		Action: func(c *ucli.Context) error {
			id, err := argID(c)
			if err != nil {
				return err
			}
			if c.Args().Len() != 2 {
				return fmt.Errorf("usage: zkbridge raft %s ID HOST:PORT", name)
			}
			return adminCall(c, http.MethodPost, "/raft/"+name, url.Values{"id": {id}, "addr": {c.Args().Get(1)}}, nil)
		},
	}
}

func argID(c *ucli.Context) (string, error) {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") {
			return "", fmt.Errorf("flag %s after the arguments: put flags first, e.g. zkbridge raft %s --admin HOST:PORT %s", a, c.Command.Name, strings.ToUpper(strings.TrimPrefix(c.Command.ArgsUsage, "")))
		}
	}
	id := c.Args().First()
	if n, err := strconv.ParseUint(id, 10, 64); err != nil || n == 0 {
		return "", fmt.Errorf("%q is not a replica id (a positive integer)", id)
	}
	return id, nil
}

// adminCall talks to a node's admin endpoint and decodes its JSON answer.
func adminCall(c *ucli.Context, method, path string, form url.Values, out any) error {
	tlsCfg, err := clientTLS(c)
	if err != nil {
		return fmt.Errorf("%w; see --tls-ca, --tls-cert, --tls-key", err)
	}
	u := "http://" + c.String("admin") + path
	client := &http.Client{Timeout: 20 * time.Second}
	if tlsCfg != nil { // an admin port with admin.forceHttps
		u = "https://" + c.String("admin") + path
		client.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	}
	var resp *http.Response
	if method == http.MethodPost {
		resp, err = client.PostForm(u, form)
	} else {
		resp, err = client.Get(u)
	}
	if err != nil {
		return fmt.Errorf("%s: %w (is a node's admin listener at %s? see --admin)", path, err, c.String("admin"))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s", e.Error)
		}
		return fmt.Errorf("%s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	fmt.Fprintln(c.App.Writer, "ok")
	return nil
}

func printStatus(w io.Writer, st server.RaftStatus) {
	fmt.Fprintf(w, "replica %d (%s): %s, term %d, leader %d, commit index %d, applied index %d, last zxid 0x%x, %d sessions, %d connections\n",
		st.ReplicaID, st.RaftAddress, st.Role, st.Term, st.LeaderID, st.CommitIndex, st.AppliedIndex, st.LastZxid, st.Sessions, st.Connections)
	printReplicas(w, st.Replicas)
}

// printReplicas prints the members' progress as a table, then the members
// that did not report.
func printReplicas(w io.Writer, replicas []server.ReplicaStatus) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tMEMBER\tROLE\tRAFT\tCLIENT\tTERM\tCOMMIT\tAPPLIED\tLAG")
	for _, r := range replicas {
		member, lag := "voter", strconv.FormatInt(r.Lag, 10)
		if !r.Voting {
			member = "observer"
		}
		if r.Lag < 0 {
			lag = "?"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.ReplicaID, member, r.Role, r.RaftAddress, orDash(r.ClientAddress),
			r.Term, r.CommitIndex, r.AppliedIndex, lag)
	}
	_ = tw.Flush()
	for _, r := range replicas {
		if r.Error != "" {
			fmt.Fprintf(w, "  replica %d did not report: %s\n", r.ReplicaID, r.Error)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
