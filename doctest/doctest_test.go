//go:build linux

package doctest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// defaultTimeout bounds a block without timeout=.
const defaultTimeout = 60 * time.Second

// wellKnownPorts are the ports a runnable block may name; each is
// rewritten to a free loopback port (see the package comment).
// They are 2181-2189 (clients), 2190-2199 (the native API), 2888-2899
// (Raft), 3888-3899 (ZooKeeper's election) and 8080-8089 (admin HTTP).
var wellKnownPorts = regexp.MustCompile(`\b(218[1-9]|219[0-9]|28(8[89]|9[0-9])|38(8[89]|9[0-9])|808[0-9])\b`)

// shellLangs are the fence languages that must be runnable or say why not.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// block is one fenced code block of a Markdown file.
type block struct {
	file     string // relative to the repository root
	line     int    // line of the opening fence, 1-based
	lang     string
	runnable bool
	server   bool
	needs    []string
	timeout  time.Duration
	body     string
}

func (b block) name() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var fenceRE = regexp.MustCompile("^ {0,3}(```+|~~~+)(.*)$")

// parseBlocks returns file's fenced blocks, and an error for a runnable
// block with an unknown option or a shell block that is neither runnable
// nor preceded by a <!-- not run: ... --> comment.
func parseBlocks(file, text string) ([]block, []error) {
	var (
		blocks []block
		errs   []error
		lines  = strings.Split(text, "\n")
	)
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, info := m[1], strings.Fields(m[2])
		b := block{file: file, line: i + 1, timeout: defaultTimeout}
		if len(info) > 0 {
			b.lang = info[0]
		}
		for j, opt := range info[min(1, len(info)):] {
			switch {
			case opt == "runnable" && j == 0:
				b.runnable = true
			case !b.runnable:
				// Not ours: another tool's info string.
			case opt == "server":
				b.server = true
			case strings.HasPrefix(opt, "needs="):
				b.needs = append(b.needs, strings.Split(strings.TrimPrefix(opt, "needs="), ",")...)
			case strings.HasPrefix(opt, "timeout="):
				d, err := time.ParseDuration(strings.TrimPrefix(opt, "timeout="))
				if err != nil || d <= 0 {
					errs = append(errs, fmt.Errorf("%s: bad %s", b.name(), opt))
				}
				b.timeout = d
			default:
				errs = append(errs, fmt.Errorf("%s: unknown option %q after runnable", b.name(), opt))
			}
		}
		if b.runnable && !shellLangs[b.lang] && b.lang != "go" {
			errs = append(errs, fmt.Errorf("%s: runnable %q block: only shell and go blocks run", b.name(), b.lang))
		}
		if shellLangs[b.lang] && !b.runnable && !notRunComment(lines[:i]) {
			errs = append(errs, fmt.Errorf("%s: a %s block is neither runnable nor says why not in <!-- not run: ... --> just above it", b.name(), b.lang))
		}
		// The body runs to a closing fence of the same kind, at least as long.
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			l := strings.TrimLeft(lines[i], " ")
			if strings.HasPrefix(l, fence[:1]) && strings.Trim(l, fence[:1]+" ") == "" && len(strings.TrimRight(l, " ")) >= len(fence) {
				closed = true
				break
			}
			body = append(body, lines[i])
		}
		if !closed {
			errs = append(errs, fmt.Errorf("%s: unclosed fence", b.name()))
		}
		b.body = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks, errs
}

// notRunComment reports whether the lines before a fence end, blank lines
// aside, with an HTML comment that says "not run:".
func notRunComment(before []string) bool {
	i := len(before) - 1
	for i >= 0 && strings.TrimSpace(before[i]) == "" {
		i--
	}
	if i < 0 || !strings.HasSuffix(strings.TrimSpace(before[i]), "-->") {
		return false
	}
	var comment []string
	for ; i >= 0; i-- {
		comment = append([]string{before[i]}, comment...)
		if strings.Contains(before[i], "<!--") {
			break
		}
	}
	return strings.Contains(strings.Join(comment, " "), "not run:")
}

// docFiles are the files whose blocks run: README.md and docs/*.md.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	return files
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: the test runs from doctest/", root)
	}
	return root
}

func allBlocks(t *testing.T, root string) []block {
	t.Helper()
	var all []block
	var errs []error
	for _, f := range docFiles(t, root) {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		bs, es := parseBlocks(f, string(text))
		all = append(all, bs...)
		errs = append(errs, es...)
	}
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	return all
}

