package zk

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// This file reads the members of a reconfig request and writes the
// dynamic configuration the way ZooKeeper 3.8 does, checked against a real
// 3-node ensemble (reconfigEnabled=true):
//
//   - A member keeps its whole spec, host:peerPort:electionPort:role;client,
//     normalised as ZooKeeper's QuorumServer.toString renders it: ports as
//     numbers ("+041" is 41), the role always written and lower case, IP
//     literals in Java's canonical form (127.1 is 127.0.0.1, ::1 is
//     [0:0:0:0:0:0:0:1], ::ffff:a.b.c.d is a.b.c.d), "" as localhost,
//     other host names as given (spaces included), a client given as a
//     port alone as 0.0.0.0:port.
//   - Arguments are validated after reconfigEnabled, the session,
//     ReconfigInProgress and BadVersion, and before the quorum
//     (NewConfigNoQuorum) and the ACL (NoAuth): a client without the super
//     ACL gets BadArguments for unparsable members. Java's
//     unchecked exceptions become MarshallingError (an id or leaving id that
//     is not a number, a port out of 0-65535, observers without
//     participants), its ConfigException BadArguments. Every failure is an
//     error transaction that consumes a zxid.
//   - Members are written in the iteration order of the leader's Java
//     HashMap, not by id: with servers 1-3, joining server 10 gives
//     1, 2, 10, 3 (see MemberOrder).

// SpecError is a reconfig argument ZooKeeper rejects: Code is what it
// answers, ErrBadArguments or ErrMarshallingError. Unsupported marks what
// ZooKeeper accepts but zkbridge refuses deliberately (hierarchical quorums;
// a member without an address, which wedges a ZooKeeper ensemble); its
// Code is ErrBadArguments.
type SpecError struct {
	Code        zkproto.ErrCode
	Msg         string
	Unsupported bool
}

func (e *SpecError) Error() string { return e.Msg }

func specBadArgs(format string, a ...any) error {
	return &SpecError{Code: zkproto.ErrBadArguments, Msg: fmt.Sprintf(format, a...)}
}

func specMarshalling(format string, a ...any) error {
	return &SpecError{Code: zkproto.ErrMarshallingError, Msg: fmt.Sprintf(format, a...)}
}

func specUnsupported(format string, a ...any) error {
	return &SpecError{Code: zkproto.ErrBadArguments, Msg: fmt.Sprintf(format, a...), Unsupported: true}
}

// SpecErrorCode is the code ZooKeeper answers for err (ErrBadArguments
// for an error that is not a *SpecError).
func SpecErrorCode(err error) zkproto.ErrCode {
	var se *SpecError
	if errors.As(err, &se) {
		return se.Code
	}
	return zkproto.ErrBadArguments
}

// MemberSpec is one server of a dynamic configuration as ZooKeeper keeps
// it (QuorumServer with its single address; multiple addresses are off by
// default and refused as ZooKeeper refuses them).
type MemberSpec struct {
	ID int64
	// Host is the peer and election host as ZooKeeper renders it, without
	// IPv6 brackets.
	Host         string
	PeerPort     int
	ElectionPort int
	Observer     bool
	// HasClient is false for a member without a client address (possible
	// in a non-incremental reconfig only); then ClientHost is "".
	HasClient  bool
	ClientHost string
	ClientPort int
}

// String is the member's right-hand side of server.N=..., exactly as
// ZooKeeper writes it in /zookeeper/config.
func (m MemberSpec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d", delimitedHost(m.Host), m.PeerPort, m.ElectionPort)
	if m.Observer {
		b.WriteString(":observer")
	} else {
		b.WriteString(":participant")
	}
	if m.HasClient {
		fmt.Fprintf(&b, ";%s:%d", delimitedHost(m.ClientHost), m.ClientPort)
	}
	return b.String()
}

// Line is the member's line of /zookeeper/config, server.N=spec.
func (m MemberSpec) Line() string { return fmt.Sprintf("server.%d=%s", m.ID, m.String()) }

// PeerAddr is the peer (quorum) address, host:port as a Raft address.
func (m MemberSpec) PeerAddr() string {
	return delimitedHost(m.Host) + ":" + strconv.Itoa(m.PeerPort)
}

