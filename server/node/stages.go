package node

import (
	"context"

	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	"github.com/lni/dragonboat/v4/raftpb"

	"github.com/zkbridge/zkbridge/server/stagetrace"
)

// The replicated core's probes of the write stages (stagetrace, off
// unless ZKBRIDGE_WRITE_STAGES=1): the data shard's log saves and applies
// here and in raft.go, and its Raft messages at the peer transport, which
// stagedTransport wraps.

// traceSave records a log save that took start..end: of new entries, or
// of the Raft state alone (a commit index moving on, saved before the
// entries it commits are applied).
func traceSave(updates []raftpb.Update, start, end int64) {
	for _, u := range updates {
		switch {
		case u.ShardID != dataShard:
		case len(u.EntriesToSave) > 0:
			stagetrace.AddEvent(stagetrace.Event{Kind: stagetrace.Save, T: start, T2: end,
				Index: u.EntriesToSave[len(u.EntriesToSave)-1].Index, Commit: u.State.Commit})
		case !raftpb.IsEmptyState(u.State):
			stagetrace.AddEvent(stagetrace.Event{Kind: stagetrace.SaveState, T: start, T2: end, Commit: u.State.Commit})
		}
	}
}

// traceMessages records the data shard's messages of a batch.
func traceMessages(kind string, b raftpb.MessageBatch, now int64) {
	for _, m := range b.Requests {
		if m.ShardID != dataShard {
			continue
		}
		e := stagetrace.Event{Kind: kind, T: now, Msg: m.Type.String(), Index: m.LogIndex, Commit: m.Commit, N: len(m.Entries)}
		if kind == stagetrace.Send {
			e.Peer = m.To
		} else {
			e.Peer = m.From
		}
		if len(m.Entries) > 0 {
			e.Index = m.Entries[len(m.Entries)-1].Index
		}
		stagetrace.AddEvent(e)
	}
}

// stagedTransportFactory wraps the peer transport's factory so that the
// data shard's messages are traced as they are sent and received.
type stagedTransportFactory struct{ inner config.TransportFactory }

func (f stagedTransportFactory) Create(nhc config.NodeHostConfig, onBatch raftio.MessageHandler, onChunk raftio.ChunkHandler) raftio.ITransport {
	recv := func(b raftpb.MessageBatch) {
		if stagetrace.On() {
			traceMessages(stagetrace.Recv, b, stagetrace.Now())
		}
		onBatch(b)
	}
	return stagedTransport{ITransport: f.inner.Create(nhc, recv, onChunk)}
}

func (f stagedTransportFactory) Validate(addr string) bool { return f.inner.Validate(addr) }

type stagedTransport struct{ raftio.ITransport }

func (t stagedTransport) GetConnection(ctx context.Context, target string) (raftio.IConnection, error) {
	c, err := t.ITransport.GetConnection(ctx, target)
	if err != nil {
		return nil, err
	}
	return stagedConn{IConnection: c}, nil
}

type stagedConn struct{ raftio.IConnection }

func (c stagedConn) SendMessageBatch(b raftpb.MessageBatch) error {
	if stagetrace.On() {
		traceMessages(stagetrace.Send, b, stagetrace.Now())
	}
	return c.IConnection.SendMessageBatch(b)
}
