package sm

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// With EnforceQuota, hard limits fail creates and setData with
// QuotaExceeded (checked before the version, after the ACL), soft limits
// never do, a failed multi rolls back, and without EnforceQuota nothing is
// refused.
func TestQuotaEnforcement(t *testing.T) {
	for _, enforce := range []bool{true, false} {
		h := newHarness(t, Config{EnforceQuota: enforce})
		s := h.newSession()
		refused := zkproto.ErrQuotaExceeded
		if !enforce {
			refused = zkproto.ErrOK
		}
		wantErr(t, "root", h.create(s, "/q", []byte("ab"), 0).Err, zkproto.ErrOK)
		wantErr(t, "soft root", h.create(s, "/soft", nil, 0).Err, zkproto.ErrOK)
		for _, p := range []string{"/zookeeper/quota/q", "/zookeeper/quota/soft"} {
			wantErr(t, p, h.create(s, p, nil, 0).Err, zkproto.ErrOK)
		}
		// As zkCli setquota -N 3 -B 10 writes them.
		wantErr(t, "limits", h.create(s, "/zookeeper/quota/q/zookeeper_limits", []byte("count=-1,bytes=-1,countHardLimit=3,byteHardLimit=10"), 0).Err, zkproto.ErrOK)
		wantErr(t, "stats", h.create(s, "/zookeeper/quota/q/zookeeper_stats", []byte("count=0,bytes=0"), 0).Err, zkproto.ErrOK)
		wantErr(t, "soft limits", h.create(s, "/zookeeper/quota/soft/zookeeper_limits", []byte("count=1,bytes=1"), 0).Err, zkproto.ErrOK)
		wantErr(t, "soft stats", h.create(s, "/zookeeper/quota/soft/zookeeper_stats", []byte("count=0,bytes=0"), 0).Err, zkproto.ErrOK)

		wantErr(t, "2nd node", h.create(s, "/q/a", []byte("abc"), 0).Err, zkproto.ErrOK)  // count 2, bytes 5
		wantErr(t, "3rd node", h.create(s, "/q/a/b", []byte("cd"), 0).Err, zkproto.ErrOK) // count 3, bytes 7
		wantErr(t, "4th node", h.create(s, "/q/c", nil, 0).Err, refused)
		wantErr(t, "bytes over", h.do(s, &SetData{Path: "/q/a", Data: []byte("abcdef1"), Version: -1}).Err, refused)
		if enforce {
			// Quota before version: a wrong version still says QuotaExceeded.
			wantErr(t, "quota before version", h.do(s, &SetData{Path: "/q/a", Data: []byte("abcdef1"), Version: 42}).Err, zkproto.ErrQuotaExceeded)
			wantErr(t, "bytes within", h.do(s, &SetData{Path: "/q/a", Data: []byte("abcdef"), Version: -1}).Err, zkproto.ErrOK) // bytes 10
			wantErr(t, "shrink", h.do(s, &SetData{Path: "/q/a", Data: nil, Version: -1}).Err, zkproto.ErrOK)
			// Inside a multi, quotas are checked against the stats before
			// it (ZooKeeper's prep reads the applied tree): deleting b
			// does not make room for x (observed on ZooKeeper 3.8)...
			h.do(s, &Multi{Ops: []Op{
				&Delete{Path: "/q/a/b", Version: -1},
				&Create{OpCode: zkproto.OpCreate, Path: "/q/x", ACL: zkproto.OpenACLUnsafe()},
			}})
			if h.exists("/q/x") || !h.exists("/q/a/b") {
				t.Fatalf("multi delete+create at the count limit: /q/x exists %v, /q/a/b exists %v", h.exists("/q/x"), h.exists("/q/a/b"))
			}
			wantErr(t, "delete b", h.do(s, &Delete{Path: "/q/a/b", Version: -1}).Err, zkproto.ErrOK) // count 2
			// ...and two creates each checked against count 2 both pass.
			h.do(s, &Multi{Ops: []Op{
				&Create{OpCode: zkproto.OpCreate, Path: "/q/x", ACL: zkproto.OpenACLUnsafe()},
				&Create{OpCode: zkproto.OpCreate, Path: "/q/y", ACL: zkproto.OpenACLUnsafe()},
			}})
			if !h.exists("/q/x") || !h.exists("/q/y") {
				t.Fatal("a multi of two creates each within the limit before the multi was refused")
			}
		}
		// Soft limits only log in ZooKeeper.
		for _, p := range []string{"/soft/a", "/soft/b"} {
			wantErr(t, "soft "+p, h.create(s, p, []byte("xyz"), 0).Err, zkproto.ErrOK)
		}
		// Outside any quota, nothing is refused.
		wantErr(t, "outside", h.create(s, "/other", []byte("0123456789abc"), 0).Err, zkproto.ErrOK)
	}
}
