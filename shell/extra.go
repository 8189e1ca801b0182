package shell

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/migrate"
	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

// extraCommands are zkbridge's additions to zkCli's commands.
func extraCommands() map[string]command {
	return map[string]command{
		"help":  {usage: "", run: cmdHelp, help: "list every command"},
		"tree":  {usage: "[-d depth] path [--json]", run: cmdTree, help: "draw a subtree with data sizes"},
		"du":    {usage: "path [--json]", run: cmdDu, help: "znodes and bytes per subtree"},
		"find":  {usage: "path [--name GLOB] [--ephemeral] [--owner SID] [--json]", run: cmdFind, help: "list the znodes below path that match"},
		"watch": {usage: "path [--count N] [--json]", run: cmdWatch, help: "print every change below path until interrupted"},
		"dump":  {usage: "path -o file", run: cmdDump, help: "write a subtree (data, ACLs, stats) to a file in the migration format"},
		"load":  {usage: "file [--overwrite]", run: cmdLoad, help: "create the znodes of a dump (or migration export) file"},
	}
}

func cmdHelp(s *Shell, _ []string) error {
	var names []string
	for n := range commandTable {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := commandTable[n]
		tag := ""
		if c.extra {
			tag = " (zkbridge)"
		}
		s.stdout("%-22s %s\n%-22s   %s%s\n", n, c.usage, "", c.help, tag)
	}
	return nil
}

// node is one znode of tree --json.
type node struct {
	Path     string    `json:"path"`
	StatJSON *statJSON `json:"stat,omitempty"`
	Children []*node   `json:"children,omitempty"`
}

