package zk

import (
	"testing"

	"github.com/zkbridge/zkbridge/zkproto"
)

// The reads that answer with /zookeeper/config, a multiRead's among them,
// refresh the rendering first; no other read does.
func TestReadsConfig(t *testing.T) {
	for _, tc := range []struct {
		req  zkproto.Record
		want bool
	}{
		{&zkproto.GetDataRequest{Path: configNode}, true},
		{&zkproto.ExistsRequest{Path: configNode}, true},
		{&zkproto.GetACLRequest{Path: configNode}, true},
		{&zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpGetChildren, Request: &zkproto.GetChildrenRequest{Path: "/"}},
			{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: configNode}},
		}}, true},
		{&zkproto.GetDataRequest{Path: "/zookeeper"}, false},
		{&zkproto.GetChildrenRequest{Path: configNode}, false},
		{&zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Type: zkproto.OpGetData, Request: &zkproto.GetDataRequest{Path: "/a"}},
		}}, false},
	} {
		if got := readsConfig(tc.req); got != tc.want {
			t.Errorf("readsConfig(%T %+v) = %v, want %v", tc.req, tc.req, got, tc.want)
		}
	}
}
