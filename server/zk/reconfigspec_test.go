package zk

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The expectations below were observed on a 3-node ZooKeeper 3.8.0
// ensemble with reconfigEnabled=true: the members' lines, the answers, the
// orders of /zookeeper/config (except where a comment says otherwise).

func TestParseMemberSpecRendersAsZooKeeper(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"0.0.0.0:41001:41002:observer;0.0.0.0:41003", "0.0.0.0:41001:41002:observer;0.0.0.0:41003"},
		{"0.0.0.0:41011:41012:observer;41013", "0.0.0.0:41011:41012:observer;0.0.0.0:41013"},
		{"127.0.0.1:41401:41402;41403", "127.0.0.1:41401:41402:participant;0.0.0.0:41403"},
		{"127.0.0.1:41021:41022:OBSERVER ;  localhost:41023", "127.0.0.1:41021:41022:observer;  localhost:41023"},
		{"localhost:41031:41032: Observer;[::1]:41033", "localhost:41031:41032:observer;[0:0:0:0:0:0:0:1]:41033"},
		{"[::1]:41041:41042:observer;41043", "[0:0:0:0:0:0:0:1]:41041:41042:observer;0.0.0.0:41043"},
		{":41051:41052:observer;41053", "localhost:41051:41052:observer;0.0.0.0:41053"},
		{"127.0.0.1:041061:+41062:observer;041063", "127.0.0.1:41061:41062:observer;0.0.0.0:41063"},
		{"127.0.0.1:41081:41082:observer:;127.0.0.1:41083:", "127.0.0.1:41081:41082:observer;127.0.0.1:41083"},
		{"myhost.invalid:41101:41102:observer;otherhost.invalid:41103", "myhost.invalid:41101:41102:observer;otherhost.invalid:41103"},
		{"127.1:41541:41542:observer;41543", "127.0.0.1:41541:41542:observer;0.0.0.0:41543"},
		{"0127.0.0.1:41551:41552:observer;41553", "127.0.0.1:41551:41552:observer;0.0.0.0:41553"},
		{"127.0.0.01:41561:41562:observer;41563", "127.0.0.1:41561:41562:observer;0.0.0.0:41563"},
		{"2130706433:41571:41572:observer;41573", "127.0.0.1:41571:41572:observer;0.0.0.0:41573"},
		{"[::ffff:127.0.0.1]:41591:41592:observer;41593", "127.0.0.1:41591:41592:observer;0.0.0.0:41593"},
		{"[1:2::3]:41601:41602:observer;[::]:41603", "[1:2:0:0:0:0:0:3]:41601:41602:observer;[0:0:0:0:0:0:0:0]:41603"},
		{"LocalHost:41611:41612:observer;41613", "LocalHost:41611:41612:observer;0.0.0.0:41613"},
		{"127.0.0.1:0:41632:observer;0", "127.0.0.1:0:41632:observer;0.0.0.0:0"},
		{"[::1]x41731:41732:observer;41733", "[0:0:0:0:0:0:0:1]:41731:41732:observer;0.0.0.0:41733"},
		// Without a client address (a non-incremental reconfig takes it).
		{"127.0.0.1:1:2:observer", "127.0.0.1:1:2:observer"},
		{"127.0.0.1:41071:41072:observer;;", "127.0.0.1:41071:41072:observer"},
	} {
		m, err := ParseMemberSpec(7, tc.spec)
		if err != nil {
			t.Errorf("ParseMemberSpec(%q): %v", tc.spec, err)
			continue
		}
		if got := m.String(); got != tc.want {
			t.Errorf("ParseMemberSpec(%q) renders %q, want %q", tc.spec, got, tc.want)
		}
		if got := m.Line(); got != "server.7="+tc.want {
			t.Errorf("Line of %q: %q", tc.spec, got)
		}
		// The rendered spec is what the directory stores: it reads back
		// to the same member.
		back, err := ParseMemberSpec(7, m.String())
		if err != nil || back != m {
			t.Errorf("%q does not read back: %+v, %v; want %+v", m.String(), back, err, m)
		}
	}
}

