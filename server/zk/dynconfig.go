package zk

import (
	"context"
	"time"

	"github.com/zkbridge/zkbridge/server/node"
	"github.com/zkbridge/zkbridge/sm"
	"github.com/zkbridge/zkbridge/zkproto"
)

// configNode is ZooKeeper's dynamic configuration znode.
const configNode = "/zookeeper/config"

// membershipChanged is the node's MembershipChanged hook: it renders the
// dynamic configuration and, when the text changed, fires NodeDataChanged
// on /zookeeper/config as a reconfig does.
func (s *Server) membershipChanged(m node.Membership) {
	text := renderConfig(m)
	s.dynamicConfig.Lock()
	changed := s.dynamicConfig.text != text
	if changed {
		s.dynamicConfig.text, s.dynamicConfig.mtime = text, time.Now().UnixMilli()
	}
	s.dynamicConfig.zxid = m.ConfigZxid
	s.dynamicConfig.Unlock()
	if changed {
		s.watches.trigger(zkproto.EventNodeDataChanged, configNode, nil)
	}
}

// configReadTimeout bounds freshConfig's quorum round.
const configReadTimeout = 2 * time.Second

// readsConfig reports whether a read answers with /zookeeper/config's
// stat or data, alone or inside a multiRead. Each of these request records
// belongs to one opcode, so the record says which read it is.
func readsConfig(req zkproto.Record) bool {
	switch r := req.(type) {
	case *zkproto.GetDataRequest:
		return r.Path == configNode
	case *zkproto.ExistsRequest:
		return r.Path == configNode
	case *zkproto.GetACLRequest:
		return r.Path == configNode
	case *zkproto.MultiRequest:
		for _, op := range r.Ops {
			if readsConfig(op.Request) {
				return true
			}
		}
	}
	return false
}

// freshConfig brings this node's rendering of /zookeeper/config up to the
// cluster's before a client reads it. The rendering is a cache that a
// timer and applied directory changes refresh in the background, and a
// read on another node just after a reconfig saw it half updated: the new
// member without the spec its reconfig gave, as no ZooKeeper server ever
// shows it (a reconfig is one transaction there). A quorum round reads the
// membership linearizably, and the directory after it; without a leader
// the cached text stands. Config reads are rare (a client's getConfig, a
// watch on the node firing), so the round is no cost to other reads.
func (s *Server) freshConfig() {
	ctx, cancel := context.WithTimeout(context.Background(), configReadTimeout)
	defer cancel()
	_, _ = s.node.RefreshMembership(ctx)
}

// configText returns the rendered /zookeeper/config, when it last changed
// and the zxid of that change ("" before the first membership was read,
// and on a single node).
func (s *Server) configText() (text string, mtime, zxid int64) {
	s.dynamicConfig.Lock()
	defer s.dynamicConfig.Unlock()
	return s.dynamicConfig.text, s.dynamicConfig.mtime, s.dynamicConfig.zxid
}

// renderConfig writes the membership in ZooKeeper's dynamic-config format:
// server.N=host:peerPort:electionPort:role;clientAddr lines in ZooKeeper's
// order (configOrder), each as the reconfig that added it wrote it or, for
// a member that registered itself, with its Raft port standing for both of
// ZooKeeper's ports; then version=<hex zxid of the last change, 0 for the
// first membership>. A single voter renders as nothing, as a standalone
// ZooKeeper's empty node.
func renderConfig(m node.Membership) string {
	if len(m.Voters)+len(m.Observers) <= 1 {
		return ""
	}
	members := currentMembers(m)
	return RenderDynamicConfig(members, m.ConfigZxid)
}

// overlayConfig replaces the stored, empty /zookeeper/config with the
// membership, as a ZooKeeper ensemble serves it (version and aversion -1,
// mzxid the last configuration change's).
func (s *Server) overlayConfig(path string, n *sm.Node) {
	if path != configNode || n == nil {
		return
	}
	text, mtime, zxid := s.configText()
	if text == "" {
		return
	}
	n.Data = []byte(text)
	n.Stat.DataLength = int32(len(text))
	n.Stat.Version = -1
	n.Stat.Mtime = mtime
	n.Stat.Mzxid = zxid
}
