package compattests

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// FLW runs a four-letter word and returns its output ("" on failure).
func (s *S) FLW(cmd string) string {
	out, closed, err := s.fourLetter([]byte(cmd))
	if err != nil {
		s.Failf("%s: %v", cmd, err)
		return ""
	}
	if !closed {
		s.T.Logf("%s: connection left open", cmd)
	}
	return out
}

// fourLetter sends raw on a fresh connection to the first node, as
// fourLetter does, noting the word (its first four bytes) it uses.
func (s *S) fourLetter(raw []byte) (string, bool, error) {
	if w := string(raw[:min(4, len(raw))]); slices.Contains(AllWords, w) && !slices.Contains(s.words, w) {
		s.used |= Need4lw
		s.words = append(s.words, w)
	}
	return fourLetter(s.Addr, raw)
}

// logExact records a command's whole output.
func (s *S) logExact(cmd string) {
	s.T.Logf("%s -> %q", cmd, s.FLW(cmd))
}

var (
	numRe = regexp.MustCompile(`[0-9]+`)
	hexRe = regexp.MustCompile(`0x[0-9a-f]+`)
	// srvr's latency triple, and a count of either sign (Outstanding).
	latencyRe   = regexp.MustCompile(`^[0-9]+/[0-9]+\.[0-9]+/[0-9]+$`)
	signedNumRe = regexp.MustCompile(`^-?[0-9]+$`)
	clientRe    = regexp.MustCompile(`^ /[0-9a-fA-F.:%]+:[0-9]+\[[0-9]+\]\((.*)\)$`)
)

// fieldNames keeps the keys of a "k=v,k=v" list.
func fieldNames(list string) string {
	var keys []string
	for _, kv := range strings.Split(list, ",") {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	return strings.Join(keys, ",")
}

// clientLine is the shape of a stat/cons connection line: its field names.
func clientLine(l string) string {
	if m := clientRe.FindStringSubmatch(l); m != nil {
		return " /IP:PORT[N](" + fieldNames(m[1]) + ")"
	}
	return "unexpected client line " + strconv.Quote(l)
}

// lineKeys is the key of each line (text before sep), in order.
func lineKeys(out, sep string) []string {
	var keys []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, _, ok := strings.Cut(l, sep)
		if !ok {
			k = "no-separator:" + strconv.Quote(l)
		}
		keys = append(keys, k)
	}
	return keys
}

// srvrShape keeps srvr/stat's line keys; client lines become their shape.
func srvrShape(out string) []string {
	var shape []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, " /"):
			shape = append(shape, clientLine(l))
		case l == "" || l == "Clients:":
			shape = append(shape, l)
		default:
			k, v, ok := strings.Cut(l, ": ")
			if !ok {
				shape = append(shape, "odd line "+strconv.Quote(l))
				continue
			}
			switch k {
			case "Zookeeper version":
				v = "V"
			case "Latency min/avg/max":
				v = latencyRe.ReplaceAllString(v, "N/D/N")
			case "Zxid":
				v = hexRe.ReplaceAllString(v, "0xH")
			case "Mode":
			case "Outstanding":
				// Timing, and ZooKeeper 3.8's own count can dip below
				// zero: the self-check once saw "Outstanding: -1" from
				// ZooKeeper against 0 from another ZooKeeper.
				v = signedNumRe.ReplaceAllString(v, "N")
			default:
				v = numRe.ReplaceAllString(v, "N")
			}
			shape = append(shape, k+": "+v)
		}
	}
	return shape
}

// mntrCoreKeys are the gauges ZooKeeper 3.8's server registers itself
// (ZooKeeperServer.registerMetrics) plus the two header lines: what
// monitoring tools read. The hundreds of per-processor summaries and
// counters that follow describe ZooKeeper's internal pipeline and are not
// compared (see the 4lw README notes).
var mntrCoreKeys = []string{
	"zk_version", "zk_server_state", "zk_avg_latency", "zk_max_latency", "zk_min_latency",
	"zk_packets_received", "zk_packets_sent", "zk_num_alive_connections", "zk_outstanding_requests",
	"zk_uptime", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count", "zk_approximate_data_size",
	"zk_global_sessions", "zk_local_sessions", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count",
	"zk_connection_drop_probability", "zk_last_client_response_size", "zk_max_client_response_size",
	"zk_min_client_response_size", "zk_outstanding_tls_handshake", "zk_auth_failed_count",
	"zk_non_mtls_remote_conn_count", "zk_non_mtls_local_conn_count",
}

