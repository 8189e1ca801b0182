package shell

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

// command is one shell command: zkCli's usage text and its action.
type command struct {
	usage string
	run   func(s *Shell, words []string) error
	// extra marks zkbridge's own commands (not in zkCli's usage listing).
	extra bool
	// help is the one-line description the help command prints.
	help string
}

// commandTable holds every command; filled in init (the actions refer to it).
var commandTable map[string]command

// Version is what the version command reports (set by the CLI).
var Version = "dev"

// maxTTL is the largest TTL ZooKeeper accepts (EphemeralType.TTL.maxValue).
const maxTTL = 0xFFFFFFFFFF

func init() {
	commandTable = map[string]command{
		"connect":              {usage: "host:port", help: "connect to another server (list); closes the current session"},
		"history":              {usage: "", help: "list the last 10 commands"},
		"redo":                 {usage: "cmdno", help: "run command cmdno of the history again"},
		"printwatches":         {usage: "on|off", help: "print watch events (on) or not"},
		"quit":                 {usage: "", help: "close the session and leave"},
		"close":                {usage: "", run: cmdClose, help: "close the session"},
		"create":               {usage: "[-s] [-e] [-c] [-t ttl] path [data] [acl]", run: cmdCreate, help: "create a znode"},
		"delete":               {usage: "[-v version] path", run: cmdDelete, help: "delete a znode"},
		"deleteall":            {usage: "path [-b batch size]", run: cmdDeleteAll, help: "delete a subtree"},
		"set":                  {usage: "[-s] [-v version] path data", run: cmdSet, help: "set a znode's data"},
		"get":                  {usage: "[-s] [-w] path", run: cmdGet, help: "print a znode's data (--format raw|hex|base64, --json)"},
		"ls":                   {usage: "[-s] [-w] [-R] path", run: cmdLs, help: "list children (--json)"},
		"getAcl":               {usage: "[-s] path", run: cmdGetAcl, help: "print a znode's ACL (--json)"},
		"setAcl":               {usage: "[-s] [-v version] [-R] path acl", run: cmdSetAcl, help: "set a znode's ACL"},
		"stat":                 {usage: "[-w] path", run: cmdStat, help: "print a znode's stat (--json)"},
		"sync":                 {usage: "path", run: cmdSync, help: "make the server catch up with the leader"},
		"setquota":             {usage: "-n|-b|-N|-B val path", run: cmdSetQuota, help: "set a quota"},
		"listquota":            {usage: "path", run: cmdListQuota, help: "print a quota and its usage (--json)"},
		"delquota":             {usage: "[-n|-b|-N|-B] path", run: cmdDelQuota, help: "delete a quota"},
		"addauth":              {usage: "scheme auth", run: cmdAddAuth, help: "add an identity to the session"},
		"reconfig":             {usage: "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]", run: cmdReconfig, help: "change the ensemble's membership"},
		"config":               {usage: "[-c] [-w] [-s]", run: cmdConfig, help: "print the ensemble's config"},
		"removewatches":        {usage: "path [-c|-d|-a] [-l]", run: cmdRemoveWatches, help: "remove the session's watches on a path"},
		"getEphemerals":        {usage: "path", run: cmdGetEphemerals, help: "list the session's ephemerals (--json)"},
		"getAllChildrenNumber": {usage: "path", run: cmdGetAllChildrenNumber, help: "count the znodes below a path (--json)"},
		"version":              {usage: "", run: cmdVersion, help: "print the shell's version"},
		"addWatch":             {usage: "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", run: cmdAddWatch, help: "set a persistent watch"},
		"whoami":               {usage: "", run: cmdWhoAmI, help: "list the session's identities (--json)"},
	}
	for name, c := range extraCommands() {
		c.extra = true
		commandTable[name] = c
	}
}

// parse parses words with specs; a parse failure is zkCli's message.
func parse(words []string, specs ...optSpec) (*parsed, error) {
	p, err := parseOptions(words, specs)
	if err != nil {
		return nil, errorf("%s", err.Error())
	}
	return p, nil
}

func usageError(name string) error {
	return errorf("%s %s", name, commandTable[name].usage)
}

