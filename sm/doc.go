// Package sm is zkbridge's replicated state machine: the znode tree, sessions
// and change log of one shard, kept in Pebble and driven by dragonboat as an
// IOnDiskStateMachine.
//
// # Boundary with the server
//
// Writes. The server builds a Command (a Header with session, connection,
// per-connection sequence number, time and auth identities, plus one Op:
// *CreateSession, *CloseSession, *SetSessionOwner, *Create, *Delete,
// *SetData, *SetACL, *Check, *Multi, *ReapContainer, *ReapTTL,
// *SetZxidBase), proposes Command.Encode() through dragonboat and decodes the
// proposer's statemachine.Result.Data with DecodeResult. Result.Value is the
// entry's zxid. The Result carries the reply header error, the created path,
// the new Stat, per-op Multi results framed as ZooKeeper does, and
// OutOfOrder for a write that broke primary order (the server then closes
// the connection; Err is SessionMoved).
//
// Watches. Config.Notify receives every applied entry's Result, including
// its Events (NodeCreated, NodeDeleted, NodeDataChanged,
// NodeChildrenChanged in ZooKeeper's firing order), on every replica, right
// after the batch commit and before Update returns: the hook for
// apply-then-notify.
//
// Reads. StateMachine.View opens a consistent Pebble-snapshot view with Get,
// Exists, Children, AllChildrenNumber, Ephemerals, Session, Sessions,
// ReapCandidates, ChangeLog, LastZxid and AppliedIndex. Lookup runs a Query
// (func(*View) (any, error)) for dragonboat's StaleRead/SyncRead. Reads do not
// check ACLs: the server uses CheckACL (the same function apply uses) on the
// ACL Get returns.
//
// # Semantics
//
// Apply is authoritative and deterministic (no clocks, randomness, map order
// or goroutines): every ZooKeeper check — session, ownership, primary order,
// path, flags/opcode, TTL, fixupACL, ACL with the command's identities and
// Config.SuperDigest, existence, versions, ephemeral parents, special nodes —
// is evaluated here in PrepRequestProcessor's order. zxid = zxidBase + entry
// index, and every entry consumes its zxid whatever the outcome. Session IDs
// are the zxid of their CreateSession entry. Stats follow DataTree: the stored
// create count gives the sequential suffix and the visible cversion
// (2*creates - numChildren); containers and TTL nodes show ephemeralOwner 0.
//
// # Persistence
//
// One indexed Pebble batch per Update carries all entries and the applied
// index and is committed without fsync; Sync fsyncs the WAL; Open returns the
// applied index. SaveSnapshot streams a Pebble snapshot with a SHA-256
// trailer; RecoverFromSnapshot loads into a fresh directory, verifies it and
// only then switches the CURRENT pointer. The key layout is described in
// keys.go; each successful transaction appends a ChangeRecord, retained by
// Config.ChangeLogMaxRecords / ChangeLogMaxBytes.
package sm
