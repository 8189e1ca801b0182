package stagetrace

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
)

// Stage is one stage of a write across the writes of a breakdown, in µs.
type Stage struct {
	Name string  `json:"name"`
	Who  string  `json:"who"` // "zkbridge", "dragonboat", "disk", "transport", "total"
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
}

// Table is a breakdown: the stages of the writes served by one node.
type Table struct {
	// Serving is the replica the client was connected to, Leader the
	// leader's; Writes the writes joined across the nodes.
	Serving uint64  `json:"serving"`
	Leader  uint64  `json:"leader"`
	Writes  int     `json:"writes"`
	Stages  []Stage `json:"stages"`
	// Logs is each node's Raft log and apply work over the same time:
	// at many writes in flight, what bounds a node's pipeline.
	Logs []NodeLog `json:"logs"`
}

// NodeLog is one node's log saves and applies over a breakdown's time.
type NodeLog struct {
	Replica uint64 `json:"replica"`
	// SavesPerSec: log saves with new entries (each one fsync) per second;
	// EntriesPerSave their mean batch; SaveBusy the share of the time the
	// step worker spent in them (it handles nothing else meanwhile);
	// SaveMean their mean duration in µs.
	SavesPerSec    float64 `json:"saves_per_sec"`
	EntriesPerSave float64 `json:"entries_per_save"`
	SaveBusy       float64 `json:"save_busy"`
	SaveMean       float64 `json:"save_mean_us"`
	// The same for the state machine's applies.
	AppliesPerSec   float64 `json:"applies_per_sec"`
	EntriesPerApply float64 `json:"entries_per_apply"`
	ApplyBusy       float64 `json:"apply_busy"`
}

// nodeLog sums a node's saves and applies that started within [from, to].
func nodeLog(replica uint64, n *nodeEvents, from, to int64) NodeLog {
	l := NodeLog{Replica: replica}
	within := func(s series) (series, float64) {
		var out series
		var busy float64
		for _, e := range s {
			if e.T >= from && (to == 0 || e.T <= to) {
				out = append(out, e)
				busy += float64(e.T2 - e.T)
			}
		}
		return out, busy
	}
	saves, saveBusy := within(n.saves)
	applies, applyBusy := within(n.applies)
	if len(saves) < 2 {
		return l
	}
	span := float64(saves[len(saves)-1].T2 - saves[0].T)
	if to != 0 && from != 0 {
		span = float64(to - from)
	}
	entries := float64(saves[len(saves)-1].Index - saves[0].Index)
	l.SavesPerSec = float64(len(saves)) / span * 1e9
	l.EntriesPerSave = entries / float64(len(saves)-1)
	l.SaveBusy = saveBusy / span
	l.SaveMean = saveBusy / float64(len(saves)) / 1e3
	if len(applies) > 1 {
		l.AppliesPerSec = float64(len(applies)) / span * 1e9
		l.EntriesPerApply = float64(applies[len(applies)-1].Index-applies[0].Index) / float64(len(applies)-1)
		l.ApplyBusy = applyBusy / span
	}
	return l
}

// series are one node's events of one kind, message type and peer,
// in time order.
type series []Event

// firstIndex is the first event whose Index is at least i, or nil.
func (s series) firstIndex(i uint64) *Event {
	k := sort.Search(len(s), func(j int) bool { return s[j].Index >= i })
	if k == len(s) {
		return nil
	}
	return &s[k]
}

// firstCommit is the first event whose Commit is at least i, or nil.
func (s series) firstCommit(i uint64) *Event {
	k := sort.Search(len(s), func(j int) bool { return s[j].Commit >= i })
	if k == len(s) {
		return nil
	}
	return &s[k]
}

// firstAfter is the first event at or after t, or nil.
func (s series) firstAfter(t int64) *Event {
	k := sort.Search(len(s), func(j int) bool { return s[j].T >= t })
	if k == len(s) {
		return nil
	}
	return &s[k]
}

type nodeEvents struct {
	saves, states, applies series
	// by "send|Replicate|peer" and the like; entries-carrying Replicates
	// under "Replicate+" too, and every Replicate under "commit": the
	// messages that move a follower's commit index, in increasing order
	// (a heartbeat's commit index may be lower than the last Replicate's,
	// so heartbeats are left out of that series).
	msgs map[string]series
}

func key(kind, msg string, peer uint64) string { return fmt.Sprintf("%s|%s|%d", kind, msg, peer) }

