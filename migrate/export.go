package migrate

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// ExportOptions shape an online export.
type ExportOptions struct {
	Hosts   []string
	Path    string   // subtree ("/" for all)
	Auth    []string // scheme:credential
	Timeout time.Duration
	// DefaultSessionTimeout is given to sessions the leader tracks but no
	// server holds a connection of (their timeout is not shown anywhere).
	DefaultSessionTimeout int32
	Workers               int
	// Progress, if set, is called with the nodes read so far.
	Progress func(nodes int64)
	// ownSessions are the tool's own sessions (live's), never exported.
	ownSessions []int64
}

// Sink receives an export: sessions first, then nodes, parents first.
type Sink interface {
	Session(Session) error
	Node(*Node) error
}

// Export streams the ensemble into sink: the sessions the four-letter words
// show, then the nodes, parents first; an ephemeral whose owner was not
// among those sessions (created meanwhile) has its session written just
// before it. begin is called with the header (the last zxid before the
// walk) before anything is written; the returned End carries the last
// zxid seen by the end of the walk.
func Export(ctx context.Context, o ExportOptions, begin func(Header) error, sink Sink) (End, error) {
	h := Header{Source: joinHosts(o.Hosts), Path: o.Path, Created: time.Now().UTC().Format(time.RFC3339)}
	var end End
	conn, err := Dial(o.Hosts, o.Auth, o.Timeout)
	if err != nil {
		return end, err
	}
	defer conn.Close()
	state, err := ReadSourceState(o.Hosts, o.DefaultSessionTimeout, o.Timeout, append(o.ownSessions, conn.SessionID())...)
	if err != nil {
		return end, err
	}
	h.LastZxid = state.LastZxid
	if err := begin(h); err != nil {
		return end, err
	}
	for _, s := range sortedSessions(state.Sessions) {
		if err := sink.Session(s); err != nil {
			return end, err
		}
		end.Sessions++
	}
	emit := func(n *Node) error {
		end.LastZxid = max(end.LastZxid, n.Czxid, n.Mzxid, n.Pzxid)
		if n.EphemeralOwner != 0 {
			if _, ok := state.Sessions[n.EphemeralOwner]; !ok {
				state.Sessions[n.EphemeralOwner] = o.DefaultSessionTimeout
				if err := sink.Session(Session{ID: n.EphemeralOwner, Timeout: o.DefaultSessionTimeout}); err != nil {
					return err
				}
				end.Sessions++
			}
		}
		end.Nodes++
		if o.Progress != nil && end.Nodes%1000 == 0 {
			o.Progress(end.Nodes)
		}
		return sink.Node(n)
	}
	tr := &TreeReader{Conn: conn, Workers: o.Workers}
	if o.Path != "/" {
		anc, err := tr.Ancestors(o.Path)
		if err != nil {
			return end, err
		}
		for _, n := range anc {
			if err := emit(n); err != nil {
				return end, err
			}
		}
	}
	if err := tr.Walk(ctx, o.Path, emit); err != nil {
		return end, err
	}
	if o.Progress != nil {
		o.Progress(end.Nodes)
	}
	end.LastZxid = max(end.LastZxid, h.LastZxid)
	return end, nil
}

func sortedSessions(m map[int64]int32) []Session {
	out := make([]Session, 0, len(m))
	for id, to := range m {
		out = append(out, Session{ID: id, Timeout: to})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func joinHosts(h []string) string {
	s := ""
	for i, x := range h {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

// ExportToFile exports into file name and returns the counts. A failed
// export leaves a file without its end record, which import refuses.
func ExportToFile(ctx context.Context, o ExportOptions, name string) (End, error) {
	var w *Writer
	end, err := Export(ctx, o, func(h Header) error {
		var err error
		w, err = Create(name, h)
		return err
	}, writerSink{&w})
	if err != nil {
		if w != nil {
			w.Abort()
		}
		return end, err
	}
	w.end.LastZxid = end.LastZxid
	if err := w.Close(); err != nil {
		return end, fmt.Errorf("write %s: %w", name, err)
	}
	return end, nil
}

// writerSink writes to a Writer created once the header is known.
type writerSink struct{ w **Writer }

func (s writerSink) Session(x Session) error { return (*s.w).Session(x) }
func (s writerSink) Node(n *Node) error      { return (*s.w).Node(n) }
