// Package native is the native front door of a zkbridge node: the gRPC
// service zkbridge.v1.Bridge (api/zkbridge/v1) over the same znode tree the
// ZooKeeper door serves, through the replicated core's surface
// (server/node) alone. Leases are sessions without a TCP connection, and a
// registration is an ephemeral znode such a lease owns, so servers still in
// ZooKeeper mode watching that path see an ordinary ephemeral appear and
// vanish. Reads are linearizable (a read index first) unless a request asks
// for the local replica. gRPC health and server reflection are on, so
// grpcurl works against it.
package native
