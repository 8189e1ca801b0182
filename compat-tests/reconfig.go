package compattests

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The reconfig scenarios need reconfigEnabled=true and the super user.
// TestCompatReconfig runs each on a 3-node ZooKeeper ensemble and a 3-node
// zkbridge cluster of its own: a reconfig changes a cluster for good.
func init() {
	register(
		&Scenario{Area: "reconfig", Name: "unparsable members are BadArguments before the ACL", Needs: NeedReconfig | NeedSuper,
			Run: func(s *S) {
				anon := s.Client("anon")
				sup := s.Client("super")
				s.Auth(sup, s.Super())
				for _, c := range []*Client{anon, sup} {
					for _, r := range badReconfigs {
						s.Reconfig(c, r, nil)
					}
				}
				// Valid arguments meet the ACL: the client without super
				// is refused, after them.
				s.Reconfig(anon, &reconfigReq{Joining: strp("server.100=0.0.0.0:1001:1002:observer;0.0.0.0:1003"), CurConfigID: -1}, nil)
				s.Create(sup, s.P("after"), nil, 0)
			},
			Check: func(lines []string) error {
				var got, want []string
				for _, who := range []string{"anon", "super"} {
					for _, r := range badReconfigs {
						want = append(want, who+" "+r.want)
					}
				}
				want = append(want, "anon NOAUTH")
				asked := ""
				for _, l := range lines {
					if i := strings.Index(l, " > reconfig "); i >= 0 {
						asked = l[:i]
						continue
					}
					if m := replyErr.FindStringSubmatch(l); m != nil && asked != "" && strings.HasPrefix(l, asked+" < ") {
						got = append(got, asked+" "+m[1])
						asked = ""
					}
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("reconfig answers %v, want %v", got, want)
				}
				return nil
			}},
		&Scenario{Area: "reconfig", Name: "an observer joins with its whole spec", Needs: NeedReconfig | NeedSuper,
			Isolated: "a 3-node ensemble on this machine that the scenario adds an observer to for good",
			Run: func(s *S) {
				ports, err := freePorts(3)
				if err != nil {
					s.Failf("free ports: %v", err)
					return
				}
				names := map[string]string{}
				for i, p := range ports {
					names[strconv.Itoa(p)] = fmt.Sprintf("P%d", i+1)
				}
				sup := s.Client("super")
				s.Auth(sup, s.Super())
				joining := fmt.Sprintf("server.100=0.0.0.0:%d:%d:observer;0.0.0.0:%d", ports[0], ports[1], ports[2])
				s.Reconfig(sup, &reconfigReq{Joining: &joining, CurConfigID: -1}, names)
				reader := s.Client("reader")
				s.ReadConfig(reader, names)
				s.ReadConfig(sup, names)
			},
			Check: contains(
				"super < OK",
				`super config "server.1=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.2=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.3=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.100=0.0.0.0:P1:P2:observer;0.0.0.0:P3\nversion=z`,
				`reader config "server.1=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.2=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.3=127.0.0.1:P:P:participant;127.0.0.1:P\nserver.100=0.0.0.0:P1:P2:observer;0.0.0.0:P3\nversion=z`,
			)},
	)
}

var replyErr = regexp.MustCompile(`< ([A-Z]+) zxid=`)

// badReconfigs are reconfigs ZooKeeper refuses for their arguments, with
// what it answers (the same to any client: arguments come before the ACL).
var badReconfigs = []*reconfigReq{
	{Joining: strp("server.x=garbage"), want: "MARSHALLINGERROR"}, // the id is Java's Long.parseLong
	{Joining: strp("server.5=host"), want: "BADARGUMENTS"},
	{Joining: strp("server.5=127.0.0.1:1:2"), want: "BADARGUMENTS"}, // no client address
	{Joining: strp("server.5=127.0.0.1:abc:2;3"), want: "BADARGUMENTS"},
	{Joining: strp("server.5=127.0.0.1:70000:2;3"), want: "MARSHALLINGERROR"}, // a port out of range
	{Joining: strp("server.5=127.0.0.1:1:2:bogus;3"), want: "BADARGUMENTS"},
	{Joining: strp("server.5=127.0.0.1:1:1;3"), want: "BADARGUMENTS"}, // peer port == election port
	{Leaving: strp("abc"), want: "MARSHALLINGERROR"},
	{NewMembers: strp("garbage"), want: "BADARGUMENTS"},
	{NewMembers: strp("server.5=host"), want: "BADARGUMENTS"},
	{Leaving: strp("1,2"), want: "BADARGUMENTS"}, // fewer than 2 participants left
	// newMembers "" is not null: a non-incremental reconfig to nothing.
	{Joining: strp("server.100=0.0.0.0:1001:1002:observer;0.0.0.0:1003"), NewMembers: strp(""), want: "BADARGUMENTS"},
}