// hexSession turns "0x<hex>" into the transcript's session name.
func (s *S) hexSession(h string) string {
	v, err := strconv.ParseUint(strings.TrimPrefix(h, "0x"), 16, 64)
	if err != nil {
		return "bad:" + h
	}
	return s.T.Session(int64(v))
}

// watchBlocks parses wchc/wchp output: header lines with tab-indented
// members. It returns "header: m1 m2" lines, members and blocks sorted
// (ZooKeeper prints hash-map order).
func watchBlocks(out string, norm func(string) string) []string {
	var blocks []string
	var head string
	var members []string
	flush := func() {
		if head != "" {
			sort.Strings(members)
			blocks = append(blocks, head+": "+strings.Join(members, " "))
		}
		head, members = "", nil
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "\t"):
			members = append(members, norm(strings.TrimPrefix(l, "\t")))
		case l == "":
		default:
			flush()
			head = norm(l)
		}
	}
	flush()
	sort.Strings(blocks)
	return blocks
}

// setUpWatches gives two sessions data and child watches under the root.
func (s *S) setUpWatches() (*Client, *Client) {
	a := s.Client("a")
	b := s.Client("b")
	s.Create(a, s.P("x"), nil, 0)
	s.Create(a, s.P("y"), nil, 0)
	s.Get(a, s.P("x"), true)
	s.Exists(a, s.P("y"), true)
	s.Exists(a, s.P("nothere"), true)
	s.Children(a, s.P(""), true)
	s.Get(b, s.P("x"), true)
	s.Children(b, s.P("y"), true)
	return a, b
}

