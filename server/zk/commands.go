package zk

import (
	"sort"
	"strings"
)

// Commands of ZooKeeper's AdminServer (/commands/<name> on the admin port):
// the same facts as the four-letter words, as JSON. The admin door serves
// them over HTTP; this door answers them, since they describe its clients,
// watches and sessions.

// adminCommand is one AdminServer-style command: ZooKeeper's JSON
// endpoints under /commands/<name>, with its four-letter alias.
type adminCommand struct {
	names []string // primary name first, then aliases
	run   func(s *Server) map[string]any
}

func adminCommands() []adminCommand {
	text := func(f func(*Server) string) func(*Server) map[string]any {
		return func(s *Server) map[string]any { return map[string]any{"output": f(s)} }
	}
	return []adminCommand{
		{[]string{"ruok"}, func(*Server) map[string]any { return map[string]any{} }},
		{[]string{"is_read_only", "isro"}, func(s *Server) map[string]any { return map[string]any{"read_only": s.readOnly()} }},
		{[]string{"monitor", "mntr"}, func(s *Server) map[string]any {
			out := map[string]any{}
			for _, v := range s.monitorValues() {
				key := strings.TrimPrefix(v.key, "zk_")
				if v.num != nil {
					out[key] = *v.num
				} else {
					out[key] = v.text
				}
			}
			return out
		}},
		{[]string{"server_stats", "srvr"}, func(s *Server) map[string]any {
			lo, avg, hi := s.metrics.latency()
			return map[string]any{
				"version":   ZooKeeperVersion,
				"read_only": false,
				"server_stats": map[string]any{
					"packets_sent": s.metrics.packetsSent.Load(), "packets_received": s.metrics.packetsReceived.Load(),
					"min_latency": lo, "avg_latency": avg, "max_latency": hi,
					"outstanding_requests": s.metrics.outstanding.Load(), "server_state": s.mode(),
					"num_alive_client_connections": len(s.snapshotConns()), "last_processed_zxid": s.lastZxid(),
				},
				"node_count": s.treeStats().nodeCount(),
			}
		}},
		{[]string{"stats", "stat"}, text(func(s *Server) string { return s.srvrText(true) })},
		{[]string{"configuration", "conf"}, func(s *Server) map[string]any {
			out := map[string]any{}
			for _, line := range strings.Split(strings.TrimSpace(s.confText()), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					out[k] = v
				}
			}
			return out
		}},
		{[]string{"connections", "cons"}, func(s *Server) map[string]any {
			var lines []string
			for _, c := range s.sortedConns() {
				lines = append(lines, strings.TrimSpace(c.full()))
			}
			return map[string]any{"connections": lines}
		}},
		{[]string{"connection_stat_reset", "crst"}, func(s *Server) map[string]any {
			for _, c := range s.snapshotConns() {
				c.resetStats()
			}
			return map[string]any{}
		}},
		{[]string{"stat_reset", "srst"}, func(s *Server) map[string]any { s.metrics.reset(); return map[string]any{} }},
		{[]string{"environment", "envi"}, func(s *Server) map[string]any {
			out := map[string]any{}
			for _, line := range strings.Split(strings.TrimSpace(s.enviText()), "\n")[1:] {
				if k, v, ok := strings.Cut(line, "="); ok {
					out[k] = v
				}
			}
			return out
		}},
		{[]string{"dirs"}, text(func(s *Server) string { return s.dirsText() })},
		{[]string{"watch_summary", "wchs"}, func(s *Server) map[string]any {
			ws := s.watches.stats()
			return map[string]any{"num_connections": ws.Connections, "num_paths": ws.Paths, "num_total_watches": ws.DataWatches}
		}},
		{[]string{"watches", "wchc"}, func(s *Server) map[string]any {
			out := map[string]any{}
			for id, ps := range s.watches.bySession() {
				out[sessionHex(id)] = ps
			}
			return map[string]any{"session_id_to_watched_paths": out}
		}},
		{[]string{"watches_by_path", "wchp"}, func(s *Server) map[string]any {
			out := map[string]any{}
			for p, ids := range s.watches.byPathSessions() {
				hex := make([]string, len(ids))
				for i, id := range ids {
					hex[i] = sessionHex(id)
				}
				out[p] = hex
			}
			return map[string]any{"path_to_session_ids": out}
		}},
		{[]string{"dump"}, text(func(s *Server) string { return s.dumpText() })},
	}
}

// CommandNames returns the primary name of every admin command, sorted.
func (s *Server) CommandNames() []string {
	var names []string
	for _, c := range adminCommands() {
		names = append(names, c.names[0])
	}
	sort.Strings(names)
	return names
}

// RunCommand runs the admin command called name (or one of its four-letter
// aliases). It returns the command's primary name and its JSON fields, or
// ok=false for an unknown command.
func (s *Server) RunCommand(name string) (primary string, out map[string]any, ok bool) {
	for _, c := range adminCommands() {
		for _, n := range c.names {
			if n == name {
				return c.names[0], c.run(s), true
			}
		}
	}
	return "", nil, false
}

// Gauges reports every numeric mntr value, for Prometheus.
func (s *Server) Gauges(emit func(name, help string, v float64)) {
	for _, v := range s.monitorValues() {
		if v.num != nil {
			emit(v.key, v.help, *v.num)
		}
	}
}