func TestParseMemberSpecRejectsAsZooKeeper(t *testing.T) {
	bad, marsh := zkproto.ErrBadArguments, zkproto.ErrMarshallingError
	for _, tc := range []struct {
		spec string
		want zkproto.ErrCode
	}{
		{"host", bad},
		{"127.0.0.1:abc:2;3", bad},
		{"127.0.0.1:1:2:bogus;3", bad},
		{"127.0.0.1:1:1;3", bad}, // peer port == election port
		{"127.0.0.1:41091:41092:observer;127.0.0.1:41093;x", bad},
		{"::ffff:127.0.0.1:41581:41582:observer;41583", bad},
		{"127.0.0.1:41621:41622:observer:x;41623", bad},
		{"a|b:41641:41642:observer;41643", bad},
		{"127.0.0.1: 41651:41652:observer;41653", bad},
		{"127.0.0.1:41661:41662 :observer;41663", bad},
		{"127.0.0.1:41671:41672:observer; 41673", bad},
		{"127.0.0.1:41691:41692:observer;127.0.0.1:41693:x", bad},
		{"127.0.0.1:41701:41702:observer;[::1]", bad},
		{"[::1:41711:41712:observer;41713", bad},
		{"[::1]:41721:41722:observer;[::1]:", bad},
		{"[::1]x:41731:41732:observer;41733", bad},
		{"127.0.0.1:1:2;abc", bad},
		{"", bad},
		{"127.0.0.1:70000:2;3", marsh}, // a port out of range is Java's IllegalArgumentException
		{"127.0.0.1:1:2;70000", marsh},
		{"127.0.0.1:-1:2;3", marsh},
		{"127.0.0.1:abc:2;70000", marsh}, // the client part is read first
		{"127.0.0.1:1:2;:", marsh},
		{";", marsh},
	} {
		_, err := ParseMemberSpec(5, tc.spec)
		if err == nil {
			t.Errorf("ParseMemberSpec(%q) accepted it; ZooKeeper answers %s", tc.spec, tc.want.Name())
			continue
		}
		if got := SpecErrorCode(err); got != tc.want {
			t.Errorf("ParseMemberSpec(%q): %s (%v), want %s", tc.spec, got.Name(), err, tc.want.Name())
		}
	}
	// ZooKeeper takes a member without an address and stops serving.
	_, err := ParseMemberSpec(5, "|;41000")
	if se, ok := err.(*SpecError); !ok || !se.Unsupported || se.Code != zkproto.ErrBadArguments {
		t.Errorf(`"|;41000": %v, want an Unsupported BadArguments`, err)
	}
}

func strPtr(s string) *string { return &s }

// oracleMembers is the configuration of the ensemble the answers came from.
var oracleMembers = []MemberSpec{
	mustMember(1, "127.0.0.1:55607:54773:participant;127.0.0.1:40853"),
	mustMember(2, "127.0.0.1:37349:46115:participant;127.0.0.1:55849"),
	mustMember(3, "127.0.0.1:35433:35231:participant;127.0.0.1:45947"),
}

func mustMember(id int64, spec string) MemberSpec {
	m, err := ParseMemberSpec(id, spec)
	if err != nil {
		panic(err)
	}
	return m
}

