package zk

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/zkbridge/zkbridge/server/config"
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
	text := renderConfig(m.Voters, m.Observers, uint64(m.ConfigZxid), m.Directory)
	s.dynamicConfig.Lock()
	changed := s.dynamicConfig.text != text
	if changed {
		s.dynamicConfig.text, s.dynamicConfig.mtime = text, time.Now().UnixMilli()
	}
	s.dynamicConfig.Unlock()
	if changed {
		s.watches.trigger(zkproto.EventNodeDataChanged, configNode, nil)
	}
}

// configText returns the rendered /zookeeper/config and when it last
// changed ("" before the first membership was read, and on a single node).
func (s *Server) configText() (string, int64) {
	s.dynamicConfig.Lock()
	defer s.dynamicConfig.Unlock()
	return s.dynamicConfig.text, s.dynamicConfig.mtime
}

// renderConfig writes the membership in ZooKeeper's dynamic-config format:
// server.N=host:peerPort:electionPort:role;clientAddr lines in id order, then
// version=<hex zxid of the last change, 0 for the first membership>. Raft
// has one peer port, so it stands for both ports. A single voter renders as
// nothing, as a standalone ZooKeeper's empty node.
func renderConfig(voters, observers map[uint64]string, version uint64, dir map[uint64]sm.ReplicaInfo) string {
	if len(voters)+len(observers) <= 1 {
		return ""
	}
	ids := append(config.SortedIDs(voters), config.SortedIDs(observers)...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		addr, role := voters[id], "participant"
		if a, ok := observers[id]; ok {
			addr, role = a, "observer"
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, "0"
		}
		fmt.Fprintf(&b, "server.%d=%s:%s:%s:%s", id, host, port, port, role)
		if c := dir[id].ClientAddr; c != "" {
			b.WriteString(";" + c)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "version=%x", version)
	return b.String()
}

// overlayConfig replaces the stored, empty /zookeeper/config with the
// membership, as a ZooKeeper ensemble serves it (version and aversion -1).
func (s *Server) overlayConfig(path string, n *sm.Node) {
	if path != configNode || n == nil {
		return
	}
	text, mtime := s.configText()
	if text == "" {
		return
	}
	n.Data = []byte(text)
	n.Stat.DataLength = int32(len(text))
	n.Stat.Version = -1
	n.Stat.Mtime = mtime
}