func init() {
	register(
		&Scenario{Area: "4lw", Name: "ruok", Needs: Need4lw, Words: []string{"ruok"}, Run: func(s *S) { s.logExact("ruok") }},
		&Scenario{Area: "4lw", Name: "isro", Needs: Need4lw, Words: []string{"isro"}, Run: func(s *S) { s.logExact("isro") }},
		&Scenario{Area: "4lw", Name: "gtmk default", Needs: Need4lw, Words: []string{"gtmk"}, Serial: true, Run: func(s *S) { s.logExact("gtmk") }},
		&Scenario{Area: "4lw", Name: "srst and crst", Needs: Need4lw, Words: []string{"srst", "crst"}, Serial: true, Run: func(s *S) {
			s.logExact("srst")
			s.logExact("crst")
		}},
		&Scenario{Area: "4lw", Name: "stmk sets the trace mask", Needs: Need4lw, Words: []string{"stmk", "gtmk"}, Serial: true, Run: func(s *S) {
			set := func(mask uint64) {
				raw := []byte("stmk")
				raw = append(raw, byte(mask>>56), byte(mask>>48), byte(mask>>40), byte(mask>>32), byte(mask>>24), byte(mask>>16), byte(mask>>8), byte(mask))
				out, closed, err := s.fourLetter(raw)
				if err != nil {
					s.Failf("stmk: %v", err)
				}
				s.T.Logf("stmk %d -> %q closed=%v", mask, out, closed)
			}
			set(0x1ff)
			s.logExact("gtmk")
			set(306)
			s.logExact("gtmk")
		}},
		&Scenario{Area: "4lw", Name: "srvr fields", Needs: Need4lw, Words: []string{"srvr"}, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			for _, l := range srvrShape(s.FLW("srvr")) {
				s.T.Logf("srvr | %s", l)
			}
		}},
		&Scenario{Area: "4lw", Name: "stat fields and client lines", Needs: Need4lw | NeedExclusive, Words: []string{"stat"}, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			for _, l := range srvrShape(s.FLW("stat")) {
				s.T.Logf("stat | %s", l)
			}
		}},
		&Scenario{Area: "4lw", Name: "mntr core keys", Needs: Need4lw, Words: []string{"mntr"}, Run: func(s *S) {
			out := s.FLW("mntr")
			have := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				k, v, ok := strings.Cut(l, "\t")
				if !ok {
					s.T.Logf("mntr line without a tab: %q", l)
					continue
				}
				have[k] = true
				if k == "zk_server_state" {
					s.T.Logf("mntr zk_server_state=%s", v)
				}
			}
			for _, k := range mntrCoreKeys {
				if !have[k] {
					s.T.Logf("mntr missing %s", k)
				}
			}
			if !strings.HasPrefix(out, "zk_version\t") {
				s.T.Logf("mntr does not start with zk_version")
			}
		}},
		&Scenario{Area: "4lw", Name: "cons line shape", Needs: Need4lw | NeedExclusive, Words: []string{"cons"}, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("a"), nil, 0)
			s.Get(c, s.P("a"), false)
			out := s.FLW("cons")
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if l == "" {
					lines = append(lines, "")
				} else {
					lines = append(lines, clientLine(l))
				}
			}
			// connection lines come in hash order: sort the non-empty ones
			var shapes []string
			blanks := 0
			for _, l := range lines {
				if l == "" {
					blanks++
				} else {
					shapes = append(shapes, l)
				}
			}
			sort.Strings(shapes)
			for _, l := range shapes {
				s.T.Logf("cons | %s", l)
			}
			s.T.Logf("cons blank lines=%d", blanks)
		}},
		&Scenario{Area: "4lw", Name: "conf keys", Needs: Need4lw, Words: []string{"conf"}, Run: func(s *S) {
			for _, k := range lineKeys(s.FLW("conf"), "=") {
				s.T.Logf("conf | %s", k)
			}
		}},
		&Scenario{Area: "4lw", Name: "dirs keys", Needs: Need4lw, Words: []string{"dirs"}, Run: func(s *S) {
			for _, k := range lineKeys(s.FLW("dirs"), ": ") {
				s.T.Logf("dirs | %s", k)
			}
		}},
		&Scenario{Area: "4lw", Name: "envi header and common keys", Needs: Need4lw, Words: []string{"envi"}, Run: func(s *S) {
			out := s.FLW("envi")
			first, rest, _ := strings.Cut(out, "\n")
			s.T.Logf("envi first line %q", first)
			have := map[string]bool{}
			for _, k := range lineKeys(rest, "=") {
				have[k] = true
			}
			for _, k := range []string{"zookeeper.version", "host.name", "os.name", "os.arch", "os.version", "user.name", "user.home", "user.dir", "os.memory.free"} {
				s.T.Logf("envi %s present=%v", k, have[k])
			}
		}},
		&Scenario{Area: "4lw", Name: "wchs counts data watches only", Needs: Need4lw | NeedExclusive, Words: []string{"wchs"}, Run: func(s *S) {
			s.logExact("wchs")
			s.setUpWatches()
			s.logExact("wchs")
		}},
		&Scenario{Area: "4lw", Name: "wchc and wchp", Needs: Need4lw | NeedExclusive, Words: []string{"wchc", "wchp"}, Run: func(s *S) {
			s.setUpWatches()
			norm := func(l string) string {
				if strings.HasPrefix(l, "0x") {
					return s.hexSession(l)
				}
				return l
			}
			for _, b := range watchBlocks(s.FLW("wchc"), norm) {
				s.T.Logf("wchc | %s", b)
			}
			for _, b := range watchBlocks(s.FLW("wchp"), norm) {
				s.T.Logf("wchp | %s", b)
			}
		}},
		&Scenario{Area: "4lw", Name: "dump section headers", Needs: Need4lw, Words: []string{"dump"}, Run: func(s *S) {
			c := s.Client("c1")
			s.Create(c, s.P("e"), nil, int32(zkproto.ModeEphemeral))
			for _, l := range strings.Split(s.FLW("dump"), "\n") {
				if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "0x") || (l[0] >= '0' && l[0] <= '9') {
					continue
				}
				s.T.Logf("dump | %s", numRe.ReplaceAllString(l, "N"))
			}
		}},
		&Scenario{Area: "4lw", Name: "unknown word is a frame length", Run: func(s *S) {
			for _, w := range []string{"abcd", "SRVR", "ruo\n"} {
				out, closed, err := s.fourLetter([]byte(w))
				if err != nil {
					s.Failf("%s: %v", w, err)
				}
				s.T.Logf("%q -> %q closed=%v", w, out, closed)
			}
		}},
		&Scenario{Area: "4lw", Name: "only the first four bytes count", Needs: Need4lw, Words: []string{"ruok", "isro"}, Run: func(s *S) {
			for _, w := range []string{"ruok\n", "ruokruok", "isro and more"} {
				out, closed, err := s.fourLetter([]byte(w))
				if err != nil {
					s.Failf("%s: %v", w, err)
				}
				s.T.Logf("%q -> %q closed=%v", w, out, closed)
			}
		}},
		&Scenario{Area: "4lw", Name: "telnet interrupt closes", Run: func(s *S) {
			out, closed, err := s.fourLetter([]byte{0xff, 0xf4, 0xff, 0xfd})
			if err != nil {
				s.Failf("telnet: %v", err)
			}
			s.T.Logf("telnet close -> %q closed=%v", out, closed)
		}},
	)
}
