package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The dragonboat panics that mean this node's disk lost what it synced
// become one line that says the node refuses; others stay panics.
func TestRefusalOfDamagedState(t *testing.T) {
	pebbleErr := errors.New("sm: open pebble data/state/db-1: pebble: malformed manifest file \"MANIFEST-000001\"")
	opened := fmt.Errorf("[00001:00002] OpenOnDiskStateMachine failed: %w", pebbleErr)
	recovered := fmt.Errorf("[00001:00002] recover failed: %w", errors.New("sm: checksum mismatch (corrupt snapshot)"))
	for _, c := range []struct {
		name   string
		format string
		args   []any
		want   string // in the line; "" = not a refusal
	}{
		{"state behind its snapshot", "%s, ss.OnDiskIndex (%d) > s.onDiskInitIndex (%d)", []any{"[00001:00002]", uint64(30704), uint64(29377)},
			"state opened at index 29377, but its last Raft snapshot recorded the state durable up to 30704"},
		{"state cannot be opened", "%+v", []any{opened}, "malformed manifest file"},
		{"received snapshot corrupt", "%+v", []any{recovered}, "checksum mismatch (corrupt snapshot)"},
		{"lost log entries", "invalid commitTo index %d, lastIndex() %d", []any{uint64(29066), uint64(29062)}, "its Raft log lost synced entries"},
		{"another panic", "%+v", []any{errors.New("something else")}, ""},
		{"another format", "first index %d, on disk index %d", []any{uint64(1), uint64(2)}, ""},
	} {
		msg, ok := refusal(c.format, c.args...)
		if c.want == "" {
			if ok {
				t.Errorf("%s: refused with %q, want a panic", c.name, msg)
			}
			continue
		}
		if !ok || !strings.Contains(msg, c.want) || !strings.Contains(msg, "refuses to") || strings.Contains(msg, "\n") {
			t.Errorf("%s: refusal %q (%v), want one line containing %q and the refusal", c.name, msg, ok, c.want)
		}
	}
}
