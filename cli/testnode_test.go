package cli

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zkbridge/zkbridge/server"
)

// startTestServer runs a one-node zkbridge with cfg in the test process,
// started within startWithin, and stops it when the test ends.
func startTestServer(t *testing.T, cfg server.Config, startWithin time.Duration) *server.Server {
	t.Helper()
	srv, err := server.New(cfg, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startWithin)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}
