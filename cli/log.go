package cli

import (
	"os"
	"time"

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
	var log zerolog.Logger
	if format == "console" {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339})
	} else {
		log = zerolog.New(os.Stderr)
	}
	return log.Level(level).With().Timestamp().Logger()
}