// retainCompatibility is zkCli's handling of the pre-3.5 forms "get path
// watch", "ls path watch", "stat path watch": the third word becomes -w.
func retainCompatibility(s *Shell, words []string, p *parsed, form string, specs ...optSpec) (*parsed, error) {
	if len(p.args) <= 2 {
		return p, nil
	}
	s.stderr("'%s path [watch]' has been deprecated. Please use '%s' instead.\n", form, map[string]string{
		"get": "get [-s] [-w] path", "ls": "ls [-w] path", "stat": "stat [-w] path"}[form])
	w := slices.Clone(words)
	w[2] = "-w"
	return parse(w, specs...)
}

func parseVersion(p *parsed, name string) (int32, error) {
	v, ok := p.opts[name]
	if !ok {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, errorf("java.lang.NumberFormatException: For input string: \"%s\"", v)
	}
	return int32(n), nil
}

func cmdClose(s *Shell, _ []string) error {
	return wrap(s.zk.Close())
}

func cmdCreate(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"e", false}, optSpec{"s", false}, optSpec{"c", false}, optSpec{"t", true})
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("create")
	}
	hasE, hasS, hasC, hasT := p.has("e"), p.has("s"), p.has("c"), p.has("t")
	if hasC && (hasE || hasS) {
		return errorf("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if hasT {
		if ttl, err = strconv.ParseInt(p.opts["t"], 10, 64); err != nil {
			return errorf("-t argument must be a long value")
		}
	}
	if hasT && hasE {
		return errorf("TTLs cannot be used with Ephemeral znodes")
	}
	if hasT && hasC {
		return errorf("TTLs cannot be used with Container znodes")
	}
	mode := zkproto.ModePersistent
	switch {
	case hasE && hasS:
		mode = zkproto.ModeEphemeralSequential
	case hasE:
		mode = zkproto.ModeEphemeral
	case hasS && hasT:
		mode = zkproto.ModePersistentSequentialWithTTL
	case hasS:
		mode = zkproto.ModePersistentSequential
	case hasC:
		mode = zkproto.ModeContainer
	case hasT:
		mode = zkproto.ModePersistentWithTTL
	}
	if hasT && (ttl > maxTTL || ttl <= 0) {
		return errorf("ttl must be positive and cannot be larger than: %d", int64(maxTTL))
	}
	path := p.args[1]
	var data []byte
	if len(p.args) > 2 {
		data = []byte(p.args[2])
	}
	acl := zkproto.OpenACLUnsafe()
	if len(p.args) > 3 {
		acl = parseACL(p.args[3], s.err)
	}
	created, _, err := s.zk.Create(path, data, acl, mode, ttl)
	if err != nil {
		switch zkclient.Code(err) {
		case zkproto.ErrEphemeralOnLocalSession:
			s.stderr("Unable to create ephemeral node on a local session\n")
		case zkproto.ErrInvalidACL:
			s.stderr("%s\n", err.Error())
		}
		return wrap(err)
	}
	s.stderr("Created %s\n", created)
	return nil
}

func cmdDelete(s *Shell, words []string) error {
	specs := []optSpec{{"v", true}}
	p, err := parse(words, specs...)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("delete")
	}
	if len(p.args) > 2 {
		s.stderr("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.\n")
	}
	version, err := parseVersion(p, "v")
	if err != nil {
		return err
	}
	return wrap(s.zk.Delete(p.args[1], version))
}

func cmdDeleteAll(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"b", true})
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("deleteall")
	}
	batch := 1000
	if v, ok := p.opts["b"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return errorf("-b argument must be an int value")
		}
		batch = int(n)
	}
	path := p.args[1]
	if err := zkclient.ValidatePath(path); err != nil {
		return wrap(err)
	}
	tree, err := listSubTreeBFS(s.zk, path)
	if err != nil {
		return wrap(err)
	}
	// Deepest first, in multis of batch deletes (ZKUtil.deleteRecursive).
	ok := true
	var ops []zkproto.MultiOp
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, zkproto.MultiOp{Type: zkproto.OpDelete, Request: &zkproto.DeleteRequest{Path: tree[i], Version: -1}})
		if len(ops) == batch || i == 0 {
			if _, err := s.zk.Multi(ops); err != nil {
				ok = false
				break
			}
			ops = nil
		}
	}
	if !ok {
		s.stderr("Failed to delete some node(s) in the subtree!\n")
	}
	return nil
}

