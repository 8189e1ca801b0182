package node

import (
	"errors"
	"fmt"
	"strings"
)

// refusal recognises the dragonboat panics that mean this node's own disk
// no longer holds what it once synced, and returns the one line a node
// that refuses to start on it prints instead of a panic stack trace. Raft
// cannot repair such a node in place; its peers can rebuild it
// (rebuildSteps). Serving is never an option: the state would be wrong.
func refusal(format string, args ...any) (string, bool) {
	switch {
	case strings.HasPrefix(format, "invalid commitTo index"):
		// The leader tells a follower to commit no further than the
		// follower acknowledged; a commit past the follower's last entry
		// means its log lost entries after it synced and acknowledged them
		// (a disk that did not keep what it said was synced, a file cut by
		// hand).
		return fmt.Sprintf("raft log: the leader committed an entry this node acknowledged but no longer has ("+format+"): its Raft log lost synced entries; this node refuses to serve", args...), true
	case strings.Contains(format, "ss.OnDiskIndex (%d) > s.onDiskInitIndex (%d)") && len(args) == 3:
		// The state machine (Pebble under the data directory's state/)
		// opened at an older index than the last snapshot recorded as
		// durable, and the Raft log before that snapshot is compacted
		// away: the state lost synced writes (a damaged WAL that Pebble
		// replayed only up to the damage, an older copy put back).
		return fmt.Sprintf("state machine: this node's state opened at index %v, but its last Raft snapshot recorded the state durable up to %v and the log before it is compacted: the state directory lost synced data; this node refuses to start on it", args[2], args[1]), true
	case format == "%+v" && len(args) == 1:
		// A state directory Pebble cannot open (a garbled CURRENT,
		// MANIFEST or WAL) or a received snapshot that fails its checksum.
		err, ok := args[0].(error)
		if !ok {
			return "", false
		}
		text := err.Error() // the messages without the attached stack traces
		if strings.Contains(text, "no space left on device") {
			// Not damage: nothing to rebuild (no hint), and no stack trace.
			return "", false
		}
		for _, what := range []string{"OpenOnDiskStateMachine failed", "recover failed"} {
			if strings.Contains(text, what) {
				return fmt.Sprintf("state machine: this node's state cannot be opened (%s): its state directory or snapshot is damaged; this node refuses to start on it", oneLine(errors.Unwrap(err), text)), true
			}
		}
	}
	return "", false
}

// oneLine is err's message (or fallback) on one line.
func oneLine(err error, fallback string) string {
	text := fallback
	if err != nil {
		text = err.Error()
	}
	return strings.Join(strings.Fields(text), " ")
}
