// Package admin is a node's admin HTTP endpoint: ZooKeeper's AdminServer
// commands under /commands/<name> (answered by a front door through the
// Commands interface), Prometheus /metrics (mntr's values plus raft_*
// gauges), /healthz and /readyz for probes, /raft/* for `zkbridge raft`
// (status, membership changes, leader transfer, content hash), pprof, and
// the web console under /ui/ (package console).
// FetchProgress is how the leader asks another replica for its progress.
package admin
