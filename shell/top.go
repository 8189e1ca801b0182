package shell

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// TopOptions configure Top.
type TopOptions struct {
	Servers  []string      // host:port of each server's client port
	Interval time.Duration // between refreshes (default 2 s)
	// Iterations stops after that many refreshes (0: until ctx ends).
	Iterations int
	// JSON prints one JSON object per server and refresh instead of the screen.
	JSON bool
	// Plain prints each refresh below the last instead of redrawing the
	// screen (not a terminal).
	Plain bool
}

// ServerSample is one server's state at one refresh, from mntr and srvr.
type ServerSample struct {
	Server       string  `json:"server"`
	Time         string  `json:"time"`
	Error        string  `json:"error,omitempty"`
	Role         string  `json:"role"`
	Version      string  `json:"version"`
	Zxid         string  `json:"zxid"`
	LatencyMin   float64 `json:"latency_min_ms"`
	LatencyAvg   float64 `json:"latency_avg_ms"`
	LatencyMax   float64 `json:"latency_max_ms"`
	Outstanding  int64   `json:"outstanding"`
	Connections  int64   `json:"connections"`
	Znodes       int64   `json:"znodes"`
	Watches      int64   `json:"watches"`
	Ephemerals   int64   `json:"ephemerals"`
	DataBytes    int64   `json:"data_bytes"`
	PacketsRecv  int64   `json:"packets_received"`
	PacketsSent  int64   `json:"packets_sent"`
	RecvPerSec   float64 `json:"received_per_sec"`
	SentPerSec   float64 `json:"sent_per_sec"`
	RaftApplied  int64   `json:"raft_applied_index,omitempty"`
	RaftApplyLag int64   `json:"raft_apply_lag,omitempty"`
	// RaftBehind is how many entries this server has applied fewer than
	// the most advanced server shown (zkbridge only; -1 elsewhere).
	RaftBehind int64 `json:"raft_behind"`
	RaftTerm   int64 `json:"raft_term,omitempty"`
	Followers  int64 `json:"synced_followers,omitempty"`
	isZkbridge bool
}

// fourLetter sends a four-letter word and returns the answer.
func fourLetter(addr, word string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

// sample reads one server's mntr (and srvr for the zxid; srvr alone when
// mntr is not allowed).
func sample(addr string, timeout time.Duration) ServerSample {
	s := ServerSample{Server: addr, Time: time.Now().UTC().Format(time.RFC3339), RaftBehind: -1}
	srvr, err := fourLetter(addr, "srvr", timeout)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if !strings.Contains(srvr, "Mode:") {
		s.Error = strings.TrimSpace(srvr)
		return s
	}
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Zookeeper version":
			s.Version, _, _ = strings.Cut(v, ",")
		case "Latency min/avg/max":
			parts := strings.Split(v, "/")
			if len(parts) == 3 {
				s.LatencyMin, _ = strconv.ParseFloat(parts[0], 64)
				s.LatencyAvg, _ = strconv.ParseFloat(parts[1], 64)
				s.LatencyMax, _ = strconv.ParseFloat(parts[2], 64)
			}
		case "Received":
			s.PacketsRecv, _ = strconv.ParseInt(v, 10, 64)
		case "Sent":
			s.PacketsSent, _ = strconv.ParseInt(v, 10, 64)
		case "Connections":
			s.Connections, _ = strconv.ParseInt(v, 10, 64)
		case "Outstanding":
			s.Outstanding, _ = strconv.ParseInt(v, 10, 64)
		case "Zxid":
			s.Zxid = v
		case "Mode":
			s.Role = v
		case "Node count":
			s.Znodes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	mntr, err := fourLetter(addr, "mntr", timeout)
	if err != nil || !strings.Contains(mntr, "zk_version") {
		return s // mntr not allowed on this server: srvr's fields only
	}
	sc = bufio.NewScanner(strings.NewReader(mntr))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "zk_avg_latency":
			s.LatencyAvg = f
		case "zk_max_latency":
			s.LatencyMax = f
		case "zk_min_latency":
			s.LatencyMin = f
		case "zk_outstanding_requests":
			s.Outstanding = n
		case "zk_num_alive_connections":
			s.Connections = n
		case "zk_znode_count":
			s.Znodes = n
		case "zk_watch_count":
			s.Watches = n
		case "zk_ephemerals_count":
			s.Ephemerals = n
		case "zk_approximate_data_size":
			s.DataBytes = n
		case "zk_packets_received":
			s.PacketsRecv = n
		case "zk_packets_sent":
			s.PacketsSent = n
		case "zk_server_state":
			s.Role = v
		case "zk_synced_followers":
			s.Followers = n
		case "raft_applied_index":
			s.RaftApplied, s.isZkbridge = n, true
		case "raft_apply_lag":
			s.RaftApplyLag = n
		case "raft_term":
			s.RaftTerm = n
		}
	}
	return s
}