func TestPlanReconfigAnswersAsZooKeeper(t *testing.T) {
	bad, marsh, ok := zkproto.ErrBadArguments, zkproto.ErrMarshallingError, zkproto.ErrOK
	members := "server.1=127.0.0.1:55607:54773:participant;127.0.0.1:40853,server.2=127.0.0.1:37349:46115:participant;127.0.0.1:55849,server.3=127.0.0.1:35433:35231:participant;127.0.0.1:45947"
	for _, tc := range []struct {
		name string
		args ReconfigArgs
		want zkproto.ErrCode
	}{
		{"nothing (a no-op that bumps the version)", ReconfigArgs{}, ok},
		{"empty joining", ReconfigArgs{Joining: strPtr("")}, ok},
		{"empty leaving", ReconfigArgs{Leaving: strPtr("")}, ok},
		{"leaving a non-member", ReconfigArgs{Leaving: strPtr("99")}, ok},
		{"empty new members", ReconfigArgs{NewMembers: strPtr("")}, bad},
		{"empty new members with joining", ReconfigArgs{Joining: strPtr("server.100=0.0.0.0:41001:41002:observer;0.0.0.0:41003"), NewMembers: strPtr("")}, bad},
		{"joining id not a number", ReconfigArgs{Joining: strPtr("server.x=garbage")}, marsh},
		{"joining host only", ReconfigArgs{Joining: strPtr("server.5=host")}, bad},
		{"joining without client", ReconfigArgs{Joining: strPtr("server.5=127.0.0.1:1:2")}, bad},
		{"joining without client (;;)", ReconfigArgs{Joining: strPtr("server.108=127.0.0.1:41071:41072:observer;;")}, bad},
		{"joining bad port", ReconfigArgs{Joining: strPtr("server.5=127.0.0.1:abc:2;3")}, bad},
		{"joining port out of range", ReconfigArgs{Joining: strPtr("server.5=127.0.0.1:70000:2;3")}, marsh},
		{"joining bad role", ReconfigArgs{Joining: strPtr("server.5=127.0.0.1:1:2:bogus;3")}, bad},
		{"joining same ports", ReconfigArgs{Joining: strPtr("server.5=127.0.0.1:1:1;3")}, bad},
		{"joining without =", ReconfigArgs{Joining: strPtr("garbage")}, bad},
		{"joining two =", ReconfigArgs{Joining: strPtr("server.5=a=b")}, bad},
		{"joining only ;", ReconfigArgs{Joining: strPtr("server.5=;")}, marsh},
		{"joining id out of range", ReconfigArgs{Joining: strPtr("server.99999999999999999999=127.0.0.1:1:2;3")}, marsh},
		{"leaving not a number", ReconfigArgs{Leaving: strPtr("abc")}, marsh},
		{"leaving is read before joining", ReconfigArgs{Joining: strPtr("server.5=host"), Leaving: strPtr("abc")}, marsh},
		{"too few participants left", ReconfigArgs{Leaving: strPtr("1,2")}, bad},
		{"joiners conflict", ReconfigArgs{Joining: strPtr("server.4=10.0.0.1:1:2:observer;3,server.5=10.0.0.1:1:5:observer;6")}, bad},
		{"joiner's client conflicts", ReconfigArgs{Joining: strPtr("server.4=10.0.0.1:1:2:observer;3,server.5=10.0.0.2:1:5:observer;10.0.0.1:2")}, bad},
		{"loopback addresses never conflict", ReconfigArgs{Joining: strPtr("server.4=127.0.0.1:55607:2:observer;3")}, ok},
		{"new members garbage", ReconfigArgs{NewMembers: strPtr("garbage")}, bad},
		{"new members id not a number", ReconfigArgs{NewMembers: strPtr("server.x=1")}, marsh},
		{"new members host only", ReconfigArgs{NewMembers: strPtr("server.5=host")}, bad},
		{"new members observers only", ReconfigArgs{NewMembers: strPtr("server.5=127.0.0.1:1:2:observer;3")}, marsh},
		{"new members one participant", ReconfigArgs{NewMembers: strPtr("server.1=127.0.0.1:55607:54773:participant;127.0.0.1:40853")}, bad},
		{"new members bad version", ReconfigArgs{NewMembers: strPtr(members + ",version=zz")}, marsh},
		{"new members version", ReconfigArgs{NewMembers: strPtr(members + ",version=123")}, ok},
		{"new members ignore joining and leaving", ReconfigArgs{NewMembers: strPtr(members), Joining: strPtr("server.6=bad"), Leaving: strPtr("abc")}, ok},
		{"new members unknown key", ReconfigArgs{NewMembers: strPtr(members + ",foo=1")}, bad},
		{"new members port out of range", ReconfigArgs{NewMembers: strPtr(members + ",server.4=127.0.0.1:70000:2:observer;3")}, marsh},
		{"new members bad role", ReconfigArgs{NewMembers: strPtr(members + ",server.4=127.0.0.1:1:2:bogus;3")}, bad},
		{"new members value keeps trailing space", ReconfigArgs{NewMembers: strPtr(members + ",server.4=127.0.0.1:1:2:observer;3 ")}, bad},
		{"new members malformed \\u", ReconfigArgs{NewMembers: strPtr(members + ",server.4=127.0.0.1:1:2:observer;3,foo\\u00zz=1")}, marsh},
	} {
		plan, err := PlanReconfig(oracleMembers, tc.args)
		got := zkproto.ErrOK
		if err != nil {
			got = SpecErrorCode(err)
		}
		if got != tc.want {
			t.Errorf("%s: %s (%v, %+v), want %s", tc.name, got.Name(), err, plan, tc.want.Name())
		}
	}
	_, err := PlanReconfig(oracleMembers, ReconfigArgs{NewMembers: strPtr(members + ",group.1=1:2:3")})
	if se, ok := err.(*SpecError); !ok || !se.Unsupported {
		t.Errorf("hierarchical new members: %v, want Unsupported", err)
	}
}

