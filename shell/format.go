package shell

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zkbridge/zkbridge/zkproto"
)

// javaDate formats ms since the epoch as java.util.Date.toString in the
// local zone: "Mon Dec 07 00:25:12 UTC 2026".
func javaDate(ms int64) string {
	return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006")
}

func hex64(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// printStat writes a stat block exactly as zkCli's StatPrinter.
func printStat(w io.Writer, s zkproto.Stat) {
	fmt.Fprintf(w, "cZxid = %s\nctime = %s\nmZxid = %s\nmtime = %s\npZxid = %s\ncversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = %s\ndataLength = %d\nnumChildren = %d\n",
		hex64(s.Czxid), javaDate(s.Ctime), hex64(s.Mzxid), javaDate(s.Mtime), hex64(s.Pzxid),
		s.Cversion, s.Version, s.Aversion, hex64(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// statJSON is a stat for --json output (the Java field names).
type statJSON struct {
	Czxid          int64  `json:"czxid"`
	Mzxid          int64  `json:"mzxid"`
	Pzxid          int64  `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

func toStatJSON(s zkproto.Stat) statJSON {
	return statJSON{Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: hex64(s.EphemeralOwner), DataLength: s.DataLength,
		NumChildren: s.NumChildren}
}

// printACL writes an ACL as zkCli's getAcl: the jute CSV form of the Id
// ("'world,'anyone" and a newline), then ": perms".
func printACL(w io.Writer, acl []zkproto.ACL) {
	for _, a := range acl {
		fmt.Fprintf(w, "'%s,'%s\n: %s\n", a.ID.Scheme, a.ID.ID, zkproto.PermString(a.Perms))
	}
}

// parseACL is zkCli's AclParser: "scheme:id:perm[,…]"; malformed entries
// and unknown perm letters are reported on errOut and skipped.
func parseACL(s string, errOut io.Writer) []zkproto.ACL {
	var out []zkproto.ACL
	for _, a := range strings.Split(s, ",") {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first < 0 || first == last {
			fmt.Fprintf(errOut, "%s does not have the form scheme:id:perm\n", a)
			continue
		}
		var perms int32
		for _, c := range a[last+1:] {
			switch c {
			case 'r':
				perms |= zkproto.PermRead
			case 'w':
				perms |= zkproto.PermWrite
			case 'c':
				perms |= zkproto.PermCreate
			case 'd':
				perms |= zkproto.PermDelete
			case 'a':
				perms |= zkproto.PermAdmin
			default:
				fmt.Fprintf(errOut, "Unknown perm type: %c\n", c)
			}
		}
		out = append(out, zkproto.ACL{Perms: perms, ID: zkproto.Id{Scheme: a[:first], ID: a[first+1 : last]}})
	}
	return out
}

// javaString decodes b as Java's new String(b, UTF_8): invalid bytes
// become U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// printable reports whether data reads as text: valid UTF-8 with no
// control characters but tab, newline and carriage return.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// Data formats of --format.
const (
	formatAuto   = "auto"
	formatRaw    = "raw"
	formatHex    = "hex"
	formatBase64 = "base64"
)

// formatData renders data for get: zkCli prints text (and "null" for a
// node without data); auto prints printable data as text and anything
// else as a hex dump; raw, hex and base64 force one form.
func formatData(data []byte, format string) string {
	if data == nil && (format == formatAuto || format == formatRaw) {
		return "null"
	}
	switch format {
	case formatRaw:
		return string(data)
	case formatHex:
		return hex.EncodeToString(data)
	case formatBase64:
		return base64.StdEncoding.EncodeToString(data)
	}
	if printable(data) {
		return string(data)
	}
	return strings.TrimRight(hex.Dump(data), "\n")
}

// statsTrack is ZooKeeper's StatsTrack: the "count=…,bytes=…" text of the
// quota nodes (zookeeper_limits, zookeeper_stats).
type statsTrack map[string]int64

func parseStatsTrack(s string) statsTrack {
	st := statsTrack{}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			st[k] = -1
			continue
		}
		// StatsTrack's quirk: "bytes=100=" (extra keys follow) still reads as 100.
		v, _, _ = strings.Cut(v, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			n = -1
		}
		st[k] = n
	}
	return st
}

func (st statsTrack) get(k string) int64 {
	if v, ok := st[k]; ok {
		return v
	}
	return -1
}

// String is StatsTrack.toString, quirks included ("count=5,bytes=100=;byteHardLimit=-1;countHardLimit=-1").
func (st statsTrack) String() string {
	s := fmt.Sprintf("count=%d,bytes=%d", st.get("count"), st.get("bytes"))
	var keys []string
	for k := range st {
		if k != "count" && k != "bytes" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		s += "="
		sort.Strings(keys)
		for _, k := range keys {
			s += fmt.Sprintf(";%s=%d", k, st[k])
		}
	}
	return s
}

// prettyHexDump is netty's ByteBufUtil.prettyHexDump, what zkCli 3.9's
// `get -x` prints: a boxed table of 16 bytes a row with their ASCII.
func prettyHexDump(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	const rule = "+--------+-------------------------------------------------+----------------+"
	var b strings.Builder
	b.WriteString("         +-------------------------------------------------+\n" +
		"         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n" + rule)
	for row := 0; row*16 < len(data); row++ {
		chunk := data[row*16 : min(len(data), row*16+16)]
		fmt.Fprintf(&b, "\n|%08x|", row*16)
		for _, c := range chunk {
			fmt.Fprintf(&b, " %02x", c)
		}
		b.WriteString(strings.Repeat("   ", 16-len(chunk)) + " |")
		for _, c := range chunk {
			if c <= 0x1f || c >= 0x7f {
				c = '.'
			}
			b.WriteByte(c)
		}
		b.WriteString(strings.Repeat(" ", 16-len(chunk)) + "|")
	}
	b.WriteString("\n" + rule)
	return b.String()
}
