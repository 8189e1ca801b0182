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
//
// Facts an importer needs, checked against a real ZooKeeper 3.8:
//   - A stored cversion counts child creations; clients see
//     cversion*2 - numChildren (ClientStat).
//   - Containers store ephemeralOwner 0x8000000000000000 and TTL nodes
//     0xFF00000000000000|ttl; clients see 0 for both.
//   - A snapshot is fuzzy: its name's zxid is where replay starts (+1), and
//     replayed creates of existing nodes still move the parent's cversion.
//   - ZooKeeper writes dbid -1 in snapshots and 0 in logs and never
//     compares them.
//   - /, /zookeeper, /zookeeper/quota and /zookeeper/config are never
//     logged; /zookeeper/config has READ_ACL_UNSAFE and aversion -1.
package zkdata
