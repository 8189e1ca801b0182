package zk

// treeStats are the tree's sizes as ZooKeeper's stats report them.
type treeStats struct {
	Nodes      int64 // znodes, the root once
	Ephemerals int64
	DataBytes  int64 // data plus path bytes (zk_approximate_data_size)
}

// nodeCount is srvr's "Node count": ZooKeeper's DataTree keeps the root
// under both "" and "/", so it counts one more than there are znodes.
func (t treeStats) nodeCount() int64 { return t.Nodes + 1 }

func (s *Server) treeStats() treeStats {
	st := s.node.TreeStats()
	return treeStats{Nodes: st.Nodes, Ephemerals: st.Ephemerals, DataBytes: st.DataBytes}
}