// walk visits root and its subtree depth first with each node's stat and
// sorted children, to maxDepth levels below root (-1: all). Nodes that
// vanish meanwhile are skipped.
func walk(zk *zkclient.Client, root string, maxDepth int, visit func(path string, st zkproto.Stat, children []string, depth int) error) error {
	var rec func(path string, depth int) error
	rec = func(path string, depth int) error {
		children, st, err := zk.Children(path, false)
		if zkclient.Code(err) == zkproto.ErrNoNode && depth > 0 {
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(children)
		if err := visit(path, st, children, depth); err != nil {
			return err
		}
		if maxDepth >= 0 && depth >= maxDepth {
			return nil
		}
		for _, c := range children {
			if err := rec(joinPath(path, c), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return rec(root, 0)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ownerKind names what an ephemeralOwner value marks.
func ownerKind(owner int64) string {
	switch {
	case owner == 0:
		return ""
	case uint64(owner) == 0x8000000000000000:
		return "container"
	case uint64(owner)>>56 == 0xff:
		return "ttl"
	}
	return "ephemeral"
}

func cmdTree(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words, optSpec{"d", true})
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("tree")
	}
	depth := -1
	if v, ok := p.opts["d"]; ok {
		if depth, err = strconv.Atoi(v); err != nil || depth < 0 {
			return errorf("-d %s: want a depth >= 0", v)
		}
	}
	root := p.args[1]
	type entry struct {
		path     string
		st       zkproto.Stat
		children []string
		depth    int
	}
	var entries []entry
	if err := walk(s.zk, root, depth, func(path string, st zkproto.Stat, children []string, d int) error {
		entries = append(entries, entry{path, st, children, d})
		return nil
	}); err != nil {
		return wrap(err)
	}
	if asJSON {
		byPath := map[string]*node{}
		var top *node
		for _, e := range entries {
			sj := toStatJSON(e.st)
			n := &node{Path: e.path, StatJSON: &sj}
			byPath[e.path] = n
			if parent, ok := byPath[zkproto.ParentPath(e.path)]; ok && e.path != root {
				parent.Children = append(parent.Children, n)
			} else {
				top = n
			}
		}
		return s.printJSON(top)
	}
	// lastAt[d] says whether the node printed at depth d was its parent's
	// last child: it decides "│" or blank in the prefix of deeper lines.
	lastAt := map[int]bool{}
	for i, e := range entries {
		var b strings.Builder
		name := zkproto.BaseName(e.path)
		if e.depth == 0 {
			name = e.path
		} else {
			last := true
			for _, later := range entries[i+1:] {
				if later.depth < e.depth {
					break
				}
				if later.depth == e.depth {
					last = false
					break
				}
			}
			lastAt[e.depth] = last
			for d := 1; d < e.depth; d++ {
				if lastAt[d] {
					b.WriteString("    ")
				} else {
					b.WriteString("│   ")
				}
			}
			if last {
				b.WriteString("└── ")
			} else {
				b.WriteString("├── ")
			}
		}
		info := []string{humanBytes(int64(e.st.DataLength))}
		if e.st.NumChildren > 0 {
			info = append(info, fmt.Sprintf("%d children", e.st.NumChildren))
		}
		if k := ownerKind(e.st.EphemeralOwner); k != "" {
			info = append(info, k)
		}
		s.stdout("%s%s (%s)\n", b.String(), name, strings.Join(info, ", "))
	}
	return nil
}

func cmdDu(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("du")
	}
	root := p.args[1]
	children, rootStat, err := s.zk.Children(root, false)
	if err != nil {
		return wrap(err)
	}
	slices.Sort(children)
	type usage struct {
		Path   string `json:"path"`
		Znodes int64  `json:"znodes"`
		Bytes  int64  `json:"bytes"`
	}
	var rows []usage
	total := usage{Path: root, Znodes: 1, Bytes: int64(rootStat.DataLength)}
	for _, c := range children {
		sub := joinPath(root, c)
		// The count comes from the server in one call; bytes need each stat.
		n, err := s.zk.AllChildrenNumber(sub)
		if zkclient.Code(err) == zkproto.ErrNoNode {
			continue
		}
		if err != nil {
			return wrap(err)
		}
		var bytes int64
		if err := walk(s.zk, sub, -1, func(_ string, st zkproto.Stat, _ []string, _ int) error {
			bytes += int64(st.DataLength)
			return nil
		}); err != nil {
			return wrap(err)
		}
		rows = append(rows, usage{Path: sub, Znodes: int64(n) + 1, Bytes: bytes})
		total.Znodes += int64(n) + 1
		total.Bytes += bytes
	}
	if asJSON {
		return s.printJSON(map[string]any{"subtrees": rows, "total": total})
	}
	s.stdout("%10s %12s  %s\n", "ZNODES", "BYTES", "PATH")
	for _, r := range rows {
		s.stdout("%10d %12d  %s\n", r.Znodes, r.Bytes, r.Path)
	}
	s.stdout("%10d %12d  %s (total)\n", total.Znodes, total.Bytes, total.Path)
	return nil
}

func cmdFind(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	words, ephemeralOnly := takeFlag(words, "--ephemeral")
	words, glob, err := takeValue(words, "--name", "")
	if err != nil {
		return err
	}
	words, ownerText, err := takeValue(words, "--owner", "")
	if err != nil {
		return err
	}
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("find")
	}
	if glob != "" {
		if _, err := pathpkg.Match(glob, ""); err != nil {
			return errorf("--name %q: %v", glob, err)
		}
	}
	var owner int64
	if ownerText != "" {
		u, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(ownerText), "0x"), 16, 64)
		if err != nil {
			return errorf("--owner %q: want a session id in hex (0x…), as stat prints it", ownerText)
		}
		owner = int64(u)
	}
	var found []string
	err = walk(s.zk, p.args[1], -1, func(path string, st zkproto.Stat, _ []string, _ int) error {
		if glob != "" {
			if ok, _ := pathpkg.Match(glob, zkproto.BaseName(path)); !ok {
				return nil
			}
		}
		if ephemeralOnly && ownerKind(st.EphemeralOwner) != "ephemeral" {
			return nil
		}
		if ownerText != "" && st.EphemeralOwner != owner {
			return nil
		}
		if asJSON {
			found = append(found, path)
		} else {
			s.stdout("%s\n", path)
		}
		return nil
	})
	if err != nil {
		return wrap(err)
	}
	if asJSON {
		return s.printJSON(map[string]any{"path": p.args[1], "matches": nonNil(found)})
	}
	return nil
}