// ClientAddr is the client address, host:port ("" without one).
func (m MemberSpec) ClientAddr() string {
	if !m.HasClient {
		return ""
	}
	return delimitedHost(m.ClientHost) + ":" + strconv.Itoa(m.ClientPort)
}

// delimitedHost is QuorumServer.delimitedHostString: IPv6 in brackets.
func delimitedHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// MemberFromAddrs describes a replica that registered its own addresses
// (no reconfig spec): zkbridge has one peer port, which stands for the
// election port too, and its client address as registered.
func MemberFromAddrs(id uint64, raftAddr, clientAddr string, observer bool) MemberSpec {
	m := MemberSpec{ID: int64(id), Observer: observer}
	host, port := splitLastColon(raftAddr)
	m.Host, m.PeerPort = javaHostString(host), atoiOr0(port)
	m.ElectionPort = m.PeerPort
	if clientAddr != "" {
		h, p := splitLastColon(clientAddr)
		m.HasClient, m.ClientHost, m.ClientPort = true, javaHostString(h), atoiOr0(p)
	}
	return m
}

func splitLastColon(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, "0"
	}
	host := addr[:i]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return host, addr[i+1:]
}

func atoiOr0(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// ParseMemberSpec parses the right-hand side of server.<id>=<spec> as
// ZooKeeper's QuorumServer(id, spec) does, in its order: the client part,
// then the addresses, the ports (a port that is no number is BadArguments,
// one out of 0-65535 MarshallingError), peer port == election port, the
// role.
func ParseMemberSpec(id int64, spec string) (MemberSpec, error) {
	m := MemberSpec{ID: id}
	const wrong = " does not have the form server_config or server_config;client_config where server_config is the pipe separated list of host:port:port or host:port:port:type and client_config is port or host:port"
	serverClient := javaSplit(spec, ';')
	if len(serverClient) == 0 { // only ";": Java indexes an empty array
		return m, specMarshalling("Index 0 out of bounds for length 0")
	}
	addrs := javaSplit(serverClient[0], '|')
	if len(serverClient) == 2 {
		parts, err := javaHostAndPort(serverClient[1])
		if err != nil {
			return m, err
		}
		if len(parts) == 0 { // only colons: Java indexes an empty array
			return m, specMarshalling("Index -1 out of bounds for length 0")
		}
		if len(parts) > 2 {
			return m, specBadArgs("%s%s", spec, wrong)
		}
		host := "0.0.0.0"
		if len(parts) == 2 {
			host = parts[0]
		}
		port, ok := javaParseInt(parts[len(parts)-1])
		if !ok {
			return m, specBadArgs("Address unresolved: null:%s", parts[len(parts)-1])
		}
		if port < 0 || port > 0xffff {
			return m, specMarshalling("port out of range:%d", port)
		}
		m.HasClient, m.ClientHost, m.ClientPort = true, javaHostString(host), int(port)
	}
	if len(addrs) > 1 {
		return m, specBadArgs("Multiple address feature is disabled, but multiple addresses were specified for sid %d", id)
	}
	if len(addrs) == 0 {
		// Only "|" before any ";": ZooKeeper 3.8 takes a member without an
		// address, and its ensemble stops serving.
		return m, specUnsupported("server.%d=%s has no address (ZooKeeper takes it and stops serving)", id, spec)
	}
	parts, err := javaHostAndPort(addrs[0])
	if err != nil {
		return m, err
	}
	if len(serverClient) > 2 || len(parts) < 3 || len(parts) > 4 {
		return m, specBadArgs("%s%s", spec, wrong)
	}
	host := parts[0]
	peer, ok := javaParseInt(parts[1])
	if !ok {
		return m, specBadArgs("Address unresolved: %s:%s", host, parts[1])
	}
	if peer < 0 || peer > 0xffff {
		return m, specMarshalling("port out of range:%d", peer)
	}
	election, ok := javaParseInt(parts[2])
	if !ok {
		return m, specBadArgs("Address unresolved: %s:%s", host, parts[2])
	}
	if election < 0 || election > 0xffff {
		return m, specMarshalling("port out of range:%d", election)
	}
	if peer == election {
		return m, specBadArgs("Client and election port must be different! Please update the configuration file on server.%d", id)
	}
	if len(parts) == 4 {
		switch strings.ToLower(javaTrim(parts[3])) {
		case "observer":
			m.Observer = true
		case "participant":
		default:
			return m, specBadArgs("Unrecognised peertype: %s", parts[3])
		}
	}
	m.Host, m.PeerPort, m.ElectionPort = javaHostString(host), int(peer), int(election)
	return m, nil
}

// javaHostAndPort is ConfigUtils.getHostAndPort: "[v6]:a:b" or "h:a:b" split
// at colons (Java's split: trailing empty fields dropped). The character
// after "]" is skipped unchecked, as ZooKeeper does.
func javaHostAndPort(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return javaSplit(s, ':'), nil
	}
	i := strings.IndexByte(s, ']')
	if i < 0 {
		return nil, specBadArgs("%s starts with '[' but has no matching ']:'", s)
	}
	if i+2 == len(s) {
		return nil, specBadArgs("%s doesn't have a port after colon", s)
	}
	if i+2 < len(s) {
		return append([]string{s[1:i]}, javaSplit(s[i+2:], ':')...), nil
	}
	return []string{strings.NewReplacer("[", "", "]", "").Replace(s)}, nil
}

