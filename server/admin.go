package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

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

func (s *Server) startAdmin() error {
	mux := http.NewServeMux()
	cmds := adminCommands()
	byName := map[string]adminCommand{}
	var names []string
	for _, c := range cmds {
		for _, n := range c.names {
			byName[n] = c
		}
		names = append(names, c.names[0])
	}
	sort.Strings(names)
	writeJSON := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	}
	mux.HandleFunc("/commands", func(w http.ResponseWriter, r *http.Request) {
		links := map[string]string{}
		for _, n := range names {
			links[n] = "/commands/" + n
		}
		writeJSON(w, http.StatusOK, map[string]any{"commands": links})
	})
	mux.HandleFunc("/commands/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/commands/")
		c, ok := byName[name]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"command": name, "error": "unknown command; see /commands"})
			return
		}
		out := c.run(s)
		out["command"] = c.names[0]
		out["error"] = nil
		writeJSON(w, http.StatusOK, out)
	})
	s.raftHandlers(mux)
	// Profiles for performance work (go tool pprof http://ADMIN/debug/pprof/profile).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector()) // go_memstats_*: heap for memory comparisons
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("listen on admin address %s: %w (use --admin-addr to move it, or disable it)", s.cfg.AdminAddr, err)
	}
	s.cfg.AdminAddr = ln.Addr().String()
	s.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.admin.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error().Err(err).Msg("admin server stopped")
		}
	}()
	return nil
}

// AdminAddr returns the bound admin address ("" when disabled).
func (s *Server) AdminAddr() string {
	if s.admin == nil {
		return ""
	}
	return s.cfg.AdminAddr
}
