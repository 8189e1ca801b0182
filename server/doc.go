// Package server wires one zkbridge node together: configuration
// (server/config) → the replicated core (server/node) → its front doors
// (server/zk, the ZooKeeper protocol; later the native gRPC API) → the
// admin HTTP endpoint (server/admin).
//
// The rooms and their doors:
//   - node knows nothing of client sockets, jute framing or HTTP: it
//     proposes commands, serves reads of the local replica, keeps sessions
//     alive and reports what it applied (see its doc.go for the surface).
//   - Each front door imports node and never another front door: what two
//     doors both need is a method of the node. A new door is added here,
//     without touching server/zk.
//   - admin serves HTTP over the node and over a door's commands, through
//     a small interface.
//
// Open binds the ports and starts Raft without waiting for a quorum, as a
// ZooKeeper server keeps looking for its peers for as long as it runs;
// Start is Open followed by WaitServing.
package server