// env is what every block shares: the binary and the PATH around it.
type env struct {
	root  string
	bin   string // the zkbridge binary
	path  string // PATH for blocks
	goMod []byte // the repository's go.mod, module renamed, for go blocks
	goSum []byte
}

func setup(t *testing.T, root string) *env {
	t.Helper()
	dir := t.TempDir()
	bindir := filepath.Join(dir, "bin")
	bin := filepath.Join(bindir, "zkbridge")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s . (in the repository root): %v\n%s", bin, err, out)
	}
	path := bindir
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		shim := filepath.Join(dir, "python")
		if err := os.MkdirAll(shim, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/usr/bin/python3", filepath.Join(shim, "python3")); err != nil {
			t.Fatal(err)
		}
		path += string(os.PathListSeparator) + shim
	}
	path += string(os.PathListSeparator) + os.Getenv("PATH")

	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module zkbridgedoc"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{root: root, bin: bin, path: path, goMod: mod, goSum: sum}
}

// TestDocs runs every runnable block of README.md and docs/*.md.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the documentation's commands start servers and clients")
	}
	root := repoRoot(t)
	blocks := allBlocks(t, root)
	var run []block
	for _, b := range blocks {
		if b.runnable {
			run = append(run, b)
		}
	}
	if len(run) == 0 {
		t.Fatal("no runnable block in README.md or docs/*.md: is the marker (```sh runnable) misspelt?")
	}
	e := setup(t, root)
	start := time.Now()
	t.Run("blocks", func(t *testing.T) {
		for _, b := range run {
			t.Run(b.name(), func(t *testing.T) {
				t.Parallel()
				runBlock(t, e, b)
			})
		}
	})
	t.Logf("%d runnable blocks of %d in %v", len(run), len(blocks), time.Since(start).Round(time.Millisecond))
}

// TestMarkers checks the parser on the conventions the package comment
// describes.
func TestMarkers(t *testing.T) {
	doc := "" +
		"```sh runnable server needs=nc,kazoo timeout=90s\n" +
		"echo srvr | nc 127.0.0.1 2181\n" +
		"```\n" +
		"<!-- not run: it takes an hour -->\n\n" +
		"```sh\n" +
		"make forever\n" +
		"```\n" +
		"```yaml\n" +
		"a: 1\n" +
		"```\n" +
		"````go runnable\n" +
		"```\n" +
		"````\n"
	bs, errs := parseBlocks("x.md", doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(bs) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(bs), bs)
	}
	b := bs[0]
	if !b.runnable || !b.server || b.timeout != 90*time.Second || strings.Join(b.needs, " ") != "nc kazoo" || b.line != 1 {
		t.Errorf("first block: %+v", b)
	}
	if bs[1].runnable || bs[2].runnable || !bs[3].runnable || bs[3].body != "```\n" {
		t.Errorf("blocks: %+v", bs[1:])
	}
	for _, bad := range []string{
		"```sh\nls\n```\n",                       // shell, not runnable, no reason
		"<!-- a comment -->\n```sh\nls\n```\n",   // a comment without "not run:"
		"```sh runnable sever\nls\n```\n",        // a typo
		"```yaml runnable\na: 1\n```\n",          // not a language that runs
		"```sh runnable timeout=soon\nls\n```\n", // a bad duration
		"```sh runnable\nls\n",                   // unclosed
	} {
		if _, errs := parseBlocks("x.md", bad); len(errs) == 0 {
			t.Errorf("no error for %q", bad)
		}
	}

	ports := map[string]string{"2181": "40001", "8080": "40002"}
	got := rewritePorts("nc 127.0.0.1 2181; curl localhost:8080/x; a=21810 b=2181x clientPort=2181\n", ports, func() string { return "49999" })
	want := "nc 127.0.0.1 40001; curl localhost:40002/x; a=21810 b=2181x clientPort=40001\n"
	if got != want {
		t.Errorf("rewritePorts:\n got %q\nwant %q", got, want)
	}
}

// rewritePorts replaces every well-known port in s by its entry in ports,
// adding one from next for a port not yet there.
func rewritePorts(s string, ports map[string]string, next func() string) string {
	return wellKnownPorts.ReplaceAllStringFunc(s, func(p string) string {
		if _, ok := ports[p]; !ok {
			ports[p] = next()
		}
		return ports[p]
	})
}

