// Package zkclient is a small but complete ZooKeeper client over zkproto,
// written for zkbridge's shell: every opcode of the 3.8/3.9 protocol
// (addWatch, removeWatches, getEphemerals, getAllChildrenNumber, whoAmI,
// reconfig and multi included), a session that survives connection loss
// (pings at a third of the negotiated timeout, reconnects across the
// server list and resumes the session with its id and password), a chroot,
// watches delivered as events in the order the server sent them, and auth
// re-sent on every reconnect together with the watches (setWatches2).
//
// It is a client of any ZooKeeper-wire server: zkbridge and a real
// ZooKeeper ensemble alike. Errors from the server are zkproto.ErrCode
// values wrapped in *Error, which carries the path the way the Java
// client's KeeperException does.
package zkclient
