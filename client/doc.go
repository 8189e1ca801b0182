// Package client is the Go client of zkbridge's native API (the gRPC
// service zkbridge.v1.Bridge beside the ZooKeeper port; see
// docs/native-api.md for the contract).
//
// Dial takes the native addresses of one or more nodes of a cluster. Every
// node serves every call, so the client keeps one connection per node and
// moves to the next node (round robin) when one is unavailable:
//
//   - calls that are safe to repeat (Get, List, Status,
//     ListCutoverPolicies, heartbeats, the change feed and its snapshots)
//     fail over transparently, for a bounded time (WithFailoverWindow);
//   - writes (Put, Delete, AllocateID, Register, SetCutoverPolicy) fail
//     over only when the node refused the call before doing anything (it
//     was unreachable, or had no Raft leader). When the outcome is unknown
//     (the connection broke after the request left) the error is returned:
//     the caller decides whether repeating the write is safe.
//
// Register returns a Lease that keeps itself alive (a KeepAlive stream, a
// heartbeat every TTL/3, moving to another node when a stream breaks) until
// Close, or until it is lost: Lost is closed and Err says why.
//
// Watch returns a Watcher: an ordered change feed that resumes on another
// node after a failure without a gap or a duplicate, and that recovers from
// compaction with a snapshot (a Snapshot event) and a resume after it.
//
// IDAllocator hands out ids from blocks reserved with AllocateID (a
// Curator DistributedAtomicLong-compatible counter), one round trip per
// block.
//
// Errors are gRPC status errors (status.Code works on them, wrapped or
// not); a registration conflict is a *ConflictError.
package client
