package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// pageSize is how many children or search results one page lists.
const pageSize = 100

// maxHexBytes bounds the hex view of a znode's data.
const maxHexBytes = 64 << 10

// maxSessionRows bounds the Sessions page; past it the page says so.
const maxSessionRows = 2000

// page is what every template gets.
type page struct {
	Title  string
	Nav    string
	Tenant string
	Viewer viewer
	Writes bool
	CSRF   string
	Data   any
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	c.renderIn(w, r, DefaultTenant, name, title, data)
}

// renderIn renders a page read for tenant (the header names it, the
// navigation keeps it).
func (c *Console) renderIn(w http.ResponseWriter, r *http.Request, tenant, name, title string, data any) {
	v, ok := c.viewerOr401(w, r)
	if !ok {
		return
	}
	p := page{Title: title, Nav: name, Tenant: tenant, Viewer: v, Writes: c.opt.Writes && v.Admin, Data: data}
	if v.Admin {
		p.CSRF = c.csrfToken(v.User)
	}
	c.execute(w, name, p)
}

func (c *Console) execute(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		c.opt.Log.Error().Err(err).Str("template", name).Msg("console page failed")
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

var funcs = template.FuncMap{
	"hex":   func(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) },
	"ms":    func(t int64) string { return time.UnixMilli(t).UTC().Format("2006-01-02 15:04:05.000 UTC") },
	"ago":   func(t time.Time) string { return ago(t) },
	"join":  func(p, name string) string { return joinPath(p, name) },
	"perms": zkproto.PermString,
	"add":   func(a, b int) int { return a + b },
	// tq keeps a link in the page's tenant ("&tenant=NAME", or nothing for
	// the default).
	"tq": func(tenant string) template.URL { return template.URL(tenantQuery(tenant)) },
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t).Round(100 * time.Millisecond)
	return d.String() + " ago"
}

func joinPath(p, name string) string {
	if p == "/" {
		return "/" + name
	}
	return p + "/" + name
}

// --- Cluster -----------------------------------------------------------

func (c *Console) clusterPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, "cluster", "Cluster", map[string]any{"Series": opSeries})
}

func (c *Console) clusterNodes(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.viewerOr401(w, r); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2500*time.Millisecond)
	defer cancel()
	c.execute(w, "cluster-nodes", c.nodes(ctx, c.defaultScope()))
}

// --- Tree --------------------------------------------------------------

// treeNode is the Tree page of one znode.
type treeNode struct {
	Path      string
	Crumbs    []crumb
	Stat      zkproto.Stat
	Exists    bool
	CanRead   bool
	CanACL    bool
	ACL       []zkproto.ACL
	Text      string
	IsText    bool
	JSON      string
	Hex       string
	DataNull  bool
	Children  childPage
	Quota     *quotaUse
	Search    string
	Found     *childPage
	Error     string
	Ephemeral bool
}

type crumb struct{ Name, Path string }

type childPage struct {
	Tenant string // the tenant read ("" or "default": the default)
	Parent string
	Names  []string
	More   bool
	Next   string // the "after" of the next page
	Prefix string // set for a search page
}

type quotaUse struct {
	Limits string // zookeeper_limits: count=..,bytes=..
	Stats  string // zookeeper_stats: count=..,bytes=..
}

func crumbs(p string) []crumb {
	out := []crumb{{"/", "/"}}
	if p == "/" {
		return out
	}
	acc := ""
	for _, name := range strings.Split(p[1:], "/") {
		acc += "/" + name
		out = append(out, crumb{name, acc})
	}
	return out
}

func cleanPath(p string) (string, error) {
	if p == "" {
		p = "/"
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		p = strings.TrimRight(p, "/")
		if p == "" {
			p = "/"
		}
	}
	if err := zkproto.ValidatePath(p); err != nil {
		return "", fmt.Errorf("%q is not a znode path: %v", p, err)
	}
	return p, nil
}

