// Package zkbridgev1 is the native API of zkbridge, generated from
// bridge.proto (the source of truth) by `make proto`: the gRPC service
// zkbridge.v1.Bridge (leases, AllocateID, a small KV over the znode tree,
// status and membership) and its messages.
package zkbridgev1