// cmdWatch sets a persistent recursive watch and prints each event (with
// the node's new data for creates and changes) until Ctrl-C or --count
// events, then removes the watch.
func cmdWatch(s *Shell, words []string) error {
	words, asJSON := takeFlag(words, "--json")
	words, countText, err := takeValue(words, "--count", "0")
	if err != nil {
		return err
	}
	count, err := strconv.Atoi(countText)
	if err != nil || count < 0 {
		return errorf("--count %q: want a number of events (0: until interrupted)", countText)
	}
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("watch")
	}
	root := p.args[1]
	events := make(chan zkclient.Event, 1024)
	s.mu.Lock()
	saved := s.printWatches
	s.printWatches = false
	s.onEvent = func(ev zkclient.Event) {
		select {
		case events <- ev:
		default: // the printer fell behind; drop rather than stall the client
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.printWatches, s.onEvent = saved, nil
		s.mu.Unlock()
	}()
	if err := s.zk.AddWatch(root, zkproto.AddWatchPersistentRecursive); err != nil {
		return wrap(err)
	}
	defer func() { _ = s.zk.RemoveWatches(root, zkproto.WatcherAny, false) }()
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt)
	defer signal.Stop(interrupt)
	if !asJSON {
		s.stderr("watching %s (Ctrl-C to stop)\n", root)
	}
	for seen := 0; count == 0 || seen < count; {
		select {
		case <-interrupt:
			return nil
		case ev := <-events:
			if ev.Type == zkproto.EventNone {
				if ev.State == zkproto.StateExpired || ev.State == zkproto.StateClosed {
					return errorf("session ended: %s", zkclient.KeeperStateName(ev.State))
				}
				continue
			}
			seen++
			var data []byte
			hasData := false
			if ev.Type == zkproto.EventNodeCreated || ev.Type == zkproto.EventNodeDataChanged {
				if d, _, err := s.zk.Get(ev.Path, false); err == nil {
					data, hasData = d, true
				}
			}
			now := time.Now().UTC().Format(time.RFC3339Nano)
			if asJSON {
				v := map[string]any{"time": now, "type": ev.Type.String(), "path": ev.Path}
				if hasData {
					v["node"] = nodeJSON(ev.Path, data, nil)
				}
				if err := s.printJSON(v); err != nil {
					return err
				}
				continue
			}
			line := fmt.Sprintf("%s %-19s %s", now, ev.Type, ev.Path)
			if hasData {
				line += " = " + strconv.Quote(formatData(data, formatAuto))
			}
			s.stdout("%s\n", line)
		}
	}
	return nil
}

// dumpRecord is one znode in a dump file (JSON lines, parents first).
type dumpRecord struct {
	Path   string    `json:"path"`
	Data   *string   `json:"data"` // base64; null for a node without data
	ACL    []dumpACL `json:"acl"`
	Mode   string    `json:"mode,omitempty"` // "container" or "ttl"; ephemerals are not dumped
	TTL    int64     `json:"ttl,omitempty"`
	Ctime  int64     `json:"ctime"`
	Mtime  int64     `json:"mtime"`
	Source string    `json:"-"`
}

type dumpACL struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  int32  `json:"perms"`
}

