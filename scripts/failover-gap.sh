#!/usr/bin/env bash
# Measures the leader failover gap: a go-zookeeper client writes one znode
# at a time, connected to all three nodes; the leader is killed with
# SIGKILL; the gap is the time from the last write acknowledged before the
# kill to the first one after. Five runs on a 3-node zkbridge, five on a
# 3-node ZooKeeper 3.8 (scripts/start-zookeeper-ensemble.sh), medians side
# by side. Loopback only; takes about two minutes.
#
# usage: scripts/failover-gap.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ -f /usr/share/java/zookeeper.jar ] || bash "$here/scripts/install-zookeeper.sh"
cd "$here"
go test -count=1 -run '^$' -bench '^BenchmarkFailoverGap$' -benchtime 1x -timeout 15m ./compat-tests/ |
  grep -v '^goos:\|^goarch:\|^pkg:\|^cpu:'
