package sm

import (
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestTenantRegistry(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.newSession()
	before := h.create(s, "/a", nil, 0).Zxid
	put := func(create bool, tn Tenant) *Result {
		t.Helper()
		cmd, err := DecodeCommand((&Command{Op: &PutTenant{Create: create, Tenant: tn}}).Encode())
		if err != nil || !reflect.DeepEqual(cmd.Op.(*PutTenant).Tenant, tn) {
			t.Fatalf("round trip of %+v: %+v, %v", tn, cmd, err)
		}
		res := h.update(cmd)[0]
		if res.Zxid != before {
			t.Fatalf("tenant op reported zxid %d, want the previous %d (no zxid)", res.Zxid, before)
		}
		return res
	}
	a := Tenant{Name: "kafka-a", Port: 3000, Replicas: []uint64{1, 2, 3}, MaxZnodes: 10, Identities: []string{"a.example"}}
	b := Tenant{Name: "b", SecurePort: 3001}
	// Two creates in one batch: the second sees the first (shard numbers).
	res := h.update(h.cmd(0, &PutTenant{Create: true, Tenant: a}), h.cmd(0, &PutTenant{Create: true, Tenant: b}))
	for i, r := range res {
		wantErr(t, "create", r.Err, zkproto.ErrOK)
		if !h.last[i].TenantsChanged {
			t.Fatal("create did not report TenantsChanged")
		}
	}
	wantErr(t, "create again", put(true, a).Err, zkproto.ErrNodeExists)
	wantErr(t, "port clash", put(true, Tenant{Name: "c", Port: 3001}).Err, zkproto.ErrBadArguments)
	wantErr(t, "identity clash", put(true, Tenant{Name: "c", Identities: []string{"a.example"}}).Err, zkproto.ErrBadArguments)
	wantErr(t, "bad name", put(true, Tenant{Name: "default"}).Err, zkproto.ErrBadArguments)
	wantErr(t, "update of a missing tenant", put(false, Tenant{Name: "zz"}).Err, zkproto.ErrNoNode)
	// An update keeps the shard and, unless given, the placement.
	wantErr(t, "update", put(false, Tenant{Name: "kafka-a", Port: 3005, MaxZnodes: 20}).Err, zkproto.ErrOK)
	if got := h.create(s, "/b", nil, 0).Zxid; got != before+1 {
		t.Fatalf("the write after tenant ops has zxid %d, want %d", got, before+1)
	}
	before++
	v := h.view()
	got, err := v.Tenants()
	v.Close()
	want := []Tenant{{Name: "b", Shard: 3, SecurePort: 3001},
		{Name: "kafka-a", Shard: 2, Port: 3005, Replicas: []uint64{1, 2, 3}, MaxZnodes: 20}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("registry %+v, %v; want %+v", got, err, want)
	}
	wantErr(t, "delete", h.update(h.cmd(0, &DeleteTenant{Name: "b"}))[0].Err, zkproto.ErrOK)
	wantErr(t, "delete again", h.update(h.cmd(0, &DeleteTenant{Name: "b"}))[0].Err, zkproto.ErrNoNode)
	// A shard is never reused.
	wantErr(t, "create after delete", put(true, Tenant{Name: "b"}).Err, zkproto.ErrOK)
	v = h.view()
	defer v.Close()
	got, _ = v.Tenants()
	if len(got) != 2 || got[0].Shard != 4 {
		t.Fatalf("registry after delete and create %+v; want b on shard 4", got)
	}
}

// A placement update (tenant rebalance) moves replicas only while the
// registry still has the placement it read, and keeps every other setting;
// a settings update keeps a move in progress.
func TestTenantPlacementUpdate(t *testing.T) {
	h := newHarness(t, Config{})
	put := func(tn Tenant) zkproto.ErrCode {
		t.Helper()
		cmd, err := DecodeCommand((&Command{Op: &PutTenant{Tenant: tn}}).Encode())
		if err != nil || !reflect.DeepEqual(cmd.Op.(*PutTenant).Tenant, tn) {
			t.Fatalf("round trip of %+v: %+v, %v", tn, cmd, err)
		}
		return h.update(cmd)[0].Err
	}
	wantErr(t, "create", h.update(h.cmd(0, &PutTenant{Create: true,
		Tenant: Tenant{Name: "a", Port: 3000, Replicas: []uint64{1, 2, 3}, MaxZnodes: 7}}))[0].Err, zkproto.ErrOK)
	move := Tenant{Name: "a", PlacementOnly: true, ExpectReplicas: []uint64{1, 2, 3},
		Replicas: []uint64{1, 2, 3, 4}, Joining: []uint64{4}, Leaving: []uint64{1}}
	wantErr(t, "move", put(move), zkproto.ErrOK)
	wantErr(t, "the same move again (stale)", put(move), zkproto.ErrBadVersion)
	wantErr(t, "settings update", put(Tenant{Name: "a", Port: 3001, MaxZnodes: 9}), zkproto.ErrOK)
	v := h.view()
	got, err := v.Tenants()
	v.Close()
	want := []Tenant{{Name: "a", Shard: 2, Port: 3001, MaxZnodes: 9, Replicas: []uint64{1, 2, 3, 4},
		Joining: []uint64{4}, Leaving: []uint64{1}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("registry %+v, %v; want %+v", got, err, want)
	}
}
