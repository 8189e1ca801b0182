// Package peernet carries Raft messages and snapshot chunks between
// zkbridge nodes: dragonboat's transport plugin (config.TransportFactory).
//
// Dragonboat's own TCP module writes each message batch in three write
// calls (magic number, header, payload), and its reader reads them in
// three or more. On loopback and in virtual machines every call is a
// wake-up of the receiving side, and with every write replicated to two
// followers and committed back it cost about a third of a leader's CPU
// (perf, 3 nodes at one request in flight). Here a frame leaves in one
// write and arrives through a buffered reader.
//
// Wire format, per TCP connection: a preamble of the 4 bytes "ZKBP", a
// version byte and a kind byte (1: Raft message batches, 2: snapshot
// chunks), then frames: a 4-byte big-endian payload length, the payload's
// 4-byte CRC-32C, and the payload (a marshalled raftpb.MessageBatch or
// raftpb.Chunk). A reader that meets a bad preamble, an oversize or corrupt
// frame, or a payload that does not decode closes the connection; the
// sender's next write fails and dragonboat dials again.
//
// Beyond carrying bytes, the transport keeps a slow or stalled peer from
// being flooded: no more than a bounded number of Replicate and Heartbeat
// messages go to a peer replica that has not answered them, the rest are
// held and merged (flow.go); a peer that is down is redialed rather than
// failed (redial.go); and a node that did not run for a while discards the
// stale backlog of its incoming connections (stall.go).
package peernet
