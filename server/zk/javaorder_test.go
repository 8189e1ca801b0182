package zk

import (
	"reflect"
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

func TestZookeeperIDOrder(t *testing.T) {
	ip := zkproto.Id{Scheme: "ip", ID: "127.0.0.1"}
	// Orders observed on ZooKeeper 3.8 with whoAmI after addauth.
	cases := []struct{ auth, want []zkproto.Id }{
		{[]zkproto.Id{ip, {Scheme: "digest", ID: DigestID([]byte("u:p"))}}, []zkproto.Id{ip, {Scheme: "digest", ID: DigestID([]byte("u:p"))}}},
		{[]zkproto.Id{ip, {Scheme: "digest", ID: DigestID([]byte("alice:secret"))}}, []zkproto.Id{{Scheme: "digest", ID: DigestID([]byte("alice:secret"))}, ip}},
		{[]zkproto.Id{ip, {Scheme: "digest", ID: DigestID([]byte("super:superpw"))}, {Scheme: "super"}},
			[]zkproto.Id{{Scheme: "digest", ID: DigestID([]byte("super:superpw"))}, {Scheme: "super"}, ip}},
	}
	for _, c := range cases {
		if got := zookeeperIDOrder(c.auth); !reflect.DeepEqual(got, c.want) {
			t.Errorf("zookeeperIDOrder(%v) = %v, want %v", c.auth, got, c.want)
		}
	}
}

func TestZookeeperEphemeralOrder(t *testing.T) {
	czxid := map[string]int64{"/zkcli/eph": 1, "/zkcli/ephseq-0000000004": 2}
	// Observed on ZooKeeper 3.8: both fall in the clone's bucket 3 of 4,
	// ordered by the original's buckets (7 and 3).
	got := zookeeperEphemeralOrder([]string{"/zkcli/eph", "/zkcli/ephseq-0000000004"}, func(p string) int64 { return czxid[p] })
	if want := []string{"/zkcli/ephseq-0000000004", "/zkcli/eph"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}
