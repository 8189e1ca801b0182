#!/usr/bin/env bash
# Stops a ZooKeeper started by start-zookeeper.sh and removes its directory.
# usage: stop-zookeeper.sh PID [DIR]
set -euo pipefail
pid=${1:?usage: stop-zookeeper.sh PID [DIR]}
dir=${2:-}
if kill -0 "$pid" 2>/dev/null; then
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
fi
case "$dir" in
  */zkbridge-zk.*) rm -rf "$dir" ;;
  "") ;;
  *) echo "stop-zookeeper: not removing $dir (not made by start-zookeeper.sh)" >&2 ;;
esac
