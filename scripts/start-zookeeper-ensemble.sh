#!/usr/bin/env bash
# Starts a real ZooKeeper 3.8 ensemble of N nodes (default 3) on loopback
# ports with fresh data directories, waits until it has a leader and every
# node serves, and prints "CONNECT PIDS DIR": the clients' connection string
# (127.0.0.1:P1,127.0.0.1:P2,...), the comma-separated PIDs and the base dir.
# Stop it with: stop-zookeeper.sh PIDS DIR
#
# usage: start-zookeeper-ensemble.sh [N]
# environment: as start-zookeeper.sh (ZK_SUPER_DIGEST, ZK_CONTAINER_CHECK_MS,
# ZK_TICK_TIME, ZK_FORCE_SYNC, ZK_HEAP — default 256m per node here —, ZK_JVM_FLAGS),
# ZK_RECONFIG_ENABLED (true: zoo.cfg's reconfigEnabled, admits reconfig) and
# ZK_EXTRA_CFG (extra zoo.cfg lines for every node, e.g. maxClientCnxns=0),
# ZK_PORTS (the 3N ports to use, client quorum election per node in myid
# order, instead of free ones) and ZK_SERVERS_<i> (node i's server lines
# instead of the common ones: a fault suite names its peer proxies there)
set -euo pipefail

# shellcheck source=scripts/zookeeper-lib.sh
source "$(dirname "$0")/zookeeper-lib.sh"
zk_require
die() { zk_die "$@"; }

n=${1:-3}
# 3 ports per node: client, quorum, election.
if [[ -n ${ZK_PORTS:-} ]]; then
  read -r -a ports <<<"$ZK_PORTS"
  ((${#ports[@]} == n * 3)) || die "ZK_PORTS names ${#ports[@]} ports, want $((n * 3))"
else
  mapfile -t ports < <(zk_free_ports $((n * 3)))
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-zk.XXXXXX")
servers=""
for ((i = 1; i <= n; i++)); do
  c=${ports[$(( (i-1)*3 ))]} q=${ports[$(( (i-1)*3 + 1 ))]} e=${ports[$(( (i-1)*3 + 2 ))]}
  # With the client address, as a dynamic config names it (and zkbridge does).
  servers+="server.$i=127.0.0.1:$q:$e:participant;127.0.0.1:$c"$'\n'
done

pids=() connect=()
for ((i = 1; i <= n; i++)); do
  c=${ports[$(( (i-1)*3 ))]}
  own="ZK_SERVERS_$i"
  node_servers=${!own:-$servers}
  mkdir -p "$dir/$i/data"
  echo "$i" >"$dir/$i/data/myid"
  cat >"$dir/$i/zoo.cfg" <<CFG
tickTime=${ZK_TICK_TIME:-2000}
initLimit=10
syncLimit=5
dataDir=$dir/$i/data
clientPort=$c
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
admin.enableServer=false
${ZK_FORCE_SYNC:+forceSync=$ZK_FORCE_SYNC}
${ZK_RECONFIG_ENABLED:+reconfigEnabled=$ZK_RECONFIG_ENABLED}
${ZK_EXTRA_CFG:-}
$node_servers
CFG
  zk_launch org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/$i/zoo.cfg" "$dir/$i/zookeeper.log" "${ZK_HEAP:-256m}"
  pids+=($!)
  connect+=("127.0.0.1:$c")
done

mode() { zk_srvr "$1" | sed -n 's/^Mode: //p'; } # the node's Mode, or nothing

deadline=$((SECONDS + 90))
while :; do
  leaders=0 serving=0
  for ((i = 1; i <= n; i++)); do
    m=$(mode "${ports[$(( (i-1)*3 ))]}" 2>/dev/null || true)
    case "$m" in
      leader) leaders=$((leaders + 1)); serving=$((serving + 1)) ;;
      follower) serving=$((serving + 1)) ;;
    esac
  done
  ((leaders == 1 && serving == n)) && break
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { tail -n 20 "$dir"/*/zookeeper.log >&2; kill -9 "${pids[@]}" 2>/dev/null; rm -rf "$dir"; die "a ZooKeeper node exited during start-up (logs above)"; }
  done
  if ((SECONDS > deadline)); then
    kill -9 "${pids[@]}" 2>/dev/null || true
    rm -rf "$dir"
    die "the ensemble did not elect a leader and serve within 90 s"
  fi
  sleep 0.3
done
(IFS=,; echo "${connect[*]} ${pids[*]} $dir")
