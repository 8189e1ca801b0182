// Package zkdata reads a ZooKeeper 3.5–3.9 data directory offline, byte
// for byte as ZooKeeper writes it: the version-2 directories holding
// snapshot.<zxid hex> files (plain, .gz or .snappy) and log.<zxid hex>
// transaction logs. It is the reading half of `zkbridge migrate convert`.
//
// Formats (from ZooKeeper's FileSnap, SnapStream, FileTxnLog, Util,
// SerializeUtils, DataTree and zookeeper.jute), all integers big-endian:
//
//	FileHeader   int magic ("ZKSN" snapshot, "ZKLG" log), int version (2), long dbid
//	snapshot     FileHeader, int sessionCount, {long id, int timeout}*,
//	             int aclCount, {long id, int n, ACL*n}*, {ustring path, DataNode}*
//	             until path "/", long adler32, ustring "/"
//	             [3.6+ digest: long zxid, int digestVersion, long digest,
//	             long adler32, ustring "/"] [3.9+: long lastZxid, long adler32, ustring "/"]
//	DataNode     buffer data, long acl, StatPersisted
//	log          FileHeader, {long adler32, buffer txn, byte 'B'}*, zero padding
//	txn          TxnHeader{long clientId, int cxid, long zxid, long time, int type},
//	             record (by type; absent for old closeSession), [TxnDigest{int version, long treeDigest}]
//
// ReadSnapshot streams a snapshot through callbacks (the tree is never held
// in memory) and verifies its Adler32 seals. LogReader iterates the
// transactions of all logs from a zxid on, verifying each entry's Adler32:
// a torn or zero-filled tail ends the iteration (io.EOF, with the tail's
// position in Tail), while damage followed by more valid entries, an unknown
// txn type or a record that does not parse is an error naming file and
// offset. Tree replays a snapshot plus transactions in memory the way
// ZooKeeper's DataTree does, for verification and small data sets.
package zkdata
