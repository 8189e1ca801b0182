#!/usr/bin/env bash
# Starts a real ZooKeeper 3.8 standalone server (Debian's package) on a
# loopback port with a fresh data directory, waits until it serves, and
# prints "PORT PID DIR" on stdout. Stop it with stop-zookeeper.sh PID DIR.
#
# usage: start-zookeeper.sh [PORT]      (a free port is chosen when omitted)
# environment:
#   ZK_SUPER_DIGEST      super user digest (default: super:superpw's)
#   ZK_CONTAINER_CHECK_MS  znode.container.checkIntervalMs (default 60000)
#   ZK_TICK_TIME         tickTime (default 2000)
#   ZK_FORCE_SYNC        forceSync (default unset: yes, the txn log is fsynced)
#   ZK_HEAP              JVM heap, e.g. 512m (default 512m)
#   ZK_JVM_FLAGS         extra JVM flags
#   ZK_EXTRA_CFG         extra zoo.cfg lines (e.g. secureClientPort and ssl.* keys)
#   ZK_TLS               1: put the netty jars TLS needs on the classpath
set -euo pipefail

# shellcheck source=scripts/zookeeper-lib.sh
source "$(dirname "$0")/zookeeper-lib.sh"
zk_require

port=${1:-$(zk_free_ports 1)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-zk.XXXXXX")
mkdir -p "$dir/data"

cat >"$dir/zoo.cfg" <<CFG
tickTime=${ZK_TICK_TIME:-2000}
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
admin.enableServer=false
${ZK_FORCE_SYNC:+forceSync=$ZK_FORCE_SYNC}
${ZK_EXTRA_CFG:-}
CFG

zk_launch org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" "$dir/zookeeper.log" "${ZK_HEAP:-512m}"
pid=$!

deadline=$((SECONDS + 60))
until [[ "$(zk_srvr "$port")" == "Zookeeper version"* ]]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 20 "$dir/zookeeper.log" >&2 || true
    rm -rf "$dir"
    zk_die "ZooKeeper exited during start-up (log above)"
  fi
  if ((SECONDS > deadline)); then
    kill -9 "$pid" 2>/dev/null || true
    rm -rf "$dir"
    zk_die "ZooKeeper did not serve on 127.0.0.1:$port within 60 s"
  fi
  sleep 0.2
done
echo "$port $pid $dir"
