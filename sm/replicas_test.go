package sm

import (
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