// freePort returns a loopback port that was free a moment ago, never one
// returned before in this process. It is drawn at random below the
// kernel's ephemeral range (ip_local_port_range), where neither another
// test's bind to port 0 nor a client connection's local port can take it
// between this check and the server's bind; without room there, the
// kernel picks one.
func freePort(t *testing.T) string {
	t.Helper()
	lo, hi := 10000, ephemeralLow()
	for attempt := 0; ; attempt++ {
		addr := "127.0.0.1:0"
		if hi-lo >= 1000 && attempt < 1000 {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				t.Fatal(err)
			}
			continue // taken
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		if !usedPorts.claim(port) {
			return port
		}
	}
}

// ephemeralLow is the lowest port the kernel hands out on its own, or 0
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

var usedPorts = portSet{m: map[string]bool{}}

type portSet struct {
	mu sync.Mutex
	m  map[string]bool
}

// claim marks port as handed out and reports whether it already was.
func (s *portSet) claim(port string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.m[port]
	s.m[port] = true
	return was
}

func runBlock(t *testing.T, e *env, b block) {
	for _, n := range b.needs {
		if reason := missing(e, n); reason != "" {
			t.Skipf("%s: needs %s: %s", b.name(), n, reason)
		}
	}
	work := t.TempDir()
	tmp := t.TempDir()
	linkRepo(t, e.root, work)

	ports := map[string]string{}
	next := func() string { return freePort(t) }
	var srvLog string
	if b.server {
		for _, p := range []string{"2181", "8080", "2888", "2191"} {
			ports[p] = next()
		}
		srvLog = startServer(t, e, ports)
	}
	body := rewritePorts(b.body, ports, next)

	script := body
	if b.lang == "go" {
		mod := filepath.Join(work, "doc-program")
		if err := os.MkdirAll(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"go.mod": e.goMod, "go.sum": e.goSum, "main.go": []byte(body)} {
			if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script = "cd doc-program\ngo run .\n"
	}
	scriptFile := filepath.Join(tmp, "block.sh")
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	outFile, err := os.Create(filepath.Join(tmp, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()

	marker := fmt.Sprintf("%d-%s", os.Getpid(), strings.NewReplacer("/", "_", ":", "_").Replace(b.name()))
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", scriptFile)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"PATH="+e.path,
		"TMPDIR="+tmp,
		"ZKBRIDGE_BIN="+e.bin,
		"ZKBRIDGE_DOCTEST="+marker,
	)
	cmd.Stdin = nil
	cmd.Stdout = outFile // a file, not a pipe: a background child must not hold Wait
	cmd.Stderr = outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Whatever happens, nothing of the block outlives it (t.Cleanup runs
	// before the temporary directories are removed: it is registered later).
	t.Cleanup(func() { killMarked(marker) })

	began := time.Now()
	runErr := cmd.Run()
	took := time.Since(began).Round(time.Millisecond)
	// What still runs a second after the block ended, it left behind.
	var left []string
	if len(marked(marker)) > 0 {
		time.Sleep(time.Second)
		left = marked(marker)
	}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	killMarked(marker)

	output := func() string {
		out, _ := os.ReadFile(outFile.Name())
		const max = 24 << 10
		if len(out) > max {
			out = append([]byte("…\n"), out[len(out)-max:]...)
		}
		s := fmt.Sprintf("--- block as run (ports rewritten; bash line N is file line %d+N) ---\n%s--- output ---\n%s", b.line, script, out)
		if srvLog != "" {
			s += "--- the test's server log (tail) ---\n" + tail(srvLog, 40)
		}
		return s + blockLogs(work, tmp)
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		t.Fatalf("%s: block timed out after %v\n%s", b.name(), b.timeout, output())
	case runErr != nil:
		t.Fatalf("%s: block failed (%v) after %v\n%s", b.name(), runErr, took, output())
	case len(left) > 0:
		t.Fatalf("%s: block left processes running (a user following it would be left with them): %s\n%s", b.name(), strings.Join(left, "; "), output())
	}
	if testing.Verbose() {
		t.Logf("%s: ok in %v\n%s", b.name(), took, output())
	} else {
		t.Logf("%s: ok in %v", b.name(), took)
	}
}

// missing says why a needed tool is not there, or "" when it is.
func missing(e *env, need string) string {
	if need == "kazoo" {
		python := lookPath("python3", e.path)
		if python == "" {
			return "no python3 on PATH"
		}
		cmd := exec.Command(python, "-c", "import kazoo")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("python3 cannot import kazoo (%v: %s); scripts/install-zookeeper.sh installs python3-kazoo", err, bytes.TrimSpace(out))
		}
		return ""
	}
	if strings.Contains(need, "/") {
		if st, err := os.Stat(need); err != nil || st.IsDir() {
			return "not installed (scripts/install-zookeeper.sh installs ZooKeeper's files)"
		}
		return ""
	}
	if lookPath(need, e.path) == "" {
		return "not on PATH"
	}
	return ""
}

// lookPath finds the executable name in the directories of path (the
// blocks' PATH, not the test's), or returns "".
func lookPath(name, path string) string {
	for _, d := range filepath.SplitList(path) {
		f := filepath.Join(d, name)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f
		}
	}
	return ""
}

// linkRepo links every top-level entry of root but bin and zkbridge-data
// into dir, so that dir stands in for the repository root.
func linkRepo(t *testing.T, root, dir string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		switch en.Name() {
		case "bin", "zkbridge-data", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(root, en.Name()), filepath.Join(dir, en.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// startServer starts a node as `make run` does, on the block's 2181, 8080,
// 2888 and 2191 (the native API), waits until it is ready and stops it at
// clean-up. It returns the path of its log.
func startServer(t *testing.T, e *env, ports map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := "127.0.0.1:" + ports["8080"]
	cmd := exec.Command(e.bin, "server",
		"--client-addr", "127.0.0.1:"+ports["2181"],
		"--admin-addr", admin,
		"--peer-addr", "127.0.0.1:"+ports["2888"],
		"--native-addr", "127.0.0.1:"+ports["2191"],
		"--data-dir", filepath.Join(dir, "data"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := client.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return logPath
			}
		}
		select {
		case <-exited:
			t.Fatalf("the test's zkbridge server exited before it was ready:\n%s", tail(logPath, 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test's zkbridge server was not ready within 30 s:\n%s", tail(logPath, 40))
		}
	}
}

// marked returns the live processes whose environment carries
// ZKBRIDGE_DOCTEST=marker, as "pid N: command line".
func marked(marker string) []string {
	want := []byte("\x00ZKBRIDGE_DOCTEST=" + marker + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, environ...), 0), want) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		found = append(found, fmt.Sprintf("pid %d: %s", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))))
	}
	return found
}