// Top refreshes a view of servers every opts.Interval until ctx ends (or
// opts.Iterations refreshes).
func Top(ctx context.Context, opts TopOptions, out io.Writer) error {
	if len(opts.Servers) == 0 {
		return fmt.Errorf("no server to watch")
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	timeout := min(opts.Interval, 3*time.Second)
	prev := map[string]ServerSample{}
	prevAt := time.Time{}
	for i := 0; opts.Iterations == 0 || i < opts.Iterations; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(opts.Interval):
			}
		}
		now := time.Now()
		samples := make([]ServerSample, len(opts.Servers))
		var wg sync.WaitGroup
		for j, addr := range opts.Servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				samples[j] = sample(addr, timeout)
			}()
		}
		wg.Wait()
		var maxApplied int64
		for _, s := range samples {
			maxApplied = max(maxApplied, s.RaftApplied)
		}
		for j := range samples {
			s := &samples[j]
			if s.isZkbridge {
				s.RaftBehind = maxApplied - s.RaftApplied
			}
			if p, ok := prev[s.Server]; ok && !prevAt.IsZero() && s.Error == "" {
				secs := now.Sub(prevAt).Seconds()
				s.RecvPerSec = float64(s.PacketsRecv-p.PacketsRecv) / secs
				s.SentPerSec = float64(s.PacketsSent-p.PacketsSent) / secs
			}
			prev[s.Server] = *s
		}
		prevAt = now
		if opts.JSON {
			enc := json.NewEncoder(out)
			for _, s := range samples {
				if err := enc.Encode(s); err != nil {
					return err
				}
			}
			continue
		}
		if err := drawTop(out, samples, opts, now); err != nil {
			return err
		}
	}
	return nil
}

func drawTop(out io.Writer, samples []ServerSample, opts TopOptions, now time.Time) error {
	var b strings.Builder
	if !opts.Plain {
		b.WriteString("\x1b[H\x1b[2J") // home, clear screen
	}
	up := 0
	for _, s := range samples {
		if s.Error == "" {
			up++
		}
	}
	fmt.Fprintf(&b, "zkbridge top - %s - %d/%d servers up - every %s (Ctrl-C to quit)\n\n",
		now.Format("15:04:05"), up, len(samples), opts.Interval)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tROLE\tVERSION\tZXID\tLAT min/avg/max ms\tOUTST\tCONNS\tZNODES\tWATCHES\tEPHEM\tDATA\tRECV/s\tSENT/s\tRAFT LAG")
	for _, s := range samples {
		if s.Error != "" {
			fmt.Fprintf(tw, "%s\tDOWN\t\t\t%s\t\t\t\t\t\t\t\t\t\n", s.Server, s.Error)
			continue
		}
		lag := "-"
		if s.isZkbridge {
			lag = fmt.Sprintf("%d behind, %d unapplied", s.RaftBehind, s.RaftApplyLag)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%g/%.1f/%g\t%d\t%d\t%d\t%d\t%d\t%s\t%.0f\t%.0f\t%s\n",
			s.Server, s.Role, s.Version, s.Zxid, s.LatencyMin, s.LatencyAvg, s.LatencyMax, s.Outstanding, s.Connections,
			s.Znodes, s.Watches, s.Ephemerals, humanBytes(s.DataBytes), s.RecvPerSec, s.SentPerSec, lag)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if opts.Plain {
		b.WriteString("\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}