func cmdDump(s *Shell, words []string) error {
	p, err := parse(words, optSpec{"o", true})
	if err != nil {
		return err
	}
	if len(p.args) != 2 || !p.has("o") {
		return usageError("dump")
	}
	root, file := p.args[1], p.opts["o"]
	// The migration export format (migrate/format.go), so a dump is also
	// what `zkbridge migrate import` reads.
	w, err := migrate.Create(file, migrate.Header{Source: s.host, Path: root, Created: time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return errorf("dump: %v", err)
	}
	skipped := 0
	werr := walk(s.zk, root, -1, func(path string, st zkproto.Stat, _ []string, _ int) error {
		if path == "/zookeeper" || strings.HasPrefix(path, "/zookeeper/") {
			return nil // the server's own nodes
		}
		if ownerKind(st.EphemeralOwner) == "ephemeral" {
			skipped++ // an ephemeral belongs to its session, which a dump does not carry
			return nil
		}
		data, st, err := s.zk.Get(path, false)
		if zkclient.Code(err) == zkproto.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		acl, _, err := s.zk.GetACL(path)
		if err != nil {
			return err
		}
		n := &migrate.Node{Path: path, Data: data, Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime,
			Mtime: st.Mtime, Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
			EphemeralOwner: st.EphemeralOwner, NumChildren: st.NumChildren, Creates: (st.Cversion + st.NumChildren) / 2}
		for _, a := range acl {
			n.ACL = append(n.ACL, migrate.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID})
		}
		return w.Node(n)
	})
	if werr != nil {
		w.Abort()
		return wrap(werr)
	}
	if err := w.Close(); err != nil {
		return errorf("dump: %v", err)
	}
	s.stderr("dumped %d znodes of %s to %s", w.Counts().Nodes, root, file)
	if skipped > 0 {
		s.stderr(" (%d ephemerals left out)", skipped)
	}
	s.stderr("\n")
	return nil
}

func cmdLoad(s *Shell, words []string) error {
	words, overwrite := takeFlag(words, "--overwrite")
	p, err := parse(words)
	if err != nil {
		return err
	}
	if len(p.args) != 2 {
		return usageError("load")
	}
	r, err := migrate.Open(p.args[1])
	if err != nil {
		return errorf("load: %v", err)
	}
	defer r.Close()
	created, updated, existing, ephemerals := 0, 0, 0, 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errorf("load: %v", err)
		}
		n := rec.Node
		if n == nil {
			continue // a session: only a migration import can carry one over
		}
		acl := make([]zkproto.ACL, 0, len(n.ACL))
		for _, a := range n.ACL {
			acl = append(acl, zkproto.ACL{Perms: a.Perms, ID: zkproto.Id{Scheme: a.Scheme, ID: a.ID}})
		}
		if len(acl) == 0 {
			acl = zkproto.OpenACLUnsafe()
		}
		mode, ttl := zkproto.ModePersistent, int64(0)
		switch ownerKind(n.EphemeralOwner) {
		case "ephemeral":
			ephemerals++
			continue
		case "container":
			mode = zkproto.ModeContainer
		case "ttl":
			mode, ttl = zkproto.ModePersistentWithTTL, n.EphemeralOwner&maxTTL
		}
		if n.Path == "/" {
			existing++
			continue
		}
		_, _, err = s.zk.Create(n.Path, n.Data, acl, mode, ttl)
		switch {
		case err == nil:
			created++
		case zkclient.Code(err) == zkproto.ErrNodeExists && overwrite:
			if _, err := s.zk.Set(n.Path, n.Data, -1); err != nil {
				return wrap(err)
			}
			updated++
		case zkclient.Code(err) == zkproto.ErrNodeExists:
			existing++
		default:
			return wrap(err)
		}
	}
	s.stderr("loaded %s: %d created, %d updated, %d already there", p.args[1], created, updated, existing)
	if existing > 0 && !overwrite {
		s.stderr(" (kept; --overwrite replaces their data)")
	}
	if ephemerals > 0 {
		s.stderr("; %d ephemerals skipped (their sessions are not carried)", ephemerals)
	}
	s.stderr("\n")
	return nil
}
