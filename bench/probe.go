package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/zkbridge/zkbridge/zkproto"
)

const probeHandshakeTimeout = 5 * time.Second

// ProbeResult is what Probe measured.
type ProbeResult struct {
	Server   string  `json:"server"`
	Path     string  `json:"path"`
	Children int64   `json:"children"` // getAllChildrenNumber's answer: every descendant
	Waited   float64 `json:"waited_s"` // from the call to the answer
	// AnsweredAt is when the answer came, in seconds since the Unix epoch,
	// so that a caller can time from an event before the probe started.
	AnsweredAt float64 `json:"answered_at_unix_s"`
	Attempts   int     `json:"attempts"` // sessions tried
}

// Probe polls addr, every interval, until a session opens and
// getAllChildrenNumber(path) answers with at least min descendants, for
// timing how long a server takes to serve after a restart. A server not
// yet listening, one that drops the handshake and an answer with fewer
// descendants all count as not yet; the probe gives up after timeout.
func Probe(ctx context.Context, addr, path string, min int64, interval, timeout time.Duration) (*ProbeResult, error) {
	if err := zkproto.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("probe path %q: %w", path, err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &ProbeResult{Server: addr, Path: path}
	var last error
	for {
		res.Attempts++
		n, err := countOnce(ctx, addr, path)
		if err == nil && n >= min {
			now := time.Now()
			res.Children, res.Waited = n, now.Sub(start).Seconds()
			res.AnsweredAt = float64(now.UnixNano()) / 1e9
			return res, nil
		}
		if err == nil {
			err = fmt.Errorf("%s has %d descendants, fewer than %d", path, n, min)
		}
		// An attempt cut short by the deadline says less than the one before.
		// The clock decides, not ctx.Err(): a dial given the time left
		// times out a moment before the context's own timer fires.
		deadline, _ := ctx.Deadline()
		if (ctx.Err() == nil && time.Now().Before(deadline)) || last == nil {
			last = err
		}
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("probe %s: no answer within %v after %d attempts (last: %w)", addr, timeout, res.Attempts, last)
		}
	}
}

// countOnce opens a session, asks getAllChildrenNumber(path) and closes
// the session, bounded by ctx.
func countOnce(ctx context.Context, addr, path string) (int64, error) {
	deadline, _ := ctx.Deadline()
	// A handshake left hanging is retried on a new connection; the reply
	// to the count may take as long as the probe has left.
	c, err := dial(nil, addr, 1, 30*time.Second, min(time.Until(deadline), probeHandshakeTimeout), nil)
	if err != nil {
		return 0, err
	}
	defer c.close()
	var (
		n    int64
		rerr error
	)
	req := zkproto.GetAllChildrenNumberRequest{Path: path}
	err = c.send(zkproto.OpGetAllChildrenNumber, &req, &call{done: func(_ *call, rp *reply) {
		var resp zkproto.GetAllChildrenNumberResponse
		switch {
		case rp.err != nil:
			rerr = rp.err
		case rp.hdr.Err != zkproto.ErrOK:
			rerr = fmt.Errorf("getAllChildrenNumber %s: %s", path, rp.hdr.Err.Name())
		default:
			rerr = zkproto.Unmarshal(rp.body, &resp)
			n = int64(resp.TotalNumber)
		}
	}})
	if err != nil {
		return 0, err
	}
	c.wait(time.Until(deadline))
	return n, rerr
}
