package node

import "time"

// What a front door tells the web console (server/admin/console) about
// its clients, in types both may import: the admin endpoint reaches a door
// only through an interface, and the doors never import the admin package.

// ConnInfo is one client connection of a front door with its session.
type ConnInfo struct {
	Session  int64     `json:"session"`
	Remote   string    `json:"remote"` // ip:port
	LastSeen time.Time `json:"last_seen"`
	// Watches by type, as ZooKeeper names them: one-shot data (getData,
	// exists), one-shot child (getChildren), persistent and persistent
	// recursive (addWatch).
	DataWatches      int `json:"data_watches"`
	ChildWatches     int `json:"child_watches"`
	PersistWatches   int `json:"persistent_watches"`
	RecursiveWatches int `json:"recursive_watches"`
}

// RequestStats are a front door's cumulative request counters: requests by
// operation name (ZooKeeper's op names: getData, create, ...) and their
// latency histogram. The console samples them every second.
type RequestStats struct {
	ByOp    map[string]int64
	Latency HistogramCounts
}

// FsyncHistogram returns the cumulative histogram of Raft log writes and
// their fsync, in ms.
func (n *Node) FsyncHistogram() HistogramCounts { return n.metrics.fsyncHist.Snapshot() }

// BridgeActivity is what a node's native door has seen since it started:
// the leases it granted or renewed, its open change-feed streams and the
// AllocateID counters it served. The console joins it with the replicated
// state (a lease's members are its session's ephemerals).
type BridgeActivity struct {
	Leases      []LeaseActivity  `json:"leases"`
	Subscribers []FeedSubscriber `json:"subscribers"`
	Counters    []string         `json:"counters"`
}

// LeaseActivity is a lease this node granted or renewed.
type LeaseActivity struct {
	ID            int64     `json:"id"`
	Path          string    `json:"path,omitempty"` // the registration it was granted for ("" when only renewed here)
	Granted       time.Time `json:"granted,omitzero"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
}

// FeedSubscriber is one open FetchMetadata stream.
type FeedSubscriber struct {
	Remote     string    `json:"remote"`
	Prefixes   []string  `json:"prefixes"`
	FromOffset int64     `json:"from_offset"`
	Offset     int64     `json:"offset"` // the progress offset last sent
	Records    int64     `json:"records"`
	Since      time.Time `json:"since"`
}
