package compattests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShellSASL runs a script through zkCli.sh and zkbridge shell with a
// JAAS Client section (DIGEST-MD5, named by CLIENT_JVMFLAGS as zkCli users
// do) against a SASL-enabled ZooKeeper, and the shell against a
// SASL-enabled zkbridge: the same identities, ACLs and events. A wrong
// password ends the session with AuthFailed on both.
func TestShellSASL(t *testing.T) {
	zkAddr, zbAddr, dir := startSASLPair(t)
	requireTool(t, zkCliPath)
	cmds := []string{
		"whoami",
		"create /saslshell x sasl:bob:cdrwa",
		"getAcl /saslshell",
		"get /saslshell",
		"delete /saslshell",
		"ls /saslshell",
	}
	for _, c := range []struct {
		name, password string
	}{{"good", "bobsecret"}, {"wrong password", "nope"}} {
		t.Run(c.name, func(t *testing.T) {
			jaas := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jaas")
			if err := os.WriteFile(jaas, []byte("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"bob\"\n  password=\""+c.password+"\";\n};\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			flags := "-Djava.security.auth.login.config=" + jaas
			start := time.Now()
			raw, err := zkCliRunFlags(zkAddr, cmds, flags)
			if err != nil {
				t.Fatalf("zkCli.sh: %v\n%s", err, raw)
			}
			want := fromCreate(shellNormalise(raw, zkAddr, cmds, start), c.password == "nope")
			t.Setenv("CLIENT_JVMFLAGS", flags)
			for name, addr := range map[string]string{"ZooKeeper": zkAddr, "zkbridge": zbAddr} {
				start = time.Now()
				out, _ := shellRun(addr, cmds)
				got := fromCreate(shellNormalise(out, addr, cmds, start), c.password == "nope")
				if d := diff(want, got); d != "" {
					t.Errorf("zkbridge shell against %s differs from zkCli.sh against ZooKeeper:\n%s", name, d)
				}
			}
			if testing.Verbose() {
				t.Logf("zkCli.sh:\n%s", strings.Join(want, "\n"))
			}
		})
	}
}

// zkCliRunFlags is zkCliRun with extra JVM flags (CLIENT_JVMFLAGS).
func zkCliRunFlags(addr string, cmds []string, flags string) (string, error) {
	var in strings.Builder
	for _, c := range cmds {
		in.WriteString(c + "\nprintwatches\n")
	}
	in.WriteString("quit\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-XX:TieredStopAtLevel=1 -Xss1m "+flags)
	cmd.Stdin = strings.NewReader(in.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// fromCreate drops what precedes "> create" when the password is wrong:
// zkCli's first command races the refusal of its SASL exchange.
func fromCreate(lines []string, cut bool) []string {
	if !cut {
		return lines
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "> create") {
			return lines[i:]
		}
	}
	return lines
}
