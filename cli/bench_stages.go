package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/bench"
	"github.com/zkbridge/zkbridge/server/stagetrace"
)

// bench --stages: the servers' write stages over the measured time. Each
// server records them when started with ZKBRIDGE_WRITE_STAGES=1; bench
// clears their records before the run and joins them after it.

// stagesURL is a node's /debug/stages at its admin address.
func stagesURL(admin, query string) string {
	if !strings.Contains(admin, "://") {
		admin = "http://" + admin
	}
	return strings.TrimSuffix(admin, "/") + "/debug/stages" + query
}

func getStages(ctx context.Context, admin, query string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, stagesURL(admin, query), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("write stages of %s: %w (is --stages the servers' admin addresses?)", admin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("write stages of %s: %s: %s (a zkbridge build with /debug/stages?)", admin, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// resetStages clears every node's records and checks that they record.
func resetStages(ctx context.Context, admins []string) error {
	for _, a := range admins {
		var ans struct {
			On bool `json:"on"`
		}
		if err := getStages(ctx, a, "?reset=1", &ans); err != nil {
			return err
		}
		if !ans.On {
			return fmt.Errorf("write stages of %s: not recorded; start the server with %s=1", a, stagetrace.Env)
		}
	}
	return nil
}

// collectStages joins the nodes' records of the measured time into the
// stages of the writes served by the first admin address's node (the node
// of the first --addr, where a one-connection run sends its writes).
func collectStages(ctx context.Context, admins []string, res *bench.Result) (*stagetrace.Table, error) {
	dumps := make([]stagetrace.Dump, 0, len(admins))
	for _, a := range admins {
		var d stagetrace.Dump
		if err := getStages(ctx, a, "", &d); err != nil {
			return nil, err
		}
		dumps = append(dumps, d)
	}
	// The measured time on the servers' clock (the same machine's
	// monotonic clock).
	now := stagetrace.Now()
	from := now - int64(time.Since(res.MeasuredFrom))
	to := now - int64(time.Since(res.MeasuredTo))
	t, err := stagetrace.Breakdown(dumps, dumps[0].Replica, from, to)
	if err != nil {
		return nil, err
	}
	return &t, nil
}