func (c *Console) treePage(w http.ResponseWriter, r *http.Request) {
	v, ok := c.viewerOr401(w, r)
	if !ok {
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	p, err := cleanPath(q.Get("path"))
	if err != nil {
		c.renderIn(w, r, sc.Tenant, "tree", "Tree", treeNode{Path: "/", Crumbs: crumbs("/"), Error: err.Error()})
		return
	}
	tn, err := c.readNode(sc, p, q.Get("after"), q.Get("q"), v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	tn.Children.Tenant = sc.Tenant // the children's links stay in the tenant
	if tn.Found != nil {
		tn.Found.Tenant = sc.Tenant
	}
	c.renderIn(w, r, sc.Tenant, "tree", "Tree "+p, tn)
}

// readNode reads one znode for v, with ZooKeeper's permission rules: stat
// needs none (exists), data and children need READ, the ACL needs READ or
// ADMIN (digests masked without ADMIN).
func (c *Console) readNode(sc scope, p, after, search string, v viewer) (treeNode, error) {
	tn := treeNode{Path: p, Crumbs: crumbs(p), Search: search}
	view, err := sc.Node.View()
	if err != nil {
		return tn, fmt.Errorf("read view: %w", err)
	}
	defer view.Close()
	n, err := view.Get(p)
	if errors.Is(err, zkproto.ErrNoNode) {
		tn.Error = "no znode at " + p
		return tn, nil
	}
	if err != nil {
		return tn, err
	}
	tn.Exists, tn.Stat = true, n.Stat
	owner := n.Stat.EphemeralOwner // containers and TTL nodes carry markers, not sessions
	tn.Ephemeral = owner != 0 && uint64(owner)>>56 != 0xff && owner != math.MinInt64
	super := c.opt.SuperDigest
	tn.CanRead = sm.CheckACL(n.ACL, zkproto.PermRead, v.IDs, super)
	admin := sm.CheckACL(n.ACL, zkproto.PermAdmin, v.IDs, super)
	tn.CanACL = tn.CanRead || admin
	if tn.CanACL {
		tn.ACL = n.ACL
		if !admin {
			tn.ACL = maskDigests(n.ACL)
		}
	}
	if !tn.CanRead {
		return tn, nil
	}
	tn.DataNull = n.Data == nil
	tn.Text, tn.IsText = string(n.Data), utf8.Valid(n.Data)
	var js any
	if len(n.Data) > 0 && json.Unmarshal(n.Data, &js) == nil {
		if b, err := json.MarshalIndent(js, "", "  "); err == nil {
			tn.JSON = string(b)
		}
	}
	// A hex dump is four times the data: show the first maxHexBytes of a
	// large value (the text and JSON views show it whole, up to
	// jute.maxbuffer).
	if len(n.Data) > maxHexBytes {
		tn.Hex = hex.Dump(n.Data[:maxHexBytes]) + fmt.Sprintf("… %d more bytes\n", len(n.Data)-maxHexBytes)
	} else {
		tn.Hex = hex.Dump(n.Data)
	}
	names, more, err := view.ChildrenPage(p, after, pageSize)
	if err != nil {
		return tn, err
	}
	tn.Children = pageOf(p, names, more, "")
	if search != "" {
		found, err := prefixSearch(view, p, search)
		if err != nil {
			tn.Error = err.Error()
		} else {
			tn.Found = found
		}
	}
	tn.Quota = readQuota(view, p, v, super)
	return tn, nil
}

func pageOf(parent string, names []string, more bool, prefix string) childPage {
	cp := childPage{Parent: parent, Names: names, More: more, Prefix: prefix}
	if more && len(names) > 0 {
		cp.Next = names[len(names)-1]
	}
	return cp
}

// prefixSearch lists the children of the search path's parent whose names
// start with its last segment ("/app/ser" finds /app/server-1, ...). A
// relative search is taken under the current node.
func prefixSearch(view *sm.View, current, search string) (*childPage, error) {
	full := search
	if !strings.HasPrefix(search, "/") {
		full = joinPath(current, search)
	}
	i := strings.LastIndexByte(full, '/')
	parent, prefix := full[:i], full[i+1:]
	if parent == "" {
		parent = "/"
	}
	if _, err := cleanPath(parent); err != nil {
		return nil, err
	}
	names, more, err := view.PrefixPage(parent, prefix, "", pageSize)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil, fmt.Errorf("no znode at %s to search under", parent)
	}
	if err != nil {
		return nil, err
	}
	cp := pageOf(parent, names, more, prefix)
	return &cp, nil
}

// readQuota reads /zookeeper/quota<p>/zookeeper_limits and _stats when the
// viewer may read them.
func readQuota(view *sm.View, p string, v viewer, super string) *quotaUse {
	base := "/zookeeper/quota" + p
	if p == "/" {
		return nil
	}
	lim, err := view.Get(base + "/zookeeper_limits")
	if err != nil || !sm.CheckACL(lim.ACL, zkproto.PermRead, v.IDs, super) {
		return nil
	}
	q := &quotaUse{Limits: string(lim.Data)}
	if st, err := view.Get(base + "/zookeeper_stats"); err == nil && sm.CheckACL(st.ACL, zkproto.PermRead, v.IDs, super) {
		q.Stats = string(st.Data)
	}
	return q
}

func maskDigests(acl []zkproto.ACL) []zkproto.ACL {
	out := make([]zkproto.ACL, len(acl))
	for i, a := range acl {
		out[i] = a
		if a.ID.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID.ID, ":")
			out[i].ID.ID = user + ":x"
		}
	}
	return out
}