// listSubTreeBFS lists root and every node below it, breadth first (ZKUtil.listSubTreeBFS).
func listSubTreeBFS(zk *zkclient.Client, root string) ([]string, error) {
	tree := []string{root}
	for i := 0; i < len(tree); i++ {
		node := tree[i]
		children, _, err := zk.Children(node, false)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			tree = append(tree, joinPath(node, c))
		}
	}
	return tree, nil
}

func joinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

func cmdSet(s *Shell, words []string) error {
	// -b: the data is base64 (zkCli 3.9), for binary values.
	p, err := parse(words, optSpec{"s", false}, optSpec{"v", true}, optSpec{"b", false})
	if err != nil {
		return err
	}
	if len(p.args) < 3 {
		return usageError("set")
	}
	version, err := parseVersion(p, "v")
	if err != nil {
		return err
	}
	data := []byte(p.args[2])
	if p.has("b") {
		if data, err = base64.StdEncoding.DecodeString(p.args[2]); err != nil {
			return errorf("java.lang.IllegalArgumentException: %v", err)
		}
	}
	st, err := s.zk.Set(p.args[1], data, version)
	if err != nil {
		return wrap(err)
	}
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

func (s *Shell) printStat(st zkproto.Stat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	printStat(s.out, st)
}

func cmdGet(s *Shell, words []string) error {
	// -b and -x are zkCli 3.9's base64 and hex dump output.
	specs := []optSpec{{"s", false}, {"w", false}, {"b", false}, {"x", false}}
	words, asJSON := takeFlag(words, "--json")
	words, format, err := takeValue(words, "--format", formatAuto)
	if err != nil {
		return err
	}
	if !slices.Contains([]string{formatAuto, formatRaw, formatHex, formatBase64}, format) {
		return errorf("--format %s: want raw, hex or base64", format)
	}
	p, err := parse(words, specs...)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("get")
	}
	if p, err = retainCompatibility(s, words, p, "get", specs...); err != nil {
		return err
	}
	data, st, err := s.zk.Get(p.args[1], p.has("w"))
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(nodeJSON(p.args[1], data, &st))
	}
	if p.has("b") {
		s.stdout("%s\n", formatData(data, formatBase64))
	} else if p.has("x") {
		s.stdout("%s\n", prettyHexDump(data))
	} else if format == formatAuto && data != nil && !printable(data) {
		// Binary data: zkCli would print mojibake; a hex dump reads better.
		s.stdout("%s\n", formatData(data, formatAuto))
	} else if format == formatAuto {
		s.stdout("%s\n", javaString(orNull(data)))
	} else {
		s.stdout("%s\n", formatData(data, format))
	}
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// takeFlag removes every occurrence of flag from words.
func takeFlag(words []string, flag string) ([]string, bool) {
	out := words[:0:0]
	found := false
	for _, w := range words {
		if w == flag {
			found = true
			continue
		}
		out = append(out, w)
	}
	return out, found
}

// takeValue removes "flag value" or "flag=value" from words.
func takeValue(words []string, flag, def string) ([]string, string, error) {
	out := words[:0:0]
	value := def
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == flag:
			if i+1 >= len(words) {
				return nil, "", errorf("%s needs a value", flag)
			}
			value = words[i+1]
			i++
		case strings.HasPrefix(w, flag+"="):
			value = strings.TrimPrefix(w, flag+"=")
		default:
			out = append(out, w)
		}
	}
	return out, value, nil
}

