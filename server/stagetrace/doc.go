// Package stagetrace records where one write's time goes, stage by stage,
// on every node of a cluster: the ZooKeeper door's read, decode, proposal
// and reply of each write, and the replicated core's Raft log saves
// (append + fsync), state machine applies and peer messages sent and
// received, each stamped with the machine's monotonic clock so that the
// records of several nodes on one machine line up.
//
// It is off by default and costs one atomic load per probe then. It is
// turned on at start by the environment variable ZKBRIDGE_WRITE_STAGES=1;
// a node's admin address serves what it recorded at /debug/stages (JSON;
// ?reset=1 clears it), and Breakdown joins the records of all nodes into a
// per-stage table (`zkbridge bench --stages`). Records are kept in rings of
// fixed size: the newest writes win.
package stagetrace
