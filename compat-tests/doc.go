// Package compattests is the differential suite: every scenario runs, with
// the same raw-protocol client code, against a reference server (a real
// ZooKeeper 3.8, started by scripts/start-zookeeper.sh) and a candidate
// (zkbridge, or any ZooKeeper-compatible server), and the normalised
// transcripts are compared (transcript.go: zxids as ranks, session ids,
// times). Real clients (zkCli.sh, kazoo, the C client, go-zookeeper) are
// driven end to end by the tests of clients_test.go.
//
// The scenario library is importable (no test code): the area files
// (basic.go, acl.go, watches.go, …) register scenarios in init, Scenarios
// lists them, CompareOne and Compare run them against two Targets, probe.go
// finds out what a server offers them (Settings) and report.go prints the
// results. `zkbridge compat` (cli/compat.go, docs/compat.md) is the tool
// built on it for any two servers; the go tests run the same library
// against servers they start: TestCompat (standalone ZooKeeper and
// zkbridge), TestCompatCluster (3-node ensembles), TestCompatReconfig,
// and TestCompatSelfCheck (ZooKeeper against ZooKeeper: every scenario
// equal).
//
// A scenario keeps to a root of its own, removed before and after it, and
// declares what it needs of the servers (Need: the super user, TTL nodes,
// the reaper interval, four-letter words, reconfig, a fresh or exclusive
// server); a run skips it, with that reason, on servers that lack it.
//
// Tests that need a process harness (faults_test.go, startup_test.go,
// readonly_test.go, cluster_test.go) stay tests.
package compattests
