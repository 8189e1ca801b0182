#!/usr/bin/env bash
# Stops ZooKeeper nodes started by start-zookeeper.sh or
# start-zookeeper-ensemble.sh and removes their directory.
# usage: stop-zookeeper.sh PID[,PID...] [DIR]
set -euo pipefail
pids=${1:?usage: stop-zookeeper.sh PID[,PID...] [DIR]}
dir=${2:-}
IFS=, read -r -a list <<<"$pids"
for pid in "${list[@]}"; do
  kill "$pid" 2>/dev/null || true
done
for pid in "${list[@]}"; do
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
case "$dir" in
  */zkbridge-zk.*) rm -rf "$dir" ;;
  "") ;;
  *) echo "stop-zookeeper: not removing $dir (not made by start-zookeeper.sh)" >&2 ;;
esac
