// Package faults is zkbridge's fault suite: it runs multi-process clusters
// of zkbridge (and a real ZooKeeper 3.8 ensemble, the reference) on
// loopback, drives workloads against them while a nemesis kills, pauses
// or cuts off nodes, and checks what the clients saw.
//
// Workloads and their checkers:
//   - register: set, compare-and-set (setData with a version) and synced
//     reads on a few keys; the history is checked for linearizability with
//     porcupine. Reads go after a sync, so they must be up to date
//     (ZooKeeper promises sequential consistency for plain reads); a write
//     whose outcome is unknown (ConnectionLoss, timeout) may or may not have
//     happened.
//   - set: sequential creates; every acknowledged create is present at the
//     end, none twice, and each client's creates are in its order (primary
//     order).
//   - counter: concurrent compare-and-set increments of one znode; the
//     final value lies between the acknowledged count and that plus the
//     unknown ones.
//   - sessions: an ephemeral per short session, visible while it lives,
//     gone (its watch fired) after the session ends.
//   - ttl: TTL nodes kept alive by writes, then left alone: never deleted
//     less than their TTL after an acknowledged write.
//   - leases (zkbridge): native-API leases renewed by the Go client: never
//     ended less than their TTL after an acknowledged heartbeat, gone once
//     deregistered or left without heartbeats for their TTL.
//
// Nemeses: kill -9 of the leader or of a follower (restarted on its data),
// SIGSTOP/SIGCONT of the leader or a follower for longer than an election
// timeout, the leader isolated by a partition, disk faults (slow, full,
// torn or garbled logs, a damaged state or snapshot file), a power cycle,
// and clock jumps: a node's wall clock (package wallclock) set ahead or
// behind through the file named by ZKBRIDGE_CLOCK_OFFSET_FILE. A zkbridge partition is
// injected in the peer transport (server/node/peernet reads the replica ids
// to cut off from the file named by ZKBRIDGE_PEER_FAULT_FILE): no root is
// needed for network namespaces, and the cut is exact per replica pair.
// ZooKeeper is not partitioned (its quorum ports would need a proxy or
// namespaces).
//
// Every run records its operations, prints a table (workload × nemesis →
// ops, ok, indeterminate, violations) and the write unavailability around
// each fault, and keeps porcupine's HTML visualisation of any failing
// history in the output directory.
package faults
