package server

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkbridge/zkbridge/server/admin/console"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// consoleUser and consolePass sign in to the web console in tests.
const (
	consoleUser = "alice"
	consolePass = "s3cret"
)

// withConsole turns on a node's admin listener with the console, an
// administrator and (when writes) console writes.
func withConsole(writes bool) func(*Config) {
	return func(c *Config) {
		c.AdminDisabled = false
		c.AdminAddr = "127.0.0.1:0"
		c.AdminUsers = []string{console.DigestOf(consoleUser, consolePass)}
		c.ConsoleWrites = writes
	}
}

// consoleDo sends one request to a node's console; user "" is anonymous.
func consoleDo(t testing.TB, method, adminAddr, path, user, pass string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+adminAddr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// childLink is one child in a Tree page's list.
var childLink = regexp.MustCompile(`<li><a href="[^"]*">c\d{6}</a></li>`)

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// The console reads the tree with the viewer's identity: an ACL-protected
// znode's data and children are hidden from an anonymous viewer and shown
// to the administrator whose digest the ACL names; writes need the
// administrator, a CSRF token and a confirmation, and land in the tree.
func TestConsoleReadsWithTheViewersIdentityAndConfirmsWrites(t *testing.T) {
	s := startTestServer(t, withConsole(true))
	admin := s.AdminAddr()
	zc, _, err := gozk.Connect([]string{s.ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	if err := zc.AddAuth("digest", []byte(consoleUser+":"+consolePass)); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/secret", []byte(`{"token":"hunter2"}`), 0, gozk.DigestACL(gozk.PermRead|gozk.PermAdmin, consoleUser, consolePass)); err != nil {
		t.Fatal(err)
	}

	code, page := consoleDo(t, "GET", admin, "/ui/tree?path=/secret", "", "", nil)
	if code != http.StatusOK || strings.Contains(page, "hunter2") || !strings.Contains(page, `id="no-read"`) {
		t.Fatalf("anonymous view of /secret: %d, data shown or no refusal:\n%s", code, page)
	}
	if strings.Contains(page, console.DigestOf(consoleUser, consolePass)) {
		t.Fatal("anonymous view shows the ACL's digest")
	}
	code, page = consoleDo(t, "GET", admin, "/ui/tree?path=/secret", consoleUser, consolePass, nil)
	if code != http.StatusOK || !strings.Contains(page, "hunter2") || !strings.Contains(page, "&#34;token&#34;: &#34;hunter2&#34;") {
		t.Fatalf("administrator's view of /secret: %d, no data or no pretty JSON:\n%s", code, page)
	}
	if code, _ := consoleDo(t, "GET", admin, "/ui/tree?path=/secret", consoleUser, "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}

	// A write: anonymous refused, no token refused, first step asks, the
	// confirmed one lands.
	form := url.Values{"op": {"create"}, "path": {"/made-in-console"}, "data": {"hello"}}
	if code, _ := consoleDo(t, "POST", admin, "/ui/tree/write", "", "", form); code != http.StatusForbidden {
		t.Fatalf("anonymous write: %d, want 403", code)
	}
	if code, _ := consoleDo(t, "POST", admin, "/ui/tree/write", consoleUser, consolePass, form); code != http.StatusForbidden {
		t.Fatalf("write without a CSRF token: %d, want 403", code)
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the administrator's tree page")
	}
	form.Set("csrf", m[1])
	code, ask := consoleDo(t, "POST", admin, "/ui/tree/write", consoleUser, consolePass, form)
	if code != http.StatusOK || !strings.Contains(ask, `id="confirm-yes"`) {
		t.Fatalf("unconfirmed write: %d %s", code, ask)
	}
	if ok, _, _ := zc.Exists("/made-in-console"); ok {
		t.Fatal("an unconfirmed write changed the tree")
	}
	form.Set("confirm", "yes")
	if code, res := consoleDo(t, "POST", admin, "/ui/tree/write", consoleUser, consolePass, form); code != http.StatusOK || !strings.Contains(res, "result-ok") {
		t.Fatalf("confirmed write: %d %s", code, res)
	}
	if data, _, err := zc.Get("/made-in-console"); err != nil || string(data) != "hello" {
		t.Fatalf("the console's create: %q %v", data, err)
	}
	// The administrator's identity is the one writes are checked with: a
	// node only another digest may write stays unchanged.
	if _, err := zc.Create("/bobs", nil, 0, gozk.DigestACL(gozk.PermAll, "bob", "pw")); err != nil {
		t.Fatal(err)
	}
	form = url.Values{"op": {"set"}, "path": {"/bobs"}, "data": {"x"}, "csrf": {m[1]}, "confirm": {"yes"}}
	if _, res := consoleDo(t, "POST", admin, "/ui/tree/write", consoleUser, consolePass, form); !strings.Contains(res, "result-error") {
		t.Fatalf("set data on bob's node as alice: %s", res)
	}
}

// Without console_writes the console is read-only, even to an
// administrator.
func TestConsoleReadOnlyByDefault(t *testing.T) {
	s := startTestServer(t, withConsole(false))
	_, page := consoleDo(t, "GET", s.AdminAddr(), "/ui/tree?path=/", consoleUser, consolePass, nil)
	if strings.Contains(page, `id="create-child"`) {
		t.Fatal("a read-only console offers a create form")
	}
	form := url.Values{"op": {"create"}, "path": {"/x"}, "confirm": {"yes"}, "csrf": {"00"}}
	if code, body := consoleDo(t, "POST", s.AdminAddr(), "/ui/tree/write", consoleUser, consolePass, form); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("write to a read-only console: %d %s", code, body)
	}
}

// A wide node is listed a page at a time: the page holds pageSize children
// and a "more" button whose next page follows on; a prefix search lists
// only matching names.
func TestConsolePagesWideNodes(t *testing.T) {
	s := startTestServer(t, withConsole(false))
	fillChildren(t, s, "/wide", 2500)
	admin := s.AdminAddr()
	_, page := consoleDo(t, "GET", admin, "/ui/tree?path=/wide", "", "", nil)
	if n := len(childLink.FindAllString(page, -1)); n != 100 {
		t.Fatalf("first page lists %d children, want 100", n)
	}
	if !strings.Contains(page, "after=c000099") {
		t.Fatalf("first page has no 'more' after c000099:\n%s", page)
	}
	_, next := consoleDo(t, "GET", admin, "/ui/tree/children?path=/wide&after=c000099", "", "", nil)
	if !strings.Contains(next, ">c000100<") || strings.Contains(next, ">c000099<") || !strings.Contains(next, "after=c000199") {
		t.Fatalf("second page:\n%s", next)
	}
	_, found := consoleDo(t, "GET", admin, "/ui/tree?path=/&q=/wide/c00249", "", "", nil)
	if n := len(regexp.MustCompile(`>c00249\d</a>`).FindAllString(found, -1)); n != 10 {
		t.Fatalf("search /wide/c00249 found %d, want 10:\n%s", n, found)
	}
}

// fillChildren creates n children c000000… under parent through the node,
// a thousand per multi.
func fillChildren(t testing.TB, s *Server, parent string, n int) {
	t.Helper()
	create := func(p string) *sm.Create {
		return &sm.Create{OpCode: zkproto.OpCreate, Path: p, ACL: zkproto.OpenACLUnsafe()}
	}
	if res, err := s.Node().ProposeSync(&sm.Command{Header: sm.Header{Time: time.Now().UnixMilli()}, Op: create(parent)}); err != nil || (res.Err != zkproto.ErrOK && res.Err != zkproto.ErrNodeExists) {
		t.Fatalf("create %s: %v %v", parent, res, err)
	}
	for i := 0; i < n; i += 1000 {
		var ops []sm.Op
		for j := i; j < min(n, i+1000); j++ {
			ops = append(ops, create(fmt.Sprintf("%s/c%06d", parent, j)))
		}
		res, err := s.Node().ProposeSync(&sm.Command{Header: sm.Header{Time: time.Now().UnixMilli()}, Op: &sm.Multi{Ops: ops}})
		if err != nil || res.Err != zkproto.ErrOK {
			t.Fatalf("fill %s: %v %v", parent, res, err)
		}
	}
}

// The Tree page shows a znode's quota (limits and use, from
// /zookeeper/quota as zkCli's setquota writes them) and links an
// ephemeral's owner to its row on the Sessions page.
func TestConsoleShowsQuotaAndEphemeralOwner(t *testing.T) {
	s := startTestServer(t, withConsole(false))
	zc, _, err := gozk.Connect([]string{s.ClientAddr()}, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	acl := gozk.WorldACL(gozk.PermAll)
	for _, p := range []string{"/q", "/zookeeper/quota/q"} {
		if _, err := zc.Create(p, nil, 0, acl); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := zc.Create("/zookeeper/quota/q/zookeeper_limits", []byte("count=10,bytes=1000"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/zookeeper/quota/q/zookeeper_stats", []byte("count=1,bytes=0"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := zc.Create("/q/member", []byte("x"), gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, page := consoleDo(t, "GET", s.AdminAddr(), "/ui/tree?path=/q", "", "", nil)
	if !strings.Contains(page, `id="quota"`) || !strings.Contains(page, "count=10,bytes=1000") {
		t.Fatalf("no quota limits on /q's page:\n%s", page)
	}
	_, page = consoleDo(t, "GET", s.AdminAddr(), "/ui/tree?path=/q/member", "", "", nil)
	link := fmt.Sprintf(`<a href="/ui/sessions#s-0x%x">0x%x</a>`, uint64(zc.SessionID()), uint64(zc.SessionID()))
	if !strings.Contains(page, link) {
		t.Fatalf("no link %s to the ephemeral's session:\n%s", link, page)
	}
	_, sessions := consoleDo(t, "GET", s.AdminAddr(), "/ui/sessions", "", "", nil)
	if !strings.Contains(sessions, fmt.Sprintf(`id="s-0x%x"`, uint64(zc.SessionID()))) || !strings.Contains(sessions, "/q/member") {
		t.Fatalf("the session's row with its ephemeral is missing:\n%s", sessions)
	}
}