// treeChildren is one more page of a node's children (htmx appends it),
// or of a prefix search.
func (c *Console) treeChildren(w http.ResponseWriter, r *http.Request) {
	v, ok := c.viewerOr401(w, r)
	if !ok {
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	p, err := cleanPath(q.Get("path"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	view, err := sc.Node.View()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer view.Close()
	n, err := view.Get(p)
	if err != nil {
		http.Error(w, "no znode at "+p, http.StatusNotFound)
		return
	}
	if !sm.CheckACL(n.ACL, zkproto.PermRead, v.IDs, c.opt.SuperDigest) {
		http.Error(w, "no READ permission on "+p, http.StatusForbidden)
		return
	}
	prefix := q.Get("prefix")
	var names []string
	var more bool
	if prefix != "" {
		names, more, err = view.PrefixPage(p, prefix, q.Get("after"), pageSize)
	} else {
		names, more, err = view.ChildrenPage(p, q.Get("after"), pageSize)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	page := pageOf(p, names, more, prefix)
	page.Tenant = sc.Tenant
	c.execute(w, "children", page)
}

// --- Sessions ----------------------------------------------------------

// sessionRow is one session on the Sessions page.
type sessionRow struct {
	ID         int64
	Timeout    int32
	Owner      uint64
	Remote     string
	LastSeen   time.Time
	Ephemerals []string
	Watches    [4]int // data, child, persistent, recursive
	Connected  bool
	Lease      bool
}

func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.viewerOr401(w, r); !ok {
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2500*time.Millisecond)
	defer cancel()
	rows, truncated, errs, err := c.sessionRows(ctx, sc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.renderIn(w, r, sc.Tenant, "sessions", "Sessions", map[string]any{"Rows": rows, "Truncated": truncated, "Errors": errs, "Max": maxSessionRows})
}

func (c *Console) sessionRows(ctx context.Context, sc scope) (rows []sessionRow, truncated bool, nodeErrs []string, err error) {
	byID := map[int64]int{}
	view, err := sc.Node.View()
	if err != nil {
		return nil, false, nil, err
	}
	err = view.Sessions(func(s *sm.SessionInfo) error {
		if len(rows) == maxSessionRows {
			truncated = true
			return errStopScan
		}
		eph, err := view.Ephemerals(s.ID)
		if err != nil {
			return err
		}
		byID[s.ID] = len(rows)
		rows = append(rows, sessionRow{ID: s.ID, Timeout: s.Timeout, Owner: s.Owner, Ephemerals: eph})
		return nil
	})
	view.Close()
	if errors.Is(err, errStopScan) {
		err = nil
	}
	if err != nil {
		return nil, false, nil, err
	}
	for _, n := range c.nodes(ctx, sc) {
		if n.Error != "" {
			nodeErrs = append(nodeErrs, fmt.Sprintf("node %d: %s", n.ReplicaID, n.Error))
			continue
		}
		for _, ci := range n.Conns {
			if i, ok := byID[ci.Session]; ok {
				row := &rows[i]
				row.Connected, row.Remote, row.LastSeen = true, ci.Remote, ci.LastSeen
				row.Watches = [4]int{ci.DataWatches, ci.ChildWatches, ci.PersistWatches, ci.RecursiveWatches}
			}
		}
		if n.Bridge != nil {
			for _, l := range n.Bridge.Leases {
				if i, ok := byID[l.ID]; ok {
					rows[i].Lease = true
					if l.LastHeartbeat.After(rows[i].LastSeen) {
						rows[i].LastSeen = l.LastHeartbeat
					}
				}
			}
		}
	}
	return rows, truncated, nodeErrs, nil
}

var errStopScan = errors.New("enough")

// expireSession ends a session as its timeout would (admin only, after a
// confirmation step; logged).
func (c *Console) expireSession(w http.ResponseWriter, r *http.Request) {
	v, ok := c.checkWrite(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(r.PostFormValue("id"), "0x"), 16, 64)
	if err != nil {
		http.Error(w, "id must be a session id in hex", http.StatusBadRequest)
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		c.execute(w, "confirm", confirmData{
			Question: fmt.Sprintf("Expire session 0x%x? Its ephemeral znodes are deleted and its clients get SESSION_EXPIRED.", uint64(id)),
			Action:   "/ui/sessions/expire", Target: "#result", CSRF: c.csrfToken(v.User),
			Fields: map[string]string{"id": fmt.Sprintf("%x", uint64(id)), "tenant": r.PostFormValue("tenant")},
		})
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	if err := sc.Node.ExpireSession(id); err != nil {
		c.opt.Log.Warn().Err(err).Str("admin", v.User).Str("session", fmt.Sprintf("0x%x", uint64(id))).Msg("console: expire session failed")
		c.execute(w, "result", resultData{Error: fmt.Sprintf("expire session 0x%x: %v", uint64(id), err)})
		return
	}
	c.opt.Log.Info().Str("admin", v.User).Str("remote", r.RemoteAddr).Str("session", fmt.Sprintf("0x%x", uint64(id))).Msg("console: session expired by an administrator")
	reload := "/ui/sessions"
	if sc.Tenant != DefaultTenant {
		reload += "?tenant=" + urlQuery(sc.Tenant)
	}
	c.execute(w, "result", resultData{OK: fmt.Sprintf("session 0x%x expired", uint64(id)), Reload: reload})
}

type confirmData struct {
	Question string
	Action   string
	Target   string
	Fields   map[string]string
	CSRF     string
}

type resultData struct {
	OK, Error string
	Reload    string
}

// treeWrite sets data, creates or deletes a znode as the administrator
// (their digest identity: the node's ACL decides), after confirmation.
func (c *Console) treeWrite(w http.ResponseWriter, r *http.Request) {
	v, ok := c.checkWrite(w, r)
	if !ok {
		return
	}
	op, p, data := r.PostFormValue("op"), r.PostFormValue("path"), r.PostFormValue("data")
	p, err := cleanPath(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	version := int32(-1)
	if s := r.PostFormValue("version"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			http.Error(w, "version must be an integer", http.StatusBadRequest)
			return
		}
		version = int32(n)
	}
	var cmd sm.Op
	var what string
	switch op {
	case "set":
		cmd, what = &sm.SetData{Path: p, Data: []byte(data), Version: version}, fmt.Sprintf("Set the data of %s (%d bytes, version %d)?", p, len(data), version)
	case "create":
		cmd, what = &sm.Create{OpCode: zkproto.OpCreate, Path: p, Data: []byte(data), ACL: zkproto.OpenACLUnsafe()}, fmt.Sprintf("Create %s (%d bytes, open ACL)?", p, len(data))
	case "delete":
		cmd, what = &sm.Delete{Path: p, Version: version}, fmt.Sprintf("Delete %s (version %d)?", p, version)
	default:
		http.Error(w, "op must be set, create or delete", http.StatusBadRequest)
		return
	}
	sc, ok := c.scopeOr404(w, r)
	if !ok {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		c.execute(w, "confirm", confirmData{Question: what, Action: "/ui/tree/write", Target: "#result",
			Fields: map[string]string{"op": op, "path": p, "data": data, "version": strconv.Itoa(int(version)), "tenant": r.PostFormValue("tenant")}, CSRF: c.csrfToken(v.User)})
		return
	}
	res, err := sc.Node.ProposeSync(&sm.Command{Header: sm.Header{Time: time.Now().UnixMilli(), Auth: v.IDs}, Op: cmd})
	if err == nil && res.Err != zkproto.ErrOK {
		err = res.Err
	}
	log := c.opt.Log.Info()
	if err != nil {
		log = c.opt.Log.Warn().Err(err)
	}
	log.Str("admin", v.User).Str("remote", r.RemoteAddr).Str("op", op).Str("path", p).Msg("console: znode change by an administrator")
	if err != nil {
		c.execute(w, "result", resultData{Error: fmt.Sprintf("%s %s: %v", op, p, err)})
		return
	}
	back := p
	if op == "delete" {
		back = zkproto.ParentPath(p)
	}
	c.execute(w, "result", resultData{OK: op + " " + p + ": done", Reload: "/ui/tree?path=" + urlQuery(back) + tenantQuery(sc.Tenant)})
}

func urlQuery(s string) string { return template.URLQueryEscaper(s) }

// --- Bridge ------------------------------------------------------------

type leaseRow struct {
	ID            int64
	Path          string
	Node          uint64
	Members       []string
	Timeout       int32
	LastHeartbeat time.Time
}

// subscriberRow is one open change-feed stream and the node serving it.
type subscriberRow struct {
	Node     uint64
	Remote   string
	Prefixes []string
	From     int64
	Offset   int64
	Records  int64
	Since    time.Time
}

type counterRow struct {
	Path    string
	Value   string
	Version int32
	Error   string
}

func (c *Console) bridgePage(w http.ResponseWriter, r *http.Request) {
	v, ok := c.viewerOr401(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2500*time.Millisecond)
	defer cancel()
	nodes := c.nodes(ctx, c.defaultScope())
	view, err := c.opt.Node.View()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer view.Close()
	leases := map[int64]*leaseRow{}
	var subs []subscriberRow
	counters := map[string]bool{}
	var errs []string
	native := false
	for _, n := range nodes {
		if n.Error != "" {
			errs = append(errs, fmt.Sprintf("node %d: %s", n.ReplicaID, n.Error))
			continue
		}
		if n.Bridge == nil {
			continue
		}
		native = true
		for _, l := range n.Bridge.Leases {
			row := leases[l.ID]
			if row == nil {
				row = &leaseRow{ID: l.ID}
				leases[l.ID] = row
			}
			if l.Path != "" {
				row.Path, row.Node = l.Path, n.ReplicaID
			}
			if l.LastHeartbeat.After(row.LastHeartbeat) {
				row.LastHeartbeat = l.LastHeartbeat
			}
		}
		for _, s := range n.Bridge.Subscribers {
			subs = append(subs, subscriberRow{Node: n.ReplicaID, Remote: s.Remote, Prefixes: s.Prefixes, From: s.FromOffset, Offset: s.Offset, Records: s.Records, Since: s.Since})
		}
		for _, p := range n.Bridge.Counters {
			counters[p] = true
		}
	}
	var leaseRows []leaseRow
	for _, l := range leases {
		info, err := view.Session(l.ID)
		if err != nil {
			continue // ended since the node reported it
		}
		l.Timeout = info.Timeout
		l.Members, _ = view.Ephemerals(l.ID)
		leaseRows = append(leaseRows, *l)
	}
	sortLeases(leaseRows)
	var counterRows []counterRow
	for _, p := range sortedKeys(counters) {
		row := counterRow{Path: p}
		n, err := view.Get(p)
		switch {
		case err != nil:
			row.Error = err.Error()
		case !sm.CheckACL(n.ACL, zkproto.PermRead, v.IDs, c.opt.SuperDigest):
			row.Error = "no READ permission"
		case len(n.Data) == 8:
			row.Value, row.Version = strconv.FormatInt(int64(beUint64(n.Data)), 10), n.Stat.Version
		default:
			row.Error = fmt.Sprintf("%d bytes, not an 8-byte counter", len(n.Data))
		}
		counterRows = append(counterRows, row)
	}
	policies, err := view.CutoverPolicies()
	if err != nil {
		errs = append(errs, "cutover policies: "+err.Error())
	}
	c.render(w, r, "bridge", "Bridge", map[string]any{"Native": native, "Leases": leaseRows, "Subscribers": subs,
		"Policies": policies, "Counters": counterRows, "Errors": errs})
}
