package shell

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/shell/zkclient"
	"github.com/zkbridge/zkbridge/zkproto"
)

func TestSplitLine(t *testing.T) {
	for line, want := range map[string][]string{
		`create /a "two words" world:anyone:r`: {"create", "/a", "two words", "world:anyone:r"},
		`set /a 'x  y'`:                        {"set", "/a", "x  y"},
		`  ls   -R   / `:                       {"ls", "-R", "/"},
		`create /a ""`:                         {"create", "/a", ""},
	} {
		if got := splitLine(line); !reflect.DeepEqual(got, want) {
			t.Errorf("splitLine(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	specs := []optSpec{{"s", false}, {"v", true}, {"w", false}}
	for _, c := range []struct {
		words []string
		args  []string
		opts  map[string]string
		err   string
	}{
		{words: []string{"set", "-s", "-v", "3", "/a", "x"}, args: []string{"set", "/a", "x"}, opts: map[string]string{"s": "", "v": "3"}},
		{words: []string{"set", "/a", "x", "-v", "-1"}, args: []string{"set", "/a", "x"}, opts: map[string]string{"v": "-1"}},
		{words: []string{"set", "-sv", "1", "/a"}, args: []string{"set", "/a"}, opts: map[string]string{"s": "", "v": "1"}},
		{words: []string{"set", "-v5", "/a"}, args: []string{"set", "/a"}, opts: map[string]string{"v": "5"}},
		{words: []string{"get", "-sw", "/a"}, args: []string{"get", "/a"}, opts: map[string]string{"s": "", "w": ""}},
		{words: []string{"get", "--", "-s"}, args: []string{"get", "-s"}, opts: map[string]string{}},
		{words: []string{"set", "-v"}, err: "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"},
		{words: []string{"get", "-x", "/a"}, err: "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
	} {
		p, err := parseOptions(c.words, specs)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q", c.words, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(p.args, c.args) || !reflect.DeepEqual(p.opts, c.opts) {
			t.Errorf("%q: %v %q %v, want %q %v", c.words, err, p.args, p.opts, c.args, c.opts)
		}
	}
}

func TestFormats(t *testing.T) {
	if got := zkproto.PermString(zkproto.PermAll); got != "cdrwa" {
		t.Errorf("PermString(all) = %q", got)
	}
	var b bytes.Buffer
	printACL(&b, []zkproto.ACL{{Perms: zkproto.PermRead | zkproto.PermAdmin, ID: zkproto.Id{Scheme: "digest", ID: "u:x"}}})
	if b.String() != "'digest,'u:x\n: ra\n" {
		t.Errorf("printACL = %q", b.String())
	}
	b.Reset()
	acl := parseACL("world:anyone:rz,bad,ip:10.0.0.1:cdrwa", &b)
	if b.String() != "Unknown perm type: z\nbad does not have the form scheme:id:perm\n" || len(acl) != 2 || acl[1].ID.ID != "10.0.0.1" {
		t.Errorf("parseACL: %v, %q", acl, b.String())
	}
	st := parseStatsTrack("count=5,bytes=100=;byteHardLimit=-1;countHardLimit=-1")
	if st.String() != "count=5,bytes=100=;byteHardLimit=-1;countHardLimit=-1" || st.get("bytes") != 100 {
		t.Errorf("statsTrack round trip: %q", st.String())
	}
	if got := clientConfigString("server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nversion=100000000"); got != "100000000 127.0.0.1:2181" {
		t.Errorf("clientConfigString = %q", got)
	}
	if got := formatData([]byte{0xff, 0}, formatAuto); got != "00000000  ff 00                                             |..|" {
		t.Errorf("binary data = %q", got)
	}
	if got := formatData(nil, formatAuto); got != "null" {
		t.Errorf("nil data = %q", got)
	}
}

func TestValidatePath(t *testing.T) {
	for path, want := range map[string]string{
		"/a":     "",
		"/":      "",
		"a":      "Path must start with / character",
		"":       "Path length must be > 0",
		"/a/":    "Path must not end with / character",
		"/a//b":  `Invalid path string "/a//b" caused by empty node name specified @3`,
		"/a/../": "Path must not end with / character",
		"/a/..":  `Invalid path string "/a/.." caused by relative paths not allowed @4`,
		"/a/.":   `Invalid path string "/a/." caused by relative paths not allowed @3`,
		"/a\x01": `Invalid path string "/a` + "\x01" + `" caused by invalid character @2`,
	} {
		err := zkclient.ValidatePath(path)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("ValidatePath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	o, cmd, err := ParseArgs([]string{"-server", "a:1,b:2/app", "-timeout", "5000", "-r", "ls", "-R", "/"})
	if err != nil || o.Server != "a:1,b:2/app" || o.Timeout.Milliseconds() != 5000 || !o.ReadOnly || !reflect.DeepEqual(cmd, []string{"ls", "-R", "/"}) {
		t.Fatalf("ParseArgs: %+v %q %v", o, cmd, err)
	}
	if _, _, err := ParseArgs([]string{"-server"}); err == nil || err.Error() != "Error: no argument found for option -server" {
		t.Fatalf("missing -server value: %v", err)
	}
	servers, chroot, err := zkclient.ParseConnectString("a:1,b/app/x")
	if err != nil || !reflect.DeepEqual(servers, []string{"a:1", "b:2181"}) || chroot != "/app/x" {
		t.Fatalf("ParseConnectString: %q %q %v", servers, chroot, err)
	}
}

func TestPrettyHexDump(t *testing.T) {
	want := "         +-------------------------------------------------+\n" +
		"         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n" +
		"+--------+-------------------------------------------------+----------------+\n" +
		"|00000000| 68 65 6c 6c 6f 00 77 6f 72 6c 64 21 0a 7f 80 ff |hello.world!....|\n" +
		"|00000010| 41                                              |A               |\n" +
		"+--------+-------------------------------------------------+----------------+"
	if got := prettyHexDump([]byte("hello\x00world!\n\x7f\x80\xffA")); got != want {
		t.Errorf("prettyHexDump:\n%s\nwant\n%s", got, want)
	}
	if prettyHexDump(nil) != "" {
		t.Error("empty data dumps as nothing")
	}
}
