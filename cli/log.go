package cli

import (
	"os"

	"github.com/rs/zerolog"
	ucli "github.com/urfave/cli/v2"
)

func logFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
		&ucli.StringFlag{Name: "log-format", Usage: "json or console (default: console on a terminal, else json)"},
	}
}

// newLogger builds the structured logger: JSON by default, console when
// stderr is a terminal or --log-format console.
func newLogger(c *ucli.Context) zerolog.Logger {
	level, err := zerolog.ParseLevel(c.String("log-level"))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	format := c.String("log-format")
	if format == "" {
		format = "json"
		if isTerminal(os.Stderr) {
			format = "console"
		}
	}
	// Milliseconds: an election, a failover or a slow fsync is told apart
	// only below the second.
	const stamp = "2006-01-02T15:04:05.000Z07:00"
	zerolog.TimeFieldFormat = stamp
	var log zerolog.Logger
	if format == "console" {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: stamp})
	} else {
		log = zerolog.New(os.Stderr)
	}
	return log.Level(level).With().Timestamp().Logger()
}