func index(d Dump) *nodeEvents {
	n := &nodeEvents{msgs: map[string]series{}}
	evs := append([]Event(nil), d.Events...)
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].T < evs[b].T })
	for _, e := range evs {
		switch e.Kind {
		case Save:
			n.saves = append(n.saves, e)
		case SaveState:
			n.states = append(n.states, e)
		case Apply:
			n.applies = append(n.applies, e)
		case Send, Recv:
			msg := e.Msg
			if msg == "Replicate" && e.N > 0 {
				msg = "Replicate+"
			}
			n.msgs[key(e.Kind, msg, e.Peer)] = append(n.msgs[key(e.Kind, msg, e.Peer)], e)
			if e.Msg == "Replicate" {
				n.msgs[key(e.Kind, "commit", e.Peer)] = append(n.msgs[key(e.Kind, "commit", e.Peer)], e)
			}
		}
	}
	return n
}

// Breakdown joins the dumps of a cluster's nodes into the stages of the
// writes that the node serving replica received from its clients (read
// within [from, to], on Now's clock; to 0: no upper bound). The leader is the node that sent
// the most Replicate messages with entries: a breakdown assumes one leader
// throughout.
func Breakdown(dumps []Dump, serving uint64, from, to int64) (Table, error) {
	byID := map[uint64]*nodeEvents{}
	var reqs []Request
	var leader uint64
	most := 0
	for _, d := range dumps {
		n := index(d)
		byID[d.Replica] = n
		if d.Replica == serving {
			reqs = d.Requests
		}
		sent := 0
		for k, s := range n.msgs {
			var peer uint64
			if _, err := fmt.Sscanf(k, "send|Replicate+|%d", &peer); err == nil {
				sent += len(s)
			}
		}
		if sent > most {
			most, leader = sent, d.Replica
		}
	}
	if leader == 0 && len(dumps) == 1 {
		leader = dumps[0].Replica // one node: it commits alone
	}
	t := Table{Serving: serving, Leader: leader}
	if byID[serving] == nil {
		return t, fmt.Errorf("no dump from replica %d", serving)
	}
	if leader == 0 {
		return t, fmt.Errorf("no node sent a Replicate with entries: was the cluster written to, with tracing on (%s=1) on every node?", Env)
	}
	L, S := byID[leader], byID[serving]
	vals := map[string][]float64{}
	var order []string
	who := map[string]string{}
	add := func(name, w string, from, to int64) {
		if from == 0 || to == 0 {
			return
		}
		if _, ok := vals[name]; !ok {
			order = append(order, name)
			who[name] = w
		}
		vals[name] = append(vals[name], float64(to-from)/1e3)
	}
	for _, r := range reqs {
		if r.Read < from || (to != 0 && r.Read > to) || r.Written == 0 || r.Index == 0 {
			continue
		}
		i := r.Index
		ls := L.saves.firstIndex(i)
		la := L.applies.firstIndex(i)
		if ls == nil || la == nil {
			continue
		}
		// The follower whose ack reached the leader first commits the write.
		var fID uint64
		var lack *Event
		for id := range byID {
			if id == leader {
				continue
			}
			if a := L.msgs[key(Recv, "ReplicateResp", id)].firstIndex(i); a != nil && (lack == nil || a.T < lack.T) {
				fID, lack = id, a
			}
		}
		if lack == nil && len(byID) > 1 {
			continue
		}
		t.Writes++
		F := byID[fID] // nil on one node
		commit := ls.T2
		if lack != nil {
			commit = max(ls.T2, lack.T)
		}
		add("S: frame read → decoded", "zkbridge", r.Read, r.Decoded)
		add("S: decoded → handed to the Raft engine", "zkbridge", r.Decoded, r.Proposed)
		if serving == leader {
			add("L: proposal → append starts (its step worker wakes)", "dragonboat", r.Proposed, ls.T)
		} else {
			// A forwarded proposal's entries have no index yet: the first
			// Propose after the hand-off is this write's (one in flight).
			add("S → L: proposal forwarded → L's append starts", "dragonboat", r.Proposed, ls.T)
			if fwd := S.msgs[key(Send, "Propose", leader)].firstAfter(r.Decoded); fwd != nil && fwd.T < ls.T {
				add("  of which S: handed off → Propose sent", "dragonboat", r.Proposed, fwd.T)
				if got := L.msgs[key(Recv, "Propose", serving)].firstAfter(fwd.T); got != nil && got.T <= ls.T {
					add("  of which S → L: Propose in flight", "transport", fwd.T, got.T)
					add("  of which L: Propose received → append starts", "dragonboat", got.T, ls.T)
				}
			}
		}
		add("L: log append + fsync", "disk", ls.T, ls.T2)
		lsend := L.msgs[key(Send, "Replicate+", fID)].firstIndex(i)
		var fsave *Event
		if F != nil {
			fsave = F.saves.firstIndex(i)
		}
		if lsend != nil {
			add("L: append starts → Replicate sent", "dragonboat", ls.T, lsend.T)
			if F != nil {
				if frecv := F.msgs[key(Recv, "Replicate+", leader)].firstIndex(i); frecv != nil {
					add("L → F: Replicate in flight", "transport", lsend.T, frecv.T)
					if fsave != nil {
						add("F: Replicate received → append starts", "dragonboat", frecv.T, fsave.T)
					}
				}
			}
		}
		if fsave != nil {
			add("F: log append + fsync", "disk", fsave.T, fsave.T2)
			if fack := F.msgs[key(Send, "ReplicateResp", leader)].firstIndex(i); fack != nil && lack != nil {
				add("F: fsync done → ack sent", "dragonboat", fsave.T2, fack.T)
				add("F → L: ack in flight", "transport", fack.T, lack.T)
			}
		}
		if lack != nil {
			add("L: own fsync done → first ack (commit waits)", "dragonboat", ls.T2, max(lack.T, ls.T2))
		}
		if st := L.states.firstCommit(i); st != nil && st.T2 <= la.T {
			add("L: committed → commit index saved (step worker)", "dragonboat", commit, st.T2)
			add("L: commit index saved → apply starts", "dragonboat", st.T2, la.T)
		} else {
			add("L: committed → apply starts", "dragonboat", commit, la.T)
		}
		add("L: apply", "zkbridge", la.T, la.T2)
		applied := la
		if serving != leader {
			if csend := L.msgs[key(Send, "commit", serving)].firstCommit(i); csend != nil {
				add("L: committed → commit index sent to S", "dragonboat", commit, csend.T)
				if crecv := S.msgs[key(Recv, "commit", leader)].firstCommit(i); crecv != nil {
					add("L → S: commit index in flight", "transport", csend.T, crecv.T)
					if sa := S.applies.firstIndex(i); sa != nil {
						if st := S.states.firstCommit(i); st != nil && st.T2 <= sa.T && st.T >= crecv.T {
							add("S: commit received → commit index saved", "dragonboat", crecv.T, st.T2)
							add("S: commit index saved → apply starts", "dragonboat", st.T2, sa.T)
						} else {
							add("S: commit received → apply starts", "dragonboat", crecv.T, sa.T)
						}
					}
				}
			}
			applied = S.applies.firstIndex(i)
			if applied != nil {
				add("S: apply", "zkbridge", applied.T, applied.T2)
			}
		}
		if applied != nil {
			add("S: applied → result at the door (a goroutine wakes)", "zkbridge", applied.T2, r.Result)
		}
		add("S: result → reply queued", "zkbridge", r.Result, r.Queued)
		add("S: reply queued → written (the writer runs, writev)", "zkbridge", r.Queued, r.Written)
		add("total: frame read → reply written", "total", r.Read, r.Written)
	}
	for _, d := range dumps {
		t.Logs = append(t.Logs, nodeLog(d.Replica, byID[d.Replica], from, to))
	}
	sort.Slice(t.Logs, func(a, b int) bool { return t.Logs[a].Replica < t.Logs[b].Replica })
	for _, name := range order {
		v := vals[name]
		sort.Float64s(v)
		t.Stages = append(t.Stages, Stage{Name: name, Who: who[name], N: len(v), P50: quantile(v, 0.5), P99: quantile(v, 0.99)})
	}
	return t, nil
}

// quantile is the nearest-rank quantile q of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// Print writes the table for a terminal.
func (t Table) Print(w io.Writer) {
	role := "a follower"
	if t.Serving == t.Leader {
		role = "the leader"
	}
	fmt.Fprintf(w, "write stages: client on replica %d (%s), leader %d, %d writes joined (S: serving node, L: leader, F: the follower whose ack came first)\n", t.Serving, role, t.Leader, t.Writes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\twhose\twrites\tp50 µs\tp99 µs\t")
	for _, s := range t.Stages {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t\n", s.Name, s.Who, s.N, s.P50, s.P99)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "log saves (append + fsync) and applies per node over the same time:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "replica\tsaves/s\tentries/save\tin save\tmean save µs\tapplies/s\tentries/apply\tin apply\t")
	for _, l := range t.Logs {
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.0f%%\t%.0f\t%.0f\t%.1f\t%.0f%%\t\n", l.Replica, l.SavesPerSec, l.EntriesPerSave,
			100*l.SaveBusy, l.SaveMean, l.AppliesPerSec, l.EntriesPerApply, 100*l.ApplyBusy)
	}
	_ = tw.Flush()
}
