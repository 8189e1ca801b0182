// Package server is one zkbridge node: the dragonboat NodeHost wiring
// (raft.go), the ZooKeeper client listener, connections and their
// per-session request pipeline (conn.go, handlers.go), sessions and their
// expiry (session.go), the watch manager (watch.go), four-letter words
// (fourlw.go), the admin HTTP endpoint with /commands and /metrics
// (admin.go), and configuration loading from flags, YAML and zoo.cfg
// (config.go).
//
// Ordering is the heart of it. Writes of a connection are proposed in
// order, each stamped with (connection, sequence) so the state machine
// refuses any that would overtake a lost predecessor. Reads wait until every
// earlier request of their connection has been answered, then run against
// the local replica under a read lock that applies take exclusively, so a
// read never sees a change whose watch events are not yet queued. Replies
// leave in request order; watch events go straight to the output queue.
package server
