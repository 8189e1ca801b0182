// Package logfs is the file system the Raft log store (dragonboat's tan)
// writes through: dragonboat's config.ExpertConfig.FS.
//
// Tan appends every write's entries to a log file and fsyncs it. The file
// grows with each append, so each fsync also writes the file's inode (its
// size and times): on the 3-node benchmark a block trace showed three
// device requests per sync (data, inode, cache flush) and a sync taking
// 0.37 ms at the median, against 0.26 ms for ZooKeeper, which writes into
// a preallocated log and syncs with fdatasync.
//
// Here a tan log file (a name of digits ending in ".log") is created at its
// full size (fallocate, 64 MiB plus tan's 128 KiB index margin), so an
// append does not change the size, and its Sync is fdatasync, which then
// has no inode to write for most syncs. The same trace then showed a sync
// at 0.24 ms at the median.
//
// The reserved space reads as zeros, which tan's record reader takes for a
// bad record instead of the end of the log. So, for tan to see the file
// it would have seen without the reservation:
//   - a reader of a log still being written reads up to what was written
//     and then meets the end of the file;
//   - closing a log truncates it to what was written;
//   - TrimReserved, run before tan opens, cuts the zero tail of a log that
//     a crash left at its reserved size, after checking that the tail is
//     all zeros and that it follows the last complete, checksummed chunk.
//     It never removes a byte that is not zero.
package logfs
