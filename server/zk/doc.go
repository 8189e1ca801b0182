// Package zk is the ZooKeeper front door of a zkbridge node: the client
// listener, connections and their per-session request pipeline (conn.go,
// handlers.go), session handshakes (session.go), deferred reads
// (deferred.go), the watch manager (watch.go), four-letter words and the
// AdminServer commands (fourlw.go, commands.go), read-only mode
// (readonly.go), reconfig and /zookeeper/config (reconfig.go,
// dynconfig.go), tenant selection by TLS identity on the shared secure
// port and the relay of certificate-selected clients between nodes
// (identity.go, relay.go). It works through the replicated core's surface
// (server/node) alone.
//
// Ordering is the heart of it. Writes of a connection are proposed in
// order, each stamped with (connection, sequence) so the state machine
// refuses any that would overtake a lost predecessor. Reads wait until every
// earlier request of their connection has been answered, then run against
// the local replica under the node's read lock, which applies take
// exclusively, so a read never sees a change whose watch events are not yet
// queued. Replies leave in request order; watch events go straight to the
// output queue.
package zk