func init() {
	for _, r := range badReconfigs {
		r.CurConfigID = -1
	}
}

func strp(s string) *string { return &s }

// reconfigReq is a reconfig request as ZooKeeper's Java client sends it:
// an absent argument is a null string (length -1), which ZooKeeper tells
// from "" (zkproto.ReconfigRequest writes "" for both). It prints with the
// ports named in ports masked.
type reconfigReq struct {
	Joining, Leaving, NewMembers *string
	CurConfigID                  int64
	want                         string // the expected answer, for checks
	ports                        map[string]string
}

// Encode writes the record.
func (r *reconfigReq) Encode(e *zkproto.Encoder) {
	for _, s := range []*string{r.Joining, r.Leaving, r.NewMembers} {
		if s == nil {
			e.Int(-1)
			continue
		}
		e.String(*s)
	}
	e.Long(r.CurConfigID)
}

// Decode is not needed: the record is only sent.
func (r *reconfigReq) Decode(*zkproto.Decoder) error { return errors.New("reconfigReq is not decoded") }

func (r *reconfigReq) String() string {
	show := func(s *string) string {
		if s == nil {
			return "null"
		}
		return strconv.Quote(maskPorts(*s, r.ports))
	}
	return fmt.Sprintf("joining=%s leaving=%s newMembers=%s curConfigId=%d", show(r.Joining), show(r.Leaving), show(r.NewMembers), r.CurConfigID)
}

var numberRe = regexp.MustCompile(`[0-9]+`)

// maskPorts replaces the numbers named in ports by their names.
func maskPorts(s string, ports map[string]string) string {
	if len(ports) == 0 {
		return s
	}
	return numberRe.ReplaceAllStringFunc(s, func(n string) string {
		if name, ok := ports[n]; ok {
			return name
		}
		return n
	})
}

var versionRe = regexp.MustCompile(`version=([0-9a-f]+)$`)

// normConfig masks a configuration's ports (those in names by name, the
// ensemble's own as P) and writes its version, a zxid, as the transcript
// names zxids.
func (s *S) normConfig(data []byte, names map[string]string) []byte {
	text := string(data)
	if m := versionRe.FindStringSubmatch(text); m != nil {
		if v, err := strconv.ParseUint(m[1], 16, 64); err == nil {
			text = text[:len(text)-len(m[1])] + s.T.Zxid(int64(v))
		}
	}
	text = maskPorts(text, names)
	return []byte(portRe.ReplaceAllString(text, ":P"))
}

// Reconfig sends a reconfig and records its reply, the configuration
// masked as ReadConfig does.
func (s *S) Reconfig(c *Client, r *reconfigReq, names map[string]string) *Reply {
	r.ports = names
	reply := s.do(c, zkproto.OpReconfig, r, func(rep *Reply) { s.normConfigReply(rep, names) })
	s.logConfig(c, reply)
	return reply
}

// ReadConfig reads /zookeeper/config with getData and records it with the
// ports in names masked by name, the others as P, and its version as a
// zxid rank.
func (s *S) ReadConfig(c *Client, names map[string]string) *Reply {
	reply := s.do(c, zkproto.OpGetData, &zkproto.GetDataRequest{Path: ConfigNode}, func(rep *Reply) { s.normConfigReply(rep, names) })
	s.logConfig(c, reply)
	return reply
}

func (s *S) normConfigReply(r *Reply, names map[string]string) {
	if v, ok := r.Body.(*zkproto.GetDataResponse); ok {
		v.Data = s.normConfig(v.Data, names)
		normConfigStat(&v.Stat)
		v.Stat.DataLength = int32(len(v.Data))
	}
}

// logConfig writes the configuration as text: the reply line shows long
// data as a hash.
func (s *S) logConfig(c *Client, r *Reply) {
	if r == nil {
		return
	}
	if v, ok := r.Body.(*zkproto.GetDataResponse); ok && len(v.Data) > 0 {
		s.T.Logf("%s config %q", c.Name, v.Data)
	}
}
