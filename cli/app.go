package cli

import (
	"fmt"
	"io"
	"os"

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
			benchCommand(),
			nativeCommand(),
			cutoverCommand(),
			compatCommand(),
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
