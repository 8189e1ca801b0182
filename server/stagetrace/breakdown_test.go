package stagetrace

import (
	"strings"
	"testing"
)

// A write served by follower 1, leader 3, follower 2 acking first: every
// stage comes out as the difference of the stamps that bound it.
func TestBreakdownFollower(t *testing.T) {
	const i = 42
	leader := Dump{Replica: 3, Events: []Event{
		{Kind: Recv, T: 1100, Msg: "Propose", Peer: 1},
		{Kind: Save, T: 1200, T2: 1600, Index: i},
		{Kind: Send, T: 1210, Msg: "Replicate", Peer: 2, Index: i, N: 1},
		{Kind: Send, T: 1215, Msg: "Replicate", Peer: 1, Index: i, N: 1},
		{Kind: Recv, T: 1700, Msg: "ReplicateResp", Peer: 2, Index: i},
		{Kind: Recv, T: 1750, Msg: "ReplicateResp", Peer: 1, Index: i},
		{Kind: Send, T: 1760, Msg: "Replicate", Peer: 1, Index: i, Commit: i},
		{Kind: SaveState, T: 1770, T2: 1780, Commit: i},
		{Kind: Apply, T: 1800, T2: 1850, Index: i},
		{Kind: Save, T: 2600, T2: 2900, Index: i + 2}, // two entries
		{Kind: Apply, T: 3000, T2: 3050, Index: i + 2},
	}}
	follower2 := Dump{Replica: 2, Events: []Event{
		{Kind: Recv, T: 1260, Msg: "Replicate", Peer: 3, Index: i, N: 1},
		{Kind: Save, T: 1300, T2: 1650, Index: i},
		{Kind: Send, T: 1660, Msg: "ReplicateResp", Peer: 3, Index: i},
	}}
	serving := Dump{Replica: 1, Events: []Event{
		{Kind: Send, T: 1050, Msg: "Propose", Peer: 3},
		{Kind: Recv, T: 1270, Msg: "Replicate", Peer: 3, Index: i, N: 1},
		{Kind: Recv, T: 1780, Msg: "Heartbeat", Peer: 3, Commit: i + 5}, // not a commit carrier
		{Kind: Recv, T: 1800, Msg: "Replicate", Peer: 3, Index: i, Commit: i},
		{Kind: Apply, T: 1900, T2: 1940, Index: i},
	}, Requests: []Request{
		{Index: i, Read: 1000, Decoded: 1003, Proposed: 1010, Result: 1960, Queued: 1962, Written: 2000},
		{Index: 0, Read: 3000, Written: 3100}, // failed before a result: not joined
	}}
	tab, err := Breakdown([]Dump{serving, follower2, leader}, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Leader != 3 || tab.Writes != 1 {
		t.Fatalf("leader %d, writes %d; want 3, 1", tab.Leader, tab.Writes)
	}
	want := map[string]float64{ // µs: the stamps are in ns
		"S: frame read → decoded":                             0.003,
		"S → L: proposal forwarded → L's append starts":       0.190,
		"L: log append + fsync":                               0.400,
		"L → F: Replicate in flight":                          0.050,
		"F: log append + fsync":                               0.350,
		"F → L: ack in flight":                                0.040,
		"L: own fsync done → first ack (commit waits)":        0.100,
		"L: committed → commit index saved (step worker)":     0.080,
		"L: commit index saved → apply starts":                0.020,
		"L: committed → commit index sent to S":               0.060,
		"L → S: commit index in flight":                       0.040,
		"S: apply":                                            0.040,
		"S: applied → result at the door (a goroutine wakes)": 0.020,
		"S: reply queued → written (the writer runs, writev)": 0.038,
		"total: frame read → reply written":                   1.000,
	}
	got := map[string]float64{}
	for _, s := range tab.Stages {
		got[s.Name] = s.P50
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g < v-1e-9 || g > v+1e-9 {
			t.Errorf("%s: %v (present %v), want %v", name, g, ok, v)
		}
	}
	// The leader's two saves: 1,700 ns from the first's start to the
	// second's end, 700 ns of it saving, three entries.
	if l := tab.Logs[2]; len(tab.Logs) != 3 || l.Replica != 3 || l.EntriesPerSave != 2 ||
		l.SaveBusy < 0.41 || l.SaveBusy > 0.42 || l.SaveMean != 0.35 || l.EntriesPerApply != 2 {
		t.Errorf("per-node logs: %+v", tab.Logs)
	}
	var b strings.Builder
	tab.Print(&b)
	if !strings.Contains(b.String(), "client on replica 1 (a follower), leader 3") {
		t.Errorf("table header: %q", b.String())
	}
}

// Nothing is recorded while tracing is off; the ring keeps the newest
// records once full.
func TestRecording(t *testing.T) {
	defer SetOn(On())
	Reset()
	SetOn(false)
	AddEvent(Event{Kind: Save, T: 1})
	AddRequest(Request{Index: 1})
	if d := Snapshot(); len(d.Events) != 0 || len(d.Requests) != 0 {
		t.Fatalf("recorded while off: %+v", d)
	}
	SetOn(true)
	for k := range ringSize + 10 {
		AddEvent(Event{Kind: Apply, T: int64(k)})
	}
	d := Snapshot()
	if len(d.Events) != ringSize || d.Events[0].T != 10 || d.Events[ringSize-1].T != ringSize+9 {
		t.Fatalf("ring: %d events, first %d, last %d", len(d.Events), d.Events[0].T, d.Events[len(d.Events)-1].T)
	}
	Reset()
	if d := Snapshot(); len(d.Events) != 0 {
		t.Fatalf("after Reset: %d events", len(d.Events))
	}
}

func TestNowIsMonotonic(t *testing.T) {
	a := Now()
	b := Now()
	if a <= 0 || b < a {
		t.Fatalf("Now: %d then %d", a, b)
	}
}

// On one node the write commits with its own log sync: no follower stages.
func TestBreakdownOneNode(t *testing.T) {
	d := Dump{Replica: 1, Events: []Event{
		{Kind: Save, T: 100, T2: 400, Index: 7},
		{Kind: Apply, T: 450, T2: 480, Index: 7},
	}, Requests: []Request{{Index: 7, Read: 10, Decoded: 12, Proposed: 20, Result: 500, Queued: 502, Written: 530}}}
	tab, err := Breakdown([]Dump{d}, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range tab.Stages {
		got[s.Name] = s.P50 * 1e3 // ns
		if strings.HasPrefix(s.Name, "F") {
			t.Errorf("a follower stage on one node: %s", s.Name)
		}
	}
	if tab.Leader != 1 || tab.Writes != 1 || got["L: log append + fsync"] != 300 ||
		got["L: committed → apply starts"] != 50 || got["total: frame read → reply written"] != 520 {
		t.Fatalf("one node: leader %d, %d writes, stages %v", tab.Leader, tab.Writes, got)
	}
}