func cmdLs(s *Shell, words []string) error {
	specs := []optSpec{{"?", false}, {"s", false}, {"w", false}, {"R", false}}
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words, specs...)
	if err != nil {
		return err
	}
	if p.has("?") {
		s.stdout("usage: ls [options] path\n -?   help\n -R   recurse\n -s   stat\n -w   watch\n")
	}
	if p, err = retainCompatibility(s, words, p, "ls", specs...); err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("ls")
	}
	path, watch := p.args[1], p.has("w")
	if p.has("R") {
		var all []string
		err := visitSubTreeDFS(s.zk, path, watch, func(p string) {
			if asJSON {
				all = append(all, p)
			} else {
				s.stdout("%s\n", p)
			}
		})
		if err != nil {
			return wrap(err)
		}
		if asJSON {
			return s.printJSON(map[string]any{"path": path, "nodes": nonNil(all)})
		}
		return nil
	}
	children, st, err := s.zk.Children(path, watch)
	if err != nil {
		return wrap(err)
	}
	slices.Sort(children)
	if asJSON {
		v := map[string]any{"path": path, "children": nonNil(children)}
		if p.has("s") {
			v["stat"] = toStatJSON(st)
		}
		return s.printJSON(v)
	}
	s.stdout("[%s]\n", strings.Join(children, ", "))
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// visitSubTreeDFS is ZKUtil.visitSubTreeDFS: the root (which must exist),
// then each node's sorted children, then their subtrees; nodes deleted
// meanwhile are skipped.
func visitSubTreeDFS(zk *zkclient.Client, path string, watch bool, visit func(string)) error {
	if err := zkclient.ValidatePath(path); err != nil {
		return err
	}
	if _, _, err := zk.Get(path, watch); err != nil {
		return err
	}
	visit(path)
	var helper func(string) error
	helper = func(path string) error {
		children, _, err := zk.Children(path, watch)
		if zkclient.Code(err) == zkproto.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(children)
		for _, c := range children {
			visit(joinPath(path, c))
		}
		for _, c := range children {
			if err := helper(joinPath(path, c)); err != nil {
				return err
			}
		}
		return nil
	}
	return helper(path)
}

func cmdGetAcl(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words, optSpec{"s", false})
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("getAcl")
	}
	acl, st, err := s.zk.GetACL(p.args[1])
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		type entry struct {
			Scheme string `json:"scheme"`
			ID     string `json:"id"`
			Perms  string `json:"perms"`
		}
		entries := []entry{}
		for _, a := range acl {
			entries = append(entries, entry{a.ID.Scheme, a.ID.ID, zkproto.PermString(a.Perms)})
		}
		v := map[string]any{"path": p.args[1], "acl": entries}
		if p.has("s") {
			v["stat"] = toStatJSON(st)
		}
		return s.printJSON(v)
	}
	s.mu.Lock()
	printACL(s.out, acl)
	s.mu.Unlock()
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

func cmdSetAcl(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"s", false}, optSpec{"v", true}, optSpec{"R", false})
	if err != nil {
		return err
	}
	if len(p.args) < 3 {
		return usageError("setAcl")
	}
	path := p.args[1]
	acl := parseACL(p.args[2], s.err)
	version, err := parseVersion(p, "v")
	if err != nil {
		return err
	}
	if p.has("R") {
		return wrap(visitSubTreeDFS(s.zk, path, false, func(node string) {
			if _, err := s.zk.SetACL(node, acl, version); err != nil {
				s.stdout("%s", err.Error()) // zkCli prints these without a newline
			}
		}))
	}
	st, err := s.zk.SetACL(path, acl, version)
	if err != nil {
		return wrap(err)
	}
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

func cmdStat(s *Shell, words []string) error {
	specs := []optSpec{{"w", false}}
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words, specs...)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("stat")
	}
	if p, err = retainCompatibility(s, words, p, "stat", specs...); err != nil {
		return err
	}
	st, err := s.zk.Exists(p.args[1], p.has("w"))
	if err != nil {
		return wrap(err)
	}
	if st == nil {
		return wrap(&zkclient.Error{Code: zkproto.ErrNoNode, Path: p.args[1]})
	}
	if asJSON {
		return s.printJSON(map[string]any{"path": p.args[1], "stat": toStatJSON(*st)})
	}
	s.printStat(*st)
	return nil
}

func cmdSync(s *Shell, words []string) error {
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("sync")
	}
	err = s.zk.Sync(p.args[1])
	if zkclient.IsPathError(err) {
		return wrap(err)
	}
	if code := zkclient.Code(err); code != zkproto.ErrOK {
		s.stdout("Sync has failed. rc=%d\n", int32(code))
		return nil
	}
	s.stdout("Sync is OK\n")
	return nil
}

func cmdAddAuth(s *Shell, words []string) error {
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("addauth")
	}
	var auth []byte
	if len(p.args) >= 3 {
		auth = []byte(p.args[2])
	}
	return wrap(s.zk.AddAuth(p.args[1], auth))
}

