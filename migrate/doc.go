// Package migrate moves a ZooKeeper ensemble into zkbridge, exactly: every
// znode with its data, full stat (czxid/mzxid/pzxid, versions, the
// child-create counter that gives the next sequential suffix, ctime and
// mtime) and ACL, containers and TTL nodes (from a data directory), and the
// sessions with their ephemerals and ZooKeeper's own passwords, so that
// clients resume them on zkbridge.
//
//   - Export reads a live ensemble through its client port (a parallel
//     walk) and the four-letter words cons, dump and srvr (sessions and the
//     last zxid), into a Sink: a versioned JSON-lines file (format.go) or an
//     Importer straight away.
//   - Convert reads a stopped ZooKeeper's data directory (zkdata): the
//     newest snapshot and every later transaction.
//   - Importer streams to a zkbridge node's native API (the Import RPCs):
//     batches of sessions and nodes, each one Raft entry; Begin refuses a
//     non-empty target unless merge and raises zxidBase above the source's
//     epoch, Finish raises it again.
//   - Validate compares two trees node by node through their client ports.
//   - Live imports, then runs catch-up passes (ImportUpdate) until a pass
//     finds no difference, heartbeating the imported sessions meanwhile.
//
// ZooKeeperPassword derives a ZooKeeper session's password from its id.
// docs/migration.md is the runbook.
package migrate