// killMarked kills every process marked(marker) finds.
func killMarked(marker string) {
	for _, p := range marked(marker) {
		var pid int
		if _, err := fmt.Sscanf(p, "pid %d:", &pid); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// blockLogs returns the tails of the *.log files a block left in its
// directories (its servers' stderr, local-cluster.sh's and
// start-zookeeper.sh's logs), for a failure's report.
func blockLogs(dirs ...string) string {
	var s string
	n := 0
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") || n >= 8 {
				return nil
			}
			n++
			rel, _ := filepath.Rel(dir, path)
			s += fmt.Sprintf("--- %s (tail) ---\n%s", rel, tail(path, 20))
			return nil
		})
	}
	return s
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestLinks checks every relative link of README.md and docs/*.md: the
// file it names exists and, with a #fragment, has a heading of that
// anchor (GitHub's: lower case, punctuation dropped, spaces to hyphens).
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		text, err := os.ReadFile(file)
		if err == nil {
			blocks, _ := parseBlocks(file, string(text))
			inBlock := map[int]bool{}
			for _, b := range blocks {
				for i := 0; i <= strings.Count(b.body, "\n"); i++ {
					inBlock[b.line+i] = true
				}
			}
			for i, l := range strings.Split(string(text), "\n") {
				if strings.HasPrefix(l, "#") && !inBlock[i+1] {
					a[slug(strings.TrimLeft(l, "# "))] = true
				}
			}
		}
		anchors[file] = a
		return a
	}
	checked := 0
	for _, f := range docFiles(t, root) {
		path := filepath.Join(root, f)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(text), "\n") {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				checked++
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", f, i+1, target)
						continue
					}
				}
				if frag != "" && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link to %s: no heading with that anchor", f, i+1, target)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no link found: is the pattern wrong?")
	}
	for h, want := range map[string]string{
		"Where one request's time goes: the disk and two shared cores (2026-12-06)": "where-one-requests-time-goes-the-disk-and-two-shared-cores-2026-12-06",
		"What create@1's tail is made of, request by request (2026-12-06)":          "what-create1s-tail-is-made-of-request-by-request-2026-12-06",
		"`zoo.cfg`, as is": "zoocfg-as-is",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