func cmdReconfig(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"s", false}, optSpec{"v", true}, optSpec{"file", true}, optSpec{"members", true},
		optSpec{"add", true}, optSpec{"remove", true})
	if err != nil {
		return err
	}
	nonIncremental := p.has("file") || p.has("members")
	if !nonIncremental && !p.has("add") && !p.has("remove") {
		return usageError("reconfig")
	}
	version := int64(-1)
	if v, ok := p.opts["v"]; ok {
		u, err := strconv.ParseUint(v, 16, 64)
		if err != nil {
			return errorf("-v must be followed by a long (configuration version)")
		}
		version = int64(u)
	}
	if nonIncremental && (p.has("add") || p.has("remove")) {
		return errorf("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)")
	}
	if p.has("file") && p.has("members") {
		return errorf("Can't use -file and -members together (conflicting non-incremental modes)")
	}
	joining, leaving, members := strings.ToLower(p.opts["add"]), strings.ToLower(p.opts["remove"]), strings.ToLower(p.opts["members"])
	if f, ok := p.opts["file"]; ok {
		if members, err = membersFromFile(f); err != nil {
			return errorf("Error processing %s%s", f, err.Error())
		}
	}
	cfg, st, err := s.zk.Reconfig(joining, leaving, members, version)
	if err != nil {
		return wrap(err)
	}
	s.stdout("Committed new configuration:\n%s\n", cfg)
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

// membersFromFile reads the server.N lines of a dynamic config file as a
// non-incremental membership.
func membersFromFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var members []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "server.") {
			members = append(members, line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if len(members) == 0 {
		return "", errors.New(": no server.N lines")
	}
	return strings.ToLower(strings.Join(members, ",")), nil
}

func cmdConfig(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words, optSpec{"s", false}, optSpec{"w", false}, optSpec{"c", false})
	if err != nil {
		return err
	}
	data, st, err := s.zk.Config(p.has("w"))
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(nodeJSON(zkclient.ConfigNode, data, &st))
	}
	text := javaString(orNull(data))
	if p.has("c") {
		text = clientConfigString(text)
	}
	s.stdout("%s\n", text)
	if p.has("s") {
		s.printStat(st)
	}
	return nil
}

// clientConfigString is ConfigUtils.getClientConfigStr: "version
// host:port,…" of the servers' client addresses, in the order Java's
// Properties (a ConcurrentHashMap) iterates the server.N keys.
func clientConfigString(cfg string) string {
	version := ""
	type entry struct{ key, value string }
	var entries []entry
	seen := map[string]int{}
	for _, line := range strings.Split(cfg, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if i, dup := seen[k]; dup {
			entries[i].value = v
			continue
		}
		seen[k] = len(entries)
		entries = append(entries, entry{k, v})
	}
	var addrs []string
	for _, e := range javaHashOrder(entries, func(e entry) string { return e.key }) {
		if e.key == "version" {
			version = e.value
		}
		if !strings.HasPrefix(e.key, "server.") {
			continue
		}
		_, client, ok := strings.Cut(e.value, ";")
		if !ok {
			addrs = append(addrs, "")
			continue
		}
		if !strings.Contains(client, ":") {
			client = "0.0.0.0:" + client
		}
		addrs = append(addrs, client)
	}
	return version + " " + strings.Join(addrs, ",")
}

// javaHashOrder orders items as a java.util.Properties (ConcurrentHashMap,
// 16 bins at first, doubled at 3/4 full) built in this insertion order
// iterates them: by bin of the spread String.hashCode, then insertion.
func javaHashOrder[T any](items []T, key func(T) string) []T {
	bins := 16
	for len(items) >= bins-bins/4 {
		bins *= 2
	}
	index := func(s string) int {
		var h int32
		for _, c := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(c)
		}
		spread := (h ^ int32(uint32(h)>>16)) & 0x7fffffff
		return int(spread) & (bins - 1)
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b T) int { return index(key(a)) - index(key(b)) })
	return out
}

func cmdRemoveWatches(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"c", false}, optSpec{"d", false}, optSpec{"a", false}, optSpec{"l", false})
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("removewatches")
	}
	t := zkproto.WatcherAny
	switch {
	case p.has("c"):
		t = zkproto.WatcherChildren
	case p.has("d"):
		t = zkproto.WatcherData
	}
	return wrap(s.zk.RemoveWatches(p.args[1], t, p.has("l")))
}