func TestPlanReconfigKeepsTheWholeSpec(t *testing.T) {
	plan, err := PlanReconfig(oracleMembers, ReconfigArgs{Joining: strPtr("server.100=0.0.0.0:41001:41002:observer;0.0.0.0:41003")})
	if err != nil {
		t.Fatal(err)
	}
	want := "server.1=127.0.0.1:55607:54773:participant;127.0.0.1:40853\n" +
		"server.2=127.0.0.1:37349:46115:participant;127.0.0.1:55849\n" +
		"server.3=127.0.0.1:35433:35231:participant;127.0.0.1:45947\n" +
		"server.100=0.0.0.0:41001:41002:observer;0.0.0.0:41003\n" +
		"version=10000009f"
	if got := RenderDynamicConfig(plan.Members, 0x10000009f); got != want {
		t.Errorf("config\n%s\nwant\n%s", got, want)
	}
	if len(plan.Joining) != 1 || plan.Joining[0].PeerAddr() != "0.0.0.0:41001" || plan.Joining[0].ClientAddr() != "0.0.0.0:41003" || !plan.Joining[0].Observer {
		t.Errorf("joining %+v", plan.Joining)
	}

	// Several joiners, spaces around them and their '='; ids as Java reads them.
	plan, err = PlanReconfig(oracleMembers, ReconfigArgs{Joining: strPtr(" server.103 = 127.0.0.1:41021:41022:OBSERVER ;  localhost:41023 , server.104=localhost:41031:41032: Observer;[::1]:41033,foo.12=127.0.0.1:41521:41522:observer;41523,13=127.0.0.1:41531:41532:observer;41533,server.014=127.1:41541:41542:observer;41543,server.-5=127.0.0.1:41511:41512:observer;41513")})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range plan.Members {
		lines = append(lines, m.Line())
	}
	wantLines := []string{
		"server.1=127.0.0.1:55607:54773:participant;127.0.0.1:40853",
		"server.2=127.0.0.1:37349:46115:participant;127.0.0.1:55849",
		"server.3=127.0.0.1:35433:35231:participant;127.0.0.1:45947",
		"server.-5=127.0.0.1:41511:41512:observer;0.0.0.0:41513",
		"server.103=127.0.0.1:41021:41022:observer;  localhost:41023",
		"server.104=localhost:41031:41032:observer;[0:0:0:0:0:0:0:1]:41033",
		"server.12=127.0.0.1:41521:41522:observer;0.0.0.0:41523",
		"server.13=127.0.0.1:41531:41532:observer;0.0.0.0:41533",
		"server.14=127.0.0.1:41541:41542:observer;0.0.0.0:41543",
	}
	// The order follows the model of MemberOrder (these joiners were
	// observed one reconfig at a time): a copy of 3 entries has 8 buckets,
	// the 7th entry doubles them; -5 hashes to 4, 103 & 15 = 7, 104 & 15 = 8.
	if !reflect.DeepEqual(lines, wantLines) {
		t.Errorf("members\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
}

func TestMemberOrderIsTheLeadersHashMap(t *testing.T) {
	for _, tc := range []struct {
		prev, leaving, joining, want []int64
	}{
		{[]int64{1, 2, 3}, nil, []int64{100}, []int64{1, 2, 3, 100}},
		{[]int64{1, 2, 3}, nil, []int64{9}, []int64{1, 9, 2, 3}}, // a copy of 3 has 8 buckets
		{[]int64{1, 9, 2, 3}, nil, []int64{17}, []int64{1, 9, 17, 2, 3}},
		{[]int64{1, 9, 17, 2, 3}, []int64{9, 17}, nil, []int64{1, 2, 3}},
		{[]int64{1, 2, 3, 100, 102, 103, 104, 105, 106, 107, 109, 111}, nil, []int64{33, 20},
			[]int64{1, 33, 2, 3, 100, 102, 103, 104, 105, 106, 107, 109, 111, 20}},
		{[]int64{33, 1, 49, 17, 2, 3, 25, 9}, []int64{17}, []int64{41}, []int64{33, 1, 49, 2, 3, 25, 9, 41}},
		{[]int64{33, 1, 49, 2, 3, 25, 9, 41}, nil, []int64{9}, []int64{33, 1, 49, 2, 3, 25, 41, 9}}, // a re-added member moves to its bucket's end
	} {
		if got := MemberOrder(tc.prev, tc.leaving, tc.joining); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("MemberOrder(%v, -%v, +%v) = %v, want %v", tc.prev, tc.leaving, tc.joining, got, tc.want)
		}
	}
	// One reconfig at a time from 1, 2, 3, as the oracleMembers went.
	order := []int64{1, 2, 3}
	for _, id := range []int64{0, -5, 12, 13, 14, 15, 16, 18, 21, 22, 23, 25, 30} {
		order = MemberOrder(order, nil, []int64{id})
	}
	if want := []int64{0, 1, 2, 3, -5, 12, 13, 14, 15, 16, 18, 21, 22, 23, 25, 30}; !reflect.DeepEqual(order, want) {
		t.Errorf("after 13 reconfigs: %v, want %v", order, want)
	}
}

func TestNewMembersOrderIsZooKeepers(t *testing.T) {
	ids := func(members string) []int64 {
		t.Helper()
		plan, err := PlanReconfig(oracleMembers, ReconfigArgs{NewMembers: strPtr(members)})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, m := range plan.Members {
			out = append(out, m.ID)
		}
		return out
	}
	obs := func(id, port int) string {
		return "server." + strconv.Itoa(id) + "=127.0.0.1:" + strconv.Itoa(port) + ":" + strconv.Itoa(port+1) + ":observer;" + strconv.Itoa(port+2)
	}
	base := "server.1=127.0.0.1:47081:35967:participant;127.0.0.1:43939,server.2=127.0.0.1:35453:41553:participant;127.0.0.1:50127,server.3=127.0.0.1:36305:52905:participant;127.0.0.1:43933,"
	got := ids(obs(33, 42001) + "," + base + obs(49, 42011) + "," + obs(17, 42021) + "," + obs(9, 42031) + "," + obs(25, 42041))
	if want := []int64{33, 1, 49, 17, 2, 3, 25, 9}; !reflect.DeepEqual(got, want) {
		t.Errorf("new members order %v, want %v", got, want)
	}
	var more []string
	for i, id := range []int{65, -7, 100000, 4294967297, 20, 36, 4, 52, 68, 84, 5} {
		more = append(more, obs(id, 42071+10*i))
	}
	got = ids(base + strings.Join(more, ","))
	if want := []int64{4294967297, 100000, 65, 1, 2, 3, 36, 68, 4, 5, -7, 52, 20, 84}; !reflect.DeepEqual(got, want) {
		t.Errorf("new members order %v, want %v", got, want)
	}
}

func TestNewMembersAsJavaProperties(t *testing.T) {
	m1 := "server.1=127.0.0.1:55607:54773:participant;127.0.0.1:40853"
	m2 := "server.2=127.0.0.1:37349:46115:participant;127.0.0.1:55849"
	m3 := "server.3=127.0.0.1:35433:35231:participant;127.0.0.1:45947"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"comment, ':' separator, spaces", m1 + "\n" + m2 + "\n" + m3 + "\n# comment\nserver.4 : 127.0.0.1:41801:41802:observer;41803",
			[]string{m1, m2, m3, "server.4=127.0.0.1:41801:41802:observer;0.0.0.0:41803"}},
		{"the last of a repeated key", m1 + "," + m2 + "," + m3 + ",server.4=127.0.0.1:1:2:observer;3,server.4=127.0.0.1:5:6:observer;7",
			[]string{m1, m2, m3, "server.4=127.0.0.1:5:6:observer;0.0.0.0:7"}},
		{"no client address", m1 + "," + m2 + "," + m3 + ",server.5=127.0.0.1:1:2:observer",
			[]string{m1, m2, m3, "server.5=127.0.0.1:1:2:observer"}},
		{"continued line", m1 + "," + m2 + "," + m3 + ",server.4=127.0.0.1:1:2:observer;3\\\n ,server.5=127.0.0.1:8:9:observer;10",
			[]string{m1, m2, m3, "server.4=127.0.0.1:1:2:observer;0.0.0.0:3", "server.5=127.0.0.1:8:9:observer;0.0.0.0:10"}},
		{"an escaped space makes a key that is no server", m1 + "," + m2 + "," + m3 + ",\\ server.4=127.0.0.1:1:2:observer;3",
			[]string{m1, m2, m3}},
	} {
		plan, err := PlanReconfig(oracleMembers, ReconfigArgs{NewMembers: strPtr(tc.text)})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var lines []string
		for _, m := range plan.Members {
			lines = append(lines, m.Line())
		}
		if !reflect.DeepEqual(lines, tc.want) {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func TestMemberFromAddrs(t *testing.T) {
	m := MemberFromAddrs(2, "127.0.0.1:7001", "127.0.0.1:2181", false)
	if got := m.Line(); got != "server.2=127.0.0.1:7001:7001:participant;127.0.0.1:2181" {
		t.Errorf("registered member renders %q", got)
	}
	m = MemberFromAddrs(4, "[::1]:7001", "", true)
	if got := m.Line(); got != "server.4=[0:0:0:0:0:0:0:1]:7001:7001:observer" {
		t.Errorf("registered observer renders %q", got)
	}
}
