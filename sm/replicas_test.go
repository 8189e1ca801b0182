package sm

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

func TestRegisterReplicaDirectoryConsumesNoZxid(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.create(s, "/a", nil, 0).Zxid
	two := ReplicaInfo{ID: 2, RaftAddr: "127.0.0.1:2", ClientAddr: "127.0.0.1:3", Observer: true}
	one := ReplicaInfo{ID: 1, RaftAddr: "127.0.0.1:4", ClientAddr: "127.0.0.1:5", AdminAddr: "127.0.0.1:6"}
	for _, r := range []ReplicaInfo{two, one, {ID: 1, RaftAddr: "stale"}, one} {
		cmd, err := DecodeCommand((&Command{Op: &RegisterReplica{Replica: r}}).Encode())
		if err != nil || !reflect.DeepEqual(cmd.Op.(*RegisterReplica).Replica, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, cmd, err)
		}
		if res := h.update(cmd)[0]; res.Zxid != before {
			t.Fatalf("register reported zxid %d, want the previous %d", res.Zxid, before)
		}
	}
	if got := h.create(s, "/b", nil, 0).Zxid; got != before+1 {
		t.Fatalf("the write after registrations has zxid %d, want %d", got, before+1)
	}
	v := h.view()
	defer v.Close()
	got, err := v.Replicas()
	if err != nil || !reflect.DeepEqual(got, []ReplicaInfo{one, two}) {
		t.Fatalf("directory %+v, %v; want the last entry per replica, in ID order", got, err)
	}
}

func TestConfigChangedIsTheConfigVersion(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.create(s, "/a", nil, 0).Zxid
	v := h.view()
	if z, err := v.ConfigZxid(); err != nil || z != 0 {
		t.Fatalf("initial config zxid %d, %v; want 0", z, err)
	}
	v.Close()
	cmd, err := DecodeCommand((&Command{Op: &ConfigChanged{}}).Encode())
	if err != nil {
		t.Fatal(err)
	}
	res := h.update(cmd)[0]
	if res.Zxid != before+1 {
		t.Fatalf("ConfigChanged zxid %d, want %d: it is a transaction", res.Zxid, before+1)
	}
	v = h.view()
	defer v.Close()
	if z, err := v.ConfigZxid(); err != nil || z != res.Zxid {
		t.Fatalf("config zxid %d, %v; want %d", z, err, res.Zxid)
	}
}

// Encodings written before ReplicaInfo.Spec and ConfigChanged.Order
// existed (hex from the code of that time): they must still decode, and an
// entry without the new fields must still encode to the same bytes (the
// same Raft entries, directory values and content hash).
const (
	oldRegisterReplica = "0100000000000f070e3132372e302e302e313a373030310e3132372e302e302e313a323138310e3132372e302e302e313a3830383001"
	oldReplicaValue    = "070e3132372e302e302e313a373030310e3132372e302e302e313a323138310e3132372e302e302e313a3830383001"
	oldConfigChanged   = "01000000000010"
)

func TestReplicaEncodingsBeforeSpecStillDecode(t *testing.T) {
	want := ReplicaInfo{ID: 7, RaftAddr: "127.0.0.1:7001", ClientAddr: "127.0.0.1:2181", AdminAddr: "127.0.0.1:8080", Observer: true}
	b, _ := hex.DecodeString(oldRegisterReplica)
	cmd, err := DecodeCommand(b)
	if err != nil {
		t.Fatalf("old RegisterReplica: %v", err)
	}
	if got := cmd.Op.(*RegisterReplica).Replica; got != want {
		t.Fatalf("old RegisterReplica decodes to %+v, want %+v", got, want)
	}
	if got := hex.EncodeToString((&Command{Op: &RegisterReplica{Replica: want}}).Encode()); got != oldRegisterReplica {
		t.Errorf("an entry without Spec encodes to %s, want the old %s", got, oldRegisterReplica)
	}
	b, _ = hex.DecodeString(oldReplicaValue)
	d := &dec{b: b}
	if got := decodeReplica(d); got != want || d.done() != nil {
		t.Errorf("old directory value decodes to %+v, %v", got, d.err)
	}
	b, _ = hex.DecodeString(oldConfigChanged)
	cmd, err = DecodeCommand(b)
	if err != nil || cmd.Op.(*ConfigChanged).Order != nil {
		t.Fatalf("old ConfigChanged: %+v, %v", cmd, err)
	}
	if got := hex.EncodeToString((&Command{Op: &ConfigChanged{}}).Encode()); got != oldConfigChanged {
		t.Errorf("ConfigChanged without Order encodes to %s, want the old %s", got, oldConfigChanged)
	}

	// Applied as it was written then, the old entry is in the directory.
	h := newHarness(t, Config{})
	b, _ = hex.DecodeString(oldRegisterReplica)
	cmd, _ = DecodeCommand(b)
	h.update(cmd)
	v := h.view()
	defer v.Close()
	if got, err := v.Replicas(); err != nil || !reflect.DeepEqual(got, []ReplicaInfo{want}) {
		t.Errorf("directory %+v, %v", got, err)
	}
}