func cmdGetEphemerals(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words)
	if err != nil {
		return err
	}
	path := "/"
	if len(p.args) >= 2 {
		path = p.args[1]
	}
	eph, err := s.zk.Ephemerals(path)
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(map[string]any{"path": path, "ephemerals": nonNil(eph)})
	}
	s.stdout("[%s]\n", strings.Join(eph, ", "))
	return nil
}

func cmdGetAllChildrenNumber(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("getAllChildrenNumber")
	}
	n, err := s.zk.AllChildrenNumber(p.args[1])
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(map[string]any{"path": p.args[1], "count": n})
	}
	s.stdout("%d\n", n)
	return nil
}

func cmdVersion(s *Shell, words []string) error {
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) > 1 {
		return usageError("version")
	}
	s.stdout("ZooKeeper CLI version: zkbridge shell %s (ZooKeeper 3.8 compatible)\n", Version)
	return nil
}

func cmdAddWatch(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"m", true})
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("addWatch")
	}
	mode := zkproto.AddWatchPersistentRecursive
	if m, ok := p.opts["m"]; ok {
		switch strings.ToUpper(m) {
		case "PERSISTENT":
			mode = zkproto.AddWatchPersistent
		case "PERSISTENT_RECURSIVE":
		default:
			return usageError("addWatch")
		}
	}
	return wrap(s.zk.AddWatch(p.args[1], mode))
}

func cmdWhoAmI(s *Shell, words []string) error {
	_, asJSON := takeFlag(words, "--json")
	infos, err := s.zk.WhoAmI()
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		type id struct {
			Scheme string `json:"scheme"`
			User   string `json:"user"`
		}
		ids := []id{}
		for _, i := range infos {
			ids = append(ids, id{i.AuthScheme, i.User})
		}
		return s.printJSON(map[string]any{"identities": ids})
	}
	s.stdout("Auth scheme: User\n")
	for _, i := range infos {
		s.stdout("%s: %s\n", i.AuthScheme, i.User)
	}
	return nil
}

// nodeJSON is a node's data and stat for --json: data as text when it is
// printable, always as base64 too.
func nodeJSON(path string, data []byte, st *zkproto.Stat) map[string]any {
	v := map[string]any{"path": path, "null": data == nil, "base64": formatData(data, formatBase64)}
	if printable(data) {
		v["data"] = string(data)
	}
	if st != nil {
		v["stat"] = toStatJSON(*st)
	}
	return v
}

// quotaNames are the option letters of setquota/delquota and the
// StatsTrack keys they set.
var quotaNames = []struct{ opt, key, what string }{
	{"n", "count", "num soft quota"}, {"b", "bytes", "bytes soft quota"},
	{"N", "countHardLimit", "num hard quota"}, {"B", "byteHardLimit", "bytes hard quota"},
}

// quotaGroup checks commons-cli's option group rule: at most one of
// -n -b -N -B (and, for setquota, at least one).
func quotaGroup(p *parsed, required bool) error {
	var set []string
	for _, q := range quotaNames {
		if p.has(q.opt) {
			set = append(set, q.opt)
		}
	}
	if len(set) > 1 {
		return errorf("org.apache.commons.cli.AlreadySelectedException: The option '%s' was specified but an option from this group has already been selected: '%s'", set[1], set[0])
	}
	if required && len(set) == 0 {
		return errorf("org.apache.commons.cli.MissingOptionException: Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]")
	}
	return nil
}

const (
	quotaRoot  = "/zookeeper/quota"
	limitNode  = "zookeeper_limits"
	statNode   = "zookeeper_stats"
	procRoot   = "/zookeeper"
	quotaUsage = "setquota -n|-b|-N|-B val path"
)