// javaSplit is Java's String.split with a one-character literal pattern:
// trailing empty strings are dropped (all of them for a string of only
// separators), a string without the separator is itself.
func javaSplit(s string, sep byte) []string {
	if strings.IndexByte(s, sep) < 0 {
		return []string{s}
	}
	parts := strings.Split(s, string(sep))
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// stringUtilsSplit is ZooKeeper's StringUtils.split: Java's split, each
// part trimmed, empty parts dropped.
func stringUtilsSplit(s string, sep byte) []string {
	var out []string
	for _, p := range javaSplit(s, sep) {
		if p = javaTrim(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// javaTrim is String.trim: every character up to U+0020 off both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// javaParseInt is Integer.parseInt (ASCII digits; Java also takes other
// Unicode decimal digits, which no configuration uses).
func javaParseInt(s string) (int64, bool) {
	v, ok := javaParseLong(s, 10)
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return 0, false
	}
	return v, true
}

// javaParseLong is Long.parseLong(s, radix) for radix 10 or 16: an
// optional sign, then at least one digit, within int64.
func javaParseLong(s string, radix int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	digits := s
	if s[0] == '+' || s[0] == '-' {
		digits = s[1:]
	}
	if digits == "" {
		return 0, false
	}
	for _, c := range digits {
		if radix == 10 && (c < '0' || c > '9') {
			return 0, false
		}
		if radix == 16 && !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, radix, 64)
	return v, err == nil
}

// javaHostString is InetSocketAddress(host, port).getHostString(): an IP
// literal in Java's canonical form, "" as localhost (Java resolves the
// empty name to the loopback address), any other name as given.
func javaHostString(host string) string {
	if host == "" {
		return "localhost"
	}
	if ip, ok := javaLiteral(host); ok {
		if ip.Is4() {
			return ip.String()
		}
		b := ip.As16()
		g := make([]string, 8)
		for i := range g {
			g[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
		}
		return strings.Join(g, ":")
	}
	return host
}

// javaLiteral reports whether Java's InetAddress takes host as an IP
// literal (no name lookup): IPv4 in any of inet_aton's decimal forms
// (a.b.c.d, a.b.c, a.b, a; at most 15 characters), or IPv6 (an IPv4-mapped
// one becomes IPv4). Zone ids are not modelled: such a host stays a name.
func javaLiteral(host string) (netip.Addr, bool) {
	if host == "" || !(strings.ContainsRune("0123456789abcdefABCDEF:", rune(host[0]))) {
		return netip.Addr{}, false
	}
	if b, ok := javaIPv4(host); ok {
		return netip.AddrFrom4(b), true
	}
	if strings.Contains(host, "%") {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// javaIPv4 is IPAddressUtil.textToNumericFormatV4 (JDK 17).
func javaIPv4(s string) ([4]byte, bool) {
	var res [4]byte
	if len(s) == 0 || len(s) > 15 {
		return res, false
	}
	var v int64
	cur, fresh := 0, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if fresh || v > 0xff || cur == 3 {
				return res, false
			}
			res[cur] = byte(v)
			cur++
			v, fresh = 0, true
			continue
		}
		if c < '0' || c > '9' {
			return res, false
		}
		v = v*10 + int64(c-'0')
		fresh = false
	}
	if fresh || v >= 1<<((4-cur)*8) {
		return res, false
	}
	for i := cur; i < 4; i++ {
		res[i] = byte(v >> ((3 - i) * 8))
	}
	return res, true
}

// ReconfigArgs are a reconfig request's member arguments. nil is a null
// string on the wire: ZooKeeper tells null from "" (newMembers "" is a
// non-incremental reconfig to no members, BadArguments).
type ReconfigArgs struct {
	Joining, Leaving, NewMembers *string
}

// ReconfigPlan is the configuration a reconfig asks for, once its
// arguments passed ZooKeeper's checks.
type ReconfigPlan struct {
	// Incremental is false for newMembers (the whole new configuration).
	Incremental bool
	// Members is the next configuration in the order ZooKeeper writes it.
	Members []MemberSpec
	// Joining (in request order) and Leaving are the incremental
	// arguments as parsed; a leaving id need not be a member.
	Joining []MemberSpec
	Leaving []int64
}

// PlanReconfig checks a reconfig's member arguments against the current
// configuration (current, in the order /zookeeper/config lists it) as
// ZooKeeper's PrepRequestProcessor does, up to and including its check
// that at least 2 participants remain, and returns the next configuration.
// The caller checks ReconfigInProgress and BadVersion before, the quorum
// (NewConfigNoQuorum) and then the ACL (NoAuth) after, as ZooKeeper does.
// Every error is a *SpecError.
//
// Duplicate addresses (a joiner's address already used by another member)
// are found among IP literals only: ZooKeeper also resolves host names.
func PlanReconfig(current []MemberSpec, args ReconfigArgs) (*ReconfigPlan, error) {
	var plan *ReconfigPlan
	var err error
	if args.NewMembers != nil {
		plan, err = planNewMembers(*args.NewMembers)
	} else {
		plan, err = planIncremental(current, args)
	}
	if err != nil {
		return nil, err
	}
	voting := 0
	for _, m := range plan.Members {
		if !m.Observer {
			voting++
		}
	}
	if voting < 2 {
		return nil, specBadArgs("Reconfig failed - new configuration must include at least 2 followers")
	}
	return plan, nil
}

func planIncremental(current []MemberSpec, args ReconfigArgs) (*ReconfigPlan, error) {
	plan := &ReconfigPlan{Incremental: true}
	var joiners, leavers []string
	if args.Joining != nil {
		joiners = stringUtilsSplit(*args.Joining, ',')
	}
	if args.Leaving != nil {
		leavers = stringUtilsSplit(*args.Leaving, ',')
	}
	next := newJavaHashMap(len(current))
	byID := map[int64]MemberSpec{}
	for _, m := range current {
		next.put(m.ID)
		byID[m.ID] = m
	}
	for _, l := range leavers {
		id, ok := javaParseLong(l, 10)
		if !ok {
			return nil, specMarshalling("For input string: %q", l)
		}
		plan.Leaving = append(plan.Leaving, id)
		next.remove(id)
		delete(byID, id)
	}
	for _, j := range joiners {
		parts := stringUtilsSplit(j, '=')
		if len(parts) != 2 {
			return nil, specBadArgs("Wrong format of server string")
		}
		idText := parts[0][strings.LastIndexByte(parts[0], '.')+1:]
		id, ok := javaParseLong(idText, 10)
		if !ok {
			return nil, specMarshalling("For input string: %q", idText)
		}
		m, err := ParseMemberSpec(id, parts[1])
		if err != nil {
			var se *SpecError
			if errors.As(err, &se) && se.Code == zkproto.ErrBadArguments && !se.Unsupported {
				return nil, specBadArgs("Reconfiguration failed")
			}
			return nil, err
		}
		if !m.HasClient {
			return nil, specBadArgs("Wrong format of server string - each server should have 3 ports specified")
		}
		for _, id := range next.keys() {
			if id != m.ID {
				if err := checkAddressDuplicate(m, byID[id]); err != nil {
					return nil, err
				}
			}
		}
		next.remove(m.ID)
		next.put(m.ID)
		byID[m.ID] = m
		plan.Joining = append(plan.Joining, m)
	}
	for _, id := range next.keys() {
		plan.Members = append(plan.Members, byID[id])
	}
	return plan, nil
}

// checkAddressDuplicate is QuorumServer.checkAddressDuplicate for IP
// literals: an address of m (peer, election, client) equal to one of
// other's, wildcard and loopback addresses excepted.
func checkAddressDuplicate(m, other MemberSpec) error {
	type addr struct {
		ip   netip.Addr
		port int
	}
	list := func(s MemberSpec) []addr {
		var out []addr
		add := func(host string, port int) {
			ip, ok := javaLiteral(host)
			if ok && !ip.IsUnspecified() && !ip.IsLoopback() {
				out = append(out, addr{ip, port})
			}
		}
		add(s.Host, s.PeerPort)
		if s.HasClient {
			add(s.ClientHost, s.ClientPort)
		}
		add(s.Host, s.ElectionPort)
		return out
	}
	for _, a := range list(m) {
		for _, b := range list(other) {
			if a == b {
				return specBadArgs("%s:%d of server.%d conflicts %s:%d of server.%d", a.ip, a.port, m.ID, b.ip, b.port, other.ID)
			}
		}
	}
	return nil
}

func planNewMembers(text string) (*ReconfigPlan, error) {
	props, err := loadProperties(strings.ReplaceAll(text, ",", "\n"))
	if err != nil {
		return nil, err
	}
	order := props.order()
	hierarchical := false
	for _, k := range order {
		key := javaTrim(k)
		switch {
		case strings.HasPrefix(key, "group"), strings.HasPrefix(key, "weight"):
			hierarchical = true
		case !strings.HasPrefix(key, "server.") && key != "version":
			return nil, specBadArgs("Unrecognised parameter: %s", key)
		}
	}
	if hierarchical {
		return nil, specUnsupported("hierarchical quorums (group, weight) are not supported")
	}
	members := newJavaHashMap(0)
	byID := map[int64]MemberSpec{}
	for _, k := range order {
		v := props.values[k]
		if strings.HasPrefix(k, "server.") {
			idText := k[strings.IndexByte(k, '.')+1:]
			id, ok := javaParseLong(idText, 10)
			if !ok {
				return nil, specMarshalling("For input string: %q", idText)
			}
			m, err := ParseMemberSpec(id, v)
			if err != nil {
				return nil, err
			}
			members.put(id)
			byID[id] = m
		} else if k == "version" {
			if _, ok := javaParseLong(v, 16); !ok {
				return nil, specMarshalling("For input string: %q under radix 16", v)
			}
		}
	}
	plan := &ReconfigPlan{}
	participants, observers := 0, 0
	for _, id := range members.keys() {
		m := byID[id]
		plan.Members = append(plan.Members, m)
		if m.Observer {
			observers++
		} else {
			participants++
		}
	}
	// QuorumPeerConfig.parseDynamicConfig with standaloneEnabled (the
	// default) throws IllegalArgumentException for observers without a
	// quorum, which the leader answers with MarshallingError.
	if observers > 0 && participants <= 1 {
		return nil, specMarshalling("Observers w/o quorum is an invalid configuration")
	}
	return plan, nil
}

// RenderDynamicConfig writes a configuration as ZooKeeper's
// QuorumMaj.toString: one line per member in the given order, then
// version=<hex>.
func RenderDynamicConfig(members []MemberSpec, version int64) string {
	var b strings.Builder
	for _, m := range members {
		b.WriteString(m.Line())
		b.WriteByte('\n')
	}
	b.WriteString("version=" + strconv.FormatUint(uint64(version), 16))
	return b.String()
}

// MemberOrder is the order in which the leader of a ZooKeeper ensemble
// writes the configuration after an incremental reconfig: a copy of the
// current members' Java HashMap (prev, in the order it renders them, which
// is that map's iteration order), leaving ids removed, then each joining id
// removed and put again. A HashMap iterates by bucket (the id's hash masked
// by the table size, which the copy sizes for the current count and which
// doubles past 3/4 full), and within a bucket in insertion order. Exact for
// a leader that made the previous configuration itself; a leader elected
// since re-read it and may order ids that share a bucket differently.
func MemberOrder(prev, leaving, joining []int64) []int64 {
	m := newJavaHashMap(len(prev))
	for _, id := range prev {
		m.put(id)
	}
	for _, id := range leaving {
		m.remove(id)
	}
	for _, id := range joining {
		m.remove(id)
		m.put(id)
	}
	return m.keys()
}

// javaHashMap models the iteration order of a java.util.HashMap<Long, _>:
// buckets of keys in insertion order. Tree bins (9 or more keys in one
// bucket of a table of 64 or more) are not modelled.
type javaHashMap struct {
	buckets [][]int64
	size    int
}

// newJavaHashMap is new HashMap<>(m) for an m of n entries (the table is
// sized for them: tableSizeFor(n/0.75+1)); n == 0 leaves 16 buckets.
func newJavaHashMap(n int) *javaHashMap {
	c := 16
	if n > 0 {
		c = javaTableSizeFor(int(float32(n)/0.75 + 1))
	}
	return &javaHashMap{buckets: make([][]int64, c)}
}

func javaTableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// javaLongHash is HashMap.hash(Long.valueOf(v)).
func javaLongHash(v int64) uint32 {
	h := uint32(uint64(v) ^ uint64(v)>>32)
	return h ^ h>>16
}

func (m *javaHashMap) index(id int64) int { return int(javaLongHash(id) & uint32(len(m.buckets)-1)) }

func (m *javaHashMap) put(id int64) {
	b := m.buckets[m.index(id)]
	for _, k := range b {
		if k == id {
			return // a value replaced in place
		}
	}
	i := m.index(id)
	m.buckets[i] = append(b, id)
	if len(m.buckets[i]) >= 9 && len(m.buckets) < 64 { // treeifyBin resizes instead
		m.resize()
	}
	m.size++
	if m.size > len(m.buckets)*3/4 {
		m.resize()
	}
}

func (m *javaHashMap) remove(id int64) {
	i := m.index(id)
	for j, k := range m.buckets[i] {
		if k == id {
			m.buckets[i] = append(m.buckets[i][:j:j], m.buckets[i][j+1:]...)
			m.size--
			return
		}
	}
}

// resize doubles the table; each bucket splits in two, keeping order.
func (m *javaHashMap) resize() {
	old := m.buckets
	m.buckets = make([][]int64, 2*len(old))
	for _, b := range old {
		for _, k := range b {
			i := m.index(k)
			m.buckets[i] = append(m.buckets[i], k)
		}
	}
}

func (m *javaHashMap) keys() []int64 {
	var out []int64
	for _, b := range m.buckets {
		out = append(out, b...)
	}
	return out
}

// javaProperties is a java.util.Properties as load fills it: its values and
// its ConcurrentHashMap's iteration order.
type javaProperties struct {
	values map[string]string
	table  [][]string // ConcurrentHashMap bins of keys
	count  int
}

func (p *javaProperties) put(k, v string) {
	if _, ok := p.values[k]; ok {
		p.values[k] = v // replaced in place
		return
	}
	p.values[k] = v
	h := chmSpread(k)
	i := h & uint32(len(p.table)-1)
	existing := len(p.table[i])
	p.table[i] = append(p.table[i], k)
	if existing >= 8 && len(p.table) < 64 { // treeifyBin: tryPresize(n << 1)
		n := len(p.table) << 1
		c := javaTableSizeFor(n + n>>1 + 1)
		for c > len(p.table)*3/4 {
			p.transfer()
		}
	}
	p.count++
	for p.count >= len(p.table)*3/4 {
		p.transfer()
	}
}

// chmSpread is ConcurrentHashMap.spread(key.hashCode()).
func chmSpread(k string) uint32 {
	h := uint32(sm.JavaStringHash(k))
	return (h ^ h>>16) & 0x7fffffff
}

// transfer is ConcurrentHashMap.transfer on one thread: each bin splits by
// the new bit; the longest tail whose keys all go the same way keeps its
// order, the keys before it are pushed on the front of their new bin one
// by one (so they end up reversed).
func (p *javaProperties) transfer() {
	n := len(p.table)
	next := make([][]string, 2*n)
	for i, bin := range p.table {
		if len(bin) == 0 {
			continue
		}
		bit := func(k string) bool { return chmSpread(k)&uint32(n) != 0 }
		last := len(bin) - 1
		for last > 0 && bit(bin[last-1]) == bit(bin[len(bin)-1]) {
			last--
		}
		var lo, hi []string
		if bit(bin[last]) {
			hi = append(hi, bin[last:]...)
		} else {
			lo = append(lo, bin[last:]...)
		}
		for _, k := range bin[:last] {
			if bit(k) {
				hi = append([]string{k}, hi...)
			} else {
				lo = append([]string{k}, lo...)
			}
		}
		next[i], next[i+n] = lo, hi
	}
	p.table = next
}

func (p *javaProperties) order() []string {
	var out []string
	for _, bin := range p.table {
		out = append(out, bin...)
	}
	return out
}

// loadProperties is Properties.load over text: logical lines (a line
// ending in an odd number of backslashes continues), comments (#, ! first),
// key up to an unescaped '=', ':' or white space, escapes (\uXXXX, \t, \n,
// \r, \f, \x as x). A malformed \u escape is Java's
// IllegalArgumentException, MarshallingError for the leader.
func loadProperties(text string) (*javaProperties, error) {
	p := &javaProperties{values: map[string]string{}, table: make([][]string, 16)}
	lines := javaNaturalLines(text)
	isWS := func(c rune) bool { return c == ' ' || c == '\t' || c == '\f' }
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeftFunc(lines[i], isWS)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for endsInOddBackslashes(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeftFunc(lines[i], isWS)
		}
		if endsInOddBackslashes(line) {
			line = line[:len(line)-1]
		}
		r := []rune(line)
		keyLen, valueStart, hasSep, escaped := 0, len(r), false, false
		for keyLen < len(r) {
			c := r[keyLen]
			if (c == '=' || c == ':') && !escaped {
				valueStart, hasSep = keyLen+1, true
				break
			}
			if isWS(c) && !escaped {
				valueStart = keyLen + 1
				break
			}
			escaped = c == '\\' && !escaped
			keyLen++
		}
		for valueStart < len(r) {
			c := r[valueStart]
			if !isWS(c) {
				if !hasSep && (c == '=' || c == ':') {
					hasSep = true
				} else {
					break
				}
			}
			valueStart++
		}
		key, err := loadConvert(r[:keyLen])
		if err != nil {
			return nil, err
		}
		value, err := loadConvert(r[min(valueStart, len(r)):])
		if err != nil {
			return nil, err
		}
		p.put(key, value)
	}
	return p, nil
}

// javaNaturalLines splits at \n, \r or \r\n, keeping empty lines (an empty
// line ends a continued one).
func javaNaturalLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
}

func endsInOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func loadConvert(r []rune) (string, error) {
	var out []uint16
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c != '\\' || i+1 >= len(r) {
			out = append(out, utf16.Encode([]rune{c})...)
			continue
		}
		i++
		switch c = r[i]; c {
		case 'u':
			if i+4 >= len(r) {
				return "", specMarshalling("Malformed \\uxxxx encoding.")
			}
			v, err := strconv.ParseUint(string(r[i+1:i+5]), 16, 16)
			if err != nil {
				return "", specMarshalling("Malformed \\uxxxx encoding.")
			}
			out = append(out, uint16(v))
			i += 4
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'n':
			out = append(out, '\n')
		case 'f':
			out = append(out, '\f')
		default:
			out = append(out, utf16.Encode([]rune{c})...)
		}
	}
	return string(utf16.Decode(out)), nil
}