func TestRegisterReplicaKeepsTheReconfigSpec(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.create(s, "/a", nil, 0).Zxid
	// A reconfig adds server 100, which has not started: its spec, and the
	// Raft address of its peer port.
	added := ReplicaInfo{ID: 100, RaftAddr: "0.0.0.0:41001", Observer: true, Spec: "0.0.0.0:41001:41002:observer;0.0.0.0:41003"}
	// It starts and registers its own addresses (no Spec), in the same
	// Update and in the next one.
	self := ReplicaInfo{ID: 100, RaftAddr: "0.0.0.0:41001", ClientAddr: "127.0.0.1:41003", AdminAddr: "127.0.0.1:41004", Observer: true}
	moved := self
	moved.ClientAddr = "127.0.0.1:41005"
	reg := func(r ReplicaInfo) *Command {
		cmd, err := DecodeCommand((&Command{Op: &RegisterReplica{Replica: r}}).Encode())
		if err != nil || !reflect.DeepEqual(cmd.Op.(*RegisterReplica).Replica, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, cmd, err)
		}
		return cmd
	}
	for i, res := range h.update(reg(added), reg(self)) {
		if res.Zxid != before || !h.last[i].DirectoryChanged {
			t.Fatalf("register: zxid %d (want %d), directory changed %v", res.Zxid, before, h.last[i].DirectoryChanged)
		}
	}
	h.update(reg(moved))
	directory := func() ReplicaInfo {
		v := h.view()
		defer v.Close()
		got, err := v.Replicas()
		if err != nil || len(got) != 1 {
			t.Fatalf("directory %+v, %v", got, err)
		}
		return got[0]
	}
	want := moved
	want.Spec = added.Spec
	if got := directory(); got != want {
		t.Fatalf("after the replica's own registrations: %+v, want %+v (its addresses, the reconfig's spec)", got, want)
	}
	// A later reconfig's spec replaces it.
	respec := want
	respec.Spec = "0.0.0.0:41001:41002:observer;0.0.0.0:41009"
	h.update(reg(respec))
	if got := directory(); got != respec {
		t.Fatalf("after a new spec: %+v, want %+v", got, respec)
	}

	// A snapshot carries it to another replica, whose content hash agrees.
	snap := saveSnapshot(t, h.s)
	h2 := newHarness(t, Config{})
	if err := h2.s.RecoverFromSnapshot(bytes.NewReader(snap), make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	v := h2.view()
	got, err := v.Replicas()
	v.Close()
	if err != nil || !reflect.DeepEqual(got, []ReplicaInfo{respec}) {
		t.Fatalf("recovered directory %+v, %v", got, err)
	}
	h1hash, err1 := h.s.ContentHash()
	h2hash, err2 := h2.s.ContentHash()
	if err1 != nil || err2 != nil || h1hash != h2hash {
		t.Fatalf("content hashes differ: %x %v, %x %v", h1hash, err1, h2hash, err2)
	}
}

func TestConfigChangedKeepsTheReconfigOrder(t *testing.T) {
	h := newHarness(t, Config{})
	order := func() []uint64 {
		v := h.view()
		defer v.Close()
		o, err := v.ConfigOrder()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := order(); o != nil {
		t.Fatalf("initial order %v, want none", o)
	}
	apply := func(o []uint64) *Result {
		cmd, err := DecodeCommand((&Command{Op: &ConfigChanged{Order: o}}).Encode())
		if err != nil || !reflect.DeepEqual(cmd.Op.(*ConfigChanged).Order, o) {
			t.Fatalf("round trip of %v: %+v, %v", o, cmd, err)
		}
		return h.update(cmd)[0]
	}
	first := apply([]uint64{1, 2, 10, 3})
	if o := order(); !reflect.DeepEqual(o, []uint64{1, 2, 10, 3}) {
		t.Fatalf("order %v", o)
	}
	// A change without an order (a raft command's) keeps it, and is still
	// the configuration's version.
	second := apply(nil)
	if second.Zxid != first.Zxid+1 {
		t.Fatalf("ConfigChanged zxids %d then %d: each is a transaction", first.Zxid, second.Zxid)
	}
	v := h.view()
	z, err := v.ConfigZxid()
	v.Close()
	if err != nil || z != second.Zxid {
		t.Fatalf("config zxid %d, %v; want %d", z, err, second.Zxid)
	}
	if o := order(); !reflect.DeepEqual(o, []uint64{1, 2, 10, 3}) {
		t.Fatalf("order after a change without one: %v", o)
	}
	apply([]uint64{1, 2, 3})
	if o := order(); !reflect.DeepEqual(o, []uint64{1, 2, 3}) {
		t.Fatalf("order %v", o)
	}
}