func cmdSetQuota(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"n", true}, optSpec{"b", true}, optSpec{"N", true}, optSpec{"B", true})
	if err != nil {
		return err
	}
	if err := quotaGroup(p, true); err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("setquota")
	}
	path := p.args[1]
	if strings.HasPrefix(path, quotaRoot) {
		s.stderr("cannot set a quota under the path: %s\n", quotaRoot)
		return nil
	}
	quota := statsTrack{"count": -1, "bytes": -1, "countHardLimit": -1, "byteHardLimit": -1}
	for _, q := range quotaNames {
		v, ok := p.opts[q.opt]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.stderr("NumberFormatException happens when parsing the option value\n")
			return nil
		}
		isCount := q.opt == "n" || q.opt == "N"
		if isCount && n <= 0 {
			s.stderr("the num quota must be greater than zero\n")
			return nil
		}
		if !isCount && n < 0 {
			s.stderr("the bytes quota must be greater than or equal to zero\n")
			return nil
		}
		quota[q.key] = n
	}
	return s.createQuota(path, quota)
}

// createQuota is SetQuotaCommand.createQuota: the limits node under
// /zookeeper/quota<path>, created or updated, with zkCli's checks.
func (s *Shell) createQuota(path string, quota statsTrack) error {
	st, err := s.zk.Exists(path, false)
	if err != nil {
		return wrap(err)
	}
	if st == nil {
		return errorf("%s does not exist.", path)
	}
	if err := s.checkQuotaNesting(path); err != nil {
		return err
	}
	if st, err := s.zk.Exists(quotaRoot, false); err != nil {
		return wrap(err)
	} else if st == nil {
		for _, p := range []string{procRoot, quotaRoot} {
			if _, _, err := s.zk.Create(p, nil, zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil && zkclient.Code(err) != zkproto.ErrNodeExists {
				return wrap(err)
			}
		}
	}
	qpath := quotaRoot
	for _, part := range strings.Split(path, "/")[1:] {
		qpath += "/" + part
		if st, err := s.zk.Exists(qpath, false); err != nil {
			return wrap(err)
		} else if st == nil {
			if _, _, err := s.zk.Create(qpath, nil, zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil && zkclient.Code(err) != zkproto.ErrNodeExists {
				return wrap(err)
			}
		}
	}
	statPath, limitPath := qpath+"/"+statNode, qpath+"/"+limitNode
	if st, err := s.zk.Exists(limitPath, false); err != nil {
		return wrap(err)
	} else if st == nil {
		if _, _, err := s.zk.Create(limitPath, []byte(quota.String()), zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil {
			return wrap(err)
		}
		stats := statsTrack{"count": 0, "bytes": 0}
		if _, _, err := s.zk.Create(statPath, []byte(stats.String()), zkproto.OpenACLUnsafe(), zkproto.ModePersistent, 0); err != nil {
			return wrap(err)
		}
		return s.checkQuota(limitPath, statPath)
	}
	data, _, err := s.zk.Get(limitPath, false)
	if err != nil {
		return wrap(err)
	}
	current := parseStatsTrack(string(data))
	for k, v := range quota {
		if v > -1 {
			current[k] = v
		}
	}
	if err := s.checkQuotaValues(current, statPath); err != nil {
		return err
	}
	_, err = s.zk.Set(limitPath, []byte(current.String()), -1)
	return wrap(err)
}

func (s *Shell) checkQuota(limitPath, statPath string) error {
	data, _, err := s.zk.Get(limitPath, false)
	if err != nil {
		return wrap(err)
	}
	return s.checkQuotaValues(parseStatsTrack(string(data)), statPath)
}

// checkQuotaValues warns when a quota is already below the usage.
func (s *Shell) checkQuotaValues(quota statsTrack, statPath string) error {
	data, _, err := s.zk.Get(statPath, false)
	if err != nil {
		return wrap(err)
	}
	stat := parseStatsTrack(string(data))
	if (quota.get("count") > -1 && quota.get("count") < stat.get("count")) ||
		(quota.get("countHardLimit") > -1 && quota.get("countHardLimit") < stat.get("count")) {
		s.stdout("[Warning]: the count quota you create is less than the existing count:%d\n", stat.get("count"))
	}
	if (quota.get("bytes") > -1 && quota.get("bytes") < stat.get("bytes")) ||
		(quota.get("byteHardLimit") > -1 && quota.get("byteHardLimit") < stat.get("bytes")) {
		s.stdout("[Warning]: the bytes quota you create is less than the existing bytes:%d\n", stat.get("bytes"))
	}
	return nil
}

// checkQuotaNesting refuses a quota on a node with a quota'd child or parent.
func (s *Shell) checkQuotaNesting(path string) error {
	real := quotaRoot + path
	var nested string
	err := visitSubTreeDFS(s.zk, real, false, func(qp string) {
		if nested != "" {
			return
		}
		children, _, err := s.zk.Children(qp, false)
		if err != nil {
			return
		}
		for _, c := range children {
			if qp != real && c == limitNode {
				nested = fmt.Sprintf("%s has a child %s which has a quota", path, strings.TrimPrefix(qp, quotaRoot))
				return
			}
		}
	})
	if nested != "" {
		return errorf("%s", nested)
	}
	if err != nil && zkclient.Code(err) != zkproto.ErrNoNode {
		return wrap(err)
	}
	parts := strings.Split(path, "/")
	qp := quotaRoot
	for i := 1; i < len(parts)-1; i++ {
		qp += "/" + parts[i]
		children, _, err := s.zk.Children(qp, false)
		if zkclient.Code(err) == zkproto.ErrNoNode {
			return nil
		}
		if err != nil {
			return wrap(err)
		}
		if slices.Contains(children, limitNode) && qp != real {
			return errorf("%s has a parent %s which has a quota", path, strings.TrimPrefix(qp, quotaRoot))
		}
	}
	return nil
}

func cmdListQuota(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("listquota")
	}
	path := p.args[1]
	limitPath := quotaRoot + path + "/" + limitNode
	if !asJSON {
		s.stderr("absolute path is %s\n", limitPath)
	}
	limit, _, err := s.zk.Get(limitPath, false)
	var stat []byte
	if err == nil {
		stat, _, err = s.zk.Get(quotaRoot+path+"/"+statNode, false)
	}
	if zkclient.Code(err) == zkproto.ErrNoNode {
		if asJSON {
			return s.printJSON(map[string]any{"path": path, "quota": nil})
		}
		s.stderr("quota for %s does not exist.\n", path)
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(map[string]any{"path": path, "quota": parseStatsTrack(string(limit)), "usage": parseStatsTrack(string(stat))})
	}
	s.stdout("Output quota for %s %s\n", path, parseStatsTrack(string(limit)))
	s.stdout("Output stat for %s %s\n", path, parseStatsTrack(string(stat)))
	return nil
}

func cmdDelQuota(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"n", false}, optSpec{"b", false}, optSpec{"N", false}, optSpec{"B", false})
	if err != nil {
		return err
	}
	if err := quotaGroup(p, false); err != nil {
		return err
	}
	if len(p.args) < 2 {
		return usageError("delquota")
	}
	path := p.args[1]
	parentPath, limitPath := quotaRoot+path, quotaRoot+path+"/"+limitNode
	st, err := s.zk.Exists(limitPath, false)
	if zkclient.IsPathError(err) {
		return wrap(err)
	}
	if err != nil {
		return wrap(err)
	}
	if st == nil {
		s.stdout("Quota does not exist for %s\n", path)
		return nil
	}
	data, _, err := s.zk.Get(limitPath, false)
	if zkclient.Code(err) == zkproto.ErrNoNode {
		s.stderr("quota for %s does not exist.\n", path)
		return nil
	}
	if err != nil {
		return wrap(err)
	}
	flagged := false
	current := parseStatsTrack(string(data))
	for _, q := range quotaNames {
		if p.has(q.opt) {
			current[q.key] = -1
			flagged = true
		}
	}
	if flagged {
		_, err := s.zk.Set(limitPath, []byte(current.String()), -1)
		return wrap(err)
	}
	children, _, err := s.zk.Children(parentPath, false)
	if err != nil {
		return wrap(err)
	}
	for _, c := range children {
		if err := s.zk.Delete(parentPath+"/"+c, -1); err != nil {
			return wrap(err)
		}
	}
	// trimProcQuotas: remove the now empty quota nodes up to /zookeeper/quota.
	for p := parentPath; p != quotaRoot && p != ""; p = p[:strings.LastIndexByte(p, '/')] {
		children, _, err := s.zk.Children(p, false)
		if err != nil {
			return wrap(err)
		}
		if len(children) > 0 {
			break
		}
		if err := s.zk.Delete(p, -1); err != nil {
			return wrap(err)
		}
	}
	return nil
}
