package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	compat "github.com/zkbridge/zkbridge/compat-tests"
)

func TestCompatList(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := NewApp(&out, &errOut).Run([]string{"zkbridge", "compat", "--list", "--area", "4lw", "--scenario", "wch*"}); err != nil {
		t.Fatalf("compat --list: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{
		"wchs counts data watches only  4lw,exclusive  words: wchs",
		"wchc and wchp                  4lw,exclusive  words: wchc wchp",
		"2 scenarios",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--list output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := NewApp(&out, &errOut).Run([]string{"zkbridge", "compat", "--list"}); err != nil {
		t.Fatal(err)
	}
	if n := len(compat.Scenarios()); !strings.Contains(out.String(), "\n"+strconv.Itoa(n)+" scenarios\n") || n < 200 {
		t.Errorf("--list of %d scenarios ends %q", n, out.String()[max(0, out.Len()-40):])
	}
}

func TestCompatFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--area", "basic"}, "--candidate"},
		{[]string{"--list", "--area", "nosuch"}, `no area "nosuch" (areas: 4lw, acl,`},
		{[]string{"--list", "--scenario", "nothing*like*this"}, "no scenario matches"},
		{[]string{"--candidate", "127.0.0.1:1", "--super-digest", "nocolon"}, "USER:PASSWORD"},
		{[]string{"--candidate", "127.0.0.1:1", "--parallel", "0"}, "--parallel"},
	} {
		var out, errOut bytes.Buffer
		err := NewApp(&out, &errOut).Run(append([]string{"zkbridge", "compat"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compat %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

func TestGlob(t *testing.T) {
	re := globRe("watches/*persistent?")
	for s, want := range map[string]bool{"watches/add a persistent!": true, "watches/persistent": false, "xwatches/a persistentX": false} {
		if re.MatchString(s) != want {
			t.Errorf("%q: %v", s, !want)
		}
	}
}

// TestCompatEndToEnd runs the built binary as an operator would: against a
// zkbridge node with the reference ZooKeeper the tool starts itself (one
// area), then against a given ZooKeeper on a scenario with a documented
// difference, whose exit status depends on --accept-documented.
func TestCompatEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper twice and a zkbridge node")
	}
	bin := buildBinary(t)
	node := startNodeEnv(t, bin, t.TempDir(), freeAddr(t), freeAddr(t), nil,
		"--4lw", "*", "--super-digest", compat.SuperDigest, "--reaper-interval", "1s")
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"compat"}, args...)...)
		cmd.Dir = compat.RepoRoot()
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}

	junit := filepath.Join(t.TempDir(), "compat.xml")
	out, errOut, code := run("--candidate", node.clientAddr, "--area", "basic", "--reaper-interval", "1s", "--junit", junit)
	if code != 0 {
		t.Fatalf("compat --area basic against zkbridge exited %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"reference  127.0.0.1:", "3.8.0", "candidate  " + node.clientAddr,
		"basic               14     14          0       0      0       0", "14 scenarios in"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "starting a ZooKeeper 3.8 as the reference") {
		t.Errorf("stderr: %s", errOut)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 14 || suites.Failures != 0 {
		t.Errorf("junit: %+v %v\n%s", suites, err, b)
	}

	zk, err := compat.StartZooKeeper()
	if err != nil {
		t.Fatalf("start ZooKeeper (run scripts/install-zookeeper.sh): %v", err)
	}
	defer zk.Stop()
	scenario := "acl/exists on a node without READ"
	out, errOut, code = run("--reference", zk.Addr, "--candidate", node.clientAddr, "--scenario", scenario)
	if code != 1 {
		t.Fatalf("a documented difference exited %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"DOCUMENTED " + scenario + " (first difference at step",
		"zkbridge checks READ for exists",
		"!    8   reference:  anon < OK zxid=z1 stat=",
		"         candidate:  anon < NOAUTH zxid=z1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 of 1 scenarios are not equal (0 differ, 1 documented differences, 0 failed)") {
		t.Errorf("stderr: %s", errOut)
	}
	out, errOut, code = run("--reference", zk.Addr, "--candidate", node.clientAddr, "--scenario", scenario, "--accept-documented", "--json")
	if code != 0 {
		t.Fatalf("--accept-documented exited %d\n%s\n%s", code, out, errOut)
	}
	var rep compatReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != compat.Documented || rep.Total.Documented != 1 ||
		!rep.Candidate.Settings.TTL || rep.Candidate.Settings.Super == "" || len(rep.Results[0].Candidate) == 0 {
		t.Errorf("--json report: %+v", rep)
	}
}
