// Package compattests will be the differential suite: every scenario runs
// against a real ZooKeeper 3.8 (started by scripts/start-zookeeper.sh) and
// against zkbridge, and the normalised transcripts are compared; real
// clients (zkCli.sh, kazoo, the C client) are driven end to end.
package compattests
