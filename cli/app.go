package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Version is zkbridge's release version.
const Version = "0.1.0-dev"

// NewApp returns the zkbridge command-line application writing to out and errOut.
func NewApp(out, errOut io.Writer) *ucli.App {
	return &ucli.App{
		Name:      "zkbridge",
		Usage:     "a ZooKeeper-wire-compatible coordination server",
		Version:   Version,
		Writer:    out,
		ErrWriter: errOut,
		Commands: []*ucli.Command{
			serverCommand(),
			raftCommand(),
			tenantCommand(),
			benchCommand(),
			nativeCommand(),
			cutoverCommand(),
			compatCommand(),
			migrateCommand(),
			shellCommand(), topCommand(),
			versionCommand(),
		},
	}
}

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print zkbridge's version and the ZooKeeper protocol version it speaks",
		Action: func(c *ucli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "zkbridge %s (ZooKeeper client protocol 3.8/3.9)\n", Version)
			return err
		},
	}
}

// Main runs the application with args (os.Args form) and returns the exit code.
func Main(args []string) int {
	app := NewApp(os.Stdout, os.Stderr)
	app.Metadata = map[string]any{mayReexecKey: true}
	if err := app.Run(args); err != nil {
		fmt.Fprintf(os.Stderr, "zkbridge: %v\n", err)
		return 1
	}
	return 0
}

// splitAddrs reads a comma-separated list of addresses ("a,b,c"; blanks
// dropped; empty: none), as every --addr-style flag takes them.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// parsePids reads flag's comma-separated process ids (empty: none).
func parsePids(flag, s string) ([]int, error) {
	var out []int
	for _, p := range splitAddrs(s) {
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--%s: %q is not a process id", flag, p)
		}
		out = append(out, pid)
	}
	return out, nil
}
