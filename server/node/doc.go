// Package node is the replicated core of one zkbridge node: the dragonboat
// NodeHost and the data shard's replica, the local state machine (sm), the
// liveness and expiry of sessions, the leader watch, membership and
// replica progress, with logfs (the Raft log's files) and peernet (the
// Raft transport) beneath it. It knows nothing of client sockets, jute
// framing or HTTP; it speaks in sm commands and results (whose error codes
// are ZooKeeper's, zkproto.ErrCode).
//
// The surface a front door builds on:
//
//   - Lifecycle: New, then Subscribe / AddApplyBarrier / SetProgressSource,
//     then Start (which does not wait for a quorum), WaitServing, Serving,
//     Ready, Stop.
//   - Writes: Propose (asynchronous; many in flight, batched into one log
//     write and fsync) and ProposeSync, with the result as applied; an
//     error means the outcome is unknown (ErrOutcomeUnknown after a leader
//     change). Primary order is the caller's: it stamps each command with
//     its (connection, sequence), which apply checks.
//   - Reads: View of the local replica; LockReads/UnlockReads hold off
//     applies (so a read and the watches it registers are atomic with
//     respect to the apply hooks); ReadIndex / CatchUp / AwaitCommitted to
//     be as fresh as the leader (ZooKeeper's sync); LastZxid.
//   - Applied changes: Hooks.Applied runs on the apply path, lock held,
//     after each batch, with every result (its watch events, the session
//     it closed, …); an ApplyBarrier runs work at an exact place in the log.
//   - Sessions: CreateSession, ResumeSession, CloseSession, SessionInfo,
//     NegotiateTimeout, TrackSession, TouchSession (activity is reported to
//     the other replicas every half tick; the leader proposes expiry).
//   - Status and membership: Raft, IsLeader, Voters, IsObserver,
//     Membership / RefreshMembership (Hooks.MembershipChanged), Status,
//     TransferLeader, AddVoter, AddObserver, RemoveVoter, LocalProgress,
//     FollowerLag, Metrics, ContentHash; Hooks.LeaderLost / LeaderBack
//     when the node is cut off from its leader for longer than an election.
package node
