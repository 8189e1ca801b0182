#!/usr/bin/env bash
# Benchmarks zkbridge beside a real ZooKeeper 3.8 on loopback in the scale
# dimensions beyond throughput (issue 36's "new dimensions"), with
# `zkbridge bench`, and prints one table per dimension with both systems'
# figures and the ratio zkbridge/ZooKeeper. Each run of a dimension goes to
# ZooKeeper and then to zkbridge, DIMS_REPEAT times (alternated, so that
# both see the same machine), and the table shows the mean; the load
# average before each run is kept and shown, as the machine may be shared.
#
# Dimensions (arguments; default: all but bigtree, which takes long):
#   sessions  3 nodes each: DIMS_SESSIONS sessions (default 20000), 10 s
#             timeout, each pinging every third of it (the Java client's
#             idle ping); RSS per session on each node, ping p50/p99 over
#             DIMS_DURATION; then a reconnect storm: a follower (the same
#             role on both) is killed with SIGKILL and the time until every
#             session it held has resumed on another node is measured
#             (reconnects after a random pause of up to 1 s, as the Java
#             client); expired sessions are counted. Fresh clusters per run.
#   churn     3 nodes: connect + create an ephemeral node + closeSession,
#             16 connectors, as fast as they go: cycles/s and p99.
#   watches   3 nodes: DIMS_WATCHES one-shot data watches (default
#             1000000) over DIMS_WATCH_PATHS nodes (100000) from 100
#             sessions: RSS per watch over the three nodes; then a
#             NodeChildrenChanged fan-out to DIMS_FANOUT_WATCHERS sessions
#             (10000; from the write's send to the last event, and the
#             write's own time and the part after its reply; 20 rounds); then a
#             persistent recursive watch on / while sets run at
#             DIMS_RECURSIVE_RATE/s (5000): event delivery p50/p99.
#   values    3 nodes: setData and getData of 100 KB and 1 MB (1,000,000
#             bytes) values, 8 connections × 2 outstanding: ops/s and p99.
#   wide      1 node each: getChildren of a node with DIMS_WIDE children
#             (default "100000 1000000"), one at a time: latency and the
#             server's RSS peak during the reads (the reply of 1,000,000
#             children is ~12 MB, over jute.maxbuffer: both send it whole,
#             see compat-tests/wide.go).
#   catchup   3 nodes: a follower stopped, DIMS_CATCHUP znodes (default
#             1000000) created, the follower started again: its time
#             to serve them all (the leader sends it a snapshot) and the
#             newest snapshot's size. One run per system.
#   bigtree   1 node each: DIMS_BIGTREE znodes (default 10000000) via
#             bench-vs-zk.sh's memory run (RSS, heap, restart to serving),
#             ZooKeeper's heap DIMS_BIGTREE_ZK_HEAP (default 8g). The time
#             a snapshot takes is not measured.
#
# ZooKeeper: Debian's 3.8, default JVM flags (G1 on JDK 17) with a fixed
# heap of ZK_HEAP per node (default 2g: -Xms2g -Xmx2g), forceSync on,
# maxClientCnxns=0 (no per-address cap: every session comes from 127.0.0.1),
# tickTime 2000. zkbridge: `zkbridge server` defaults (Raft log fsynced on
# every write). The script raises its open-file limit to the hard limit;
# a sessions run holding more sessions than one process may open is split
# over child processes by `zkbridge bench`.
#
# usage: bench-dims.sh [DIMENSION...]
# environment: DIMS_SESSIONS, DIMS_WATCHES, DIMS_WATCH_PATHS,
#   DIMS_FANOUT_WATCHERS, DIMS_RECURSIVE_RATE, DIMS_WIDE, DIMS_BIGTREE (above),
#   DIMS_DURATION (measured time per run, default 20s), DIMS_REPEAT (runs per
#   system, default 2), ZK_HEAP, ZKBRIDGE_BIN (a prebuilt zkbridge),
#   DIMS_KEEP=1 (keep the JSON results, and the zkbridge nodes' and ZooKeeper's logs, in the printed directory),
#   DIMS_RESULTS=DIR (run nothing: print the tables of a kept results
#   directory again, e.g. after the table code changed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bench-dims: $*" >&2; exit 1; }
log() { echo "bench-dims: $*" >&2; }

dims=${*:-sessions churn watches values wide}
sessions=${DIMS_SESSIONS:-20000}
watches=${DIMS_WATCHES:-1000000}
watch_paths=${DIMS_WATCH_PATHS:-100000}
fanout_watchers=${DIMS_FANOUT_WATCHERS:-10000}
recursive_rate=${DIMS_RECURSIVE_RATE:-5000}
wide_sizes=${DIMS_WIDE:-100000 1000000}
bigtree=${DIMS_BIGTREE:-10000000}
catchup=${DIMS_CATCHUP:-1000000}
duration=${DIMS_DURATION:-20s}
repeat=${DIMS_REPEAT:-2}
export ZK_HEAP=${ZK_HEAP:-2g}
export ZK_EXTRA_CFG="maxClientCnxns=0"
for d in $dims; do
  case $d in sessions | churn | watches | values | wide | bigtree | catchup) ;; *) die "unknown dimension $d (sessions churn watches values wide bigtree catchup)" ;; esac
done
for v in "$sessions" "$watches" "$watch_paths" "$fanout_watchers" "$recursive_rate" "$bigtree" "$catchup" "$repeat" $wide_sizes; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "$v: want a positive integer"
done
command -v jq >/dev/null || die "jq not found"
command -v curl >/dev/null || die "curl not found"
# The JDK that runs ZooKeeper, for its jcmd (the heap after a GC).
jcmd=$(dirname "$(readlink -f "$(command -v java)")")/jcmd
[ -x "$jcmd" ] || die "$jcmd not found"
# shellcheck source=scripts/zookeeper-lib.sh
source "$here/scripts/zookeeper-lib.sh"
zk_require

# Every session is a socket in the load generator and in a server.
ulimit -n "$(ulimit -Hn)" || true
log "open files: $(ulimit -n) per process"

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-dims.XXXXXX")
mkdir -p "$work/results" "$work/logs"
zb_clusters=0 zk_ensembles=0
if [ -n "${DIMS_RESULTS:-}" ]; then
  [ -d "$DIMS_RESULTS" ] || die "DIMS_RESULTS: no directory $DIMS_RESULTS"
  rmdir "$work/results"
  ln -s "$(cd "$DIMS_RESULTS" && pwd)" "$work/results"
fi
zk_pids="" zk_dir="" zb_pid="" cluster_dir=""
stop_zk() {
  if [ -n "$zk_pids" ]; then
    # ZooKeeper's logs outlive its directory too, as the zkbridge nodes' do.
    local f
    zk_ensembles=$((zk_ensembles + 1))
    for f in "$zk_dir"/*/zookeeper.log "$zk_dir"/zookeeper.log; do
      [ -f "$f" ] && cp "$f" "$work/logs/zk$zk_ensembles-$(basename "$(dirname "$f")").log"
    done
    bash "$here/scripts/stop-zookeeper.sh" "$zk_pids" "$zk_dir" >/dev/null 2>&1 || true
  fi
  zk_pids="" zk_dir=""
}
stop_zb() {
  if [ -n "$zb_pid" ]; then
    kill "$zb_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$zb_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$zb_pid" 2>/dev/null || true
    wait "$zb_pid" 2>/dev/null || true
    rm -rf "$work/zb-single"
  fi
  zb_pid=""
  if [ -n "$cluster_dir" ]; then
    # The nodes' logs outlive the cluster (local-cluster.sh stop removes
    # its directory): a node that died in a run is explained by them.
    local i
    zb_clusters=$((zb_clusters + 1))
    for i in "$cluster_dir"/node*.log; do
      [ -f "$i" ] && cp "$i" "$work/logs/cluster$zb_clusters-$(basename "$i")"
    done
    ZKBRIDGE_CLUSTER_DIR=$cluster_dir bash "$here/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true
  fi
  cluster_dir=""
}
cleanup() {
  stop_zk
  stop_zb
  if [ "${DIMS_KEEP:-0}" = 1 ]; then log "results kept in $work/results, zkbridge and ZooKeeper logs in $work/logs"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${DIMS_RESULTS:-}" ]; then
  bin=""
elif [ -n "${ZKBRIDGE_BIN:-}" ]; then
  bin=$ZKBRIDGE_BIN
else
  bin=$work/zkbridge
  (cd "$here" && go build -o "$bin" .) || die "go build failed"
fi

# start_zk N: sets zk_addr (addresses), zk_pids (in address order), zk_dir.
start_zk() {
  local out
  if [ "$1" = 1 ]; then
    out=$(bash "$here/scripts/start-zookeeper.sh") || die "ZooKeeper did not start"
    read -r zk_port zk_pids zk_dir <<<"$out"
    zk_addr=127.0.0.1:$zk_port
  else
    out=$(bash "$here/scripts/start-zookeeper-ensemble.sh" "$1") || die "the ZooKeeper ensemble did not start"
    read -r zk_addr zk_pids zk_dir <<<"$out"
  fi
}

# start_zb N: sets zb_addr and zb_pids (in address order).
start_zb() {
  if [ "$1" = 1 ]; then
    local ports
    mapfile -t ports < <(zk_free_ports 2)
    "$bin" server --data-dir "$work/zb-single" --client-addr "127.0.0.1:${ports[0]}" \
      --peer-addr "127.0.0.1:${ports[1]}" --no-admin --native-addr "" --log-format json \
      >"$work/zkbridge.log" 2>&1 </dev/null &
    zb_pid=$!
    zb_addr=127.0.0.1:${ports[0]} zb_pids=$zb_pid
    "$bin" bench --addr "$zb_addr" --probe / --timeout 60s >/dev/null ||
      { tail -n 20 "$work/zkbridge.log" >&2; die "zkbridge did not serve within 60 s"; }
  else
    cluster_dir=$work/cluster
    zb_addr=$(ZKBRIDGE_CLUSTER_DIR=$cluster_dir ZKBRIDGE_BIN=$bin bash "$here/scripts/local-cluster.sh" start "$1" 2>/dev/null | tail -n 1) ||
      die "the zkbridge cluster did not start"
    zb_pids=$(for ((i = 1; i <= $1; i++)); do cat "$cluster_dir/node$i.pid"; done | paste -sd, -)
  fi
}

# follower ADDRS PIDS: "ADDR PID I" of the first node whose srvr Mode is
# follower, I its 1-based place in ADDRS.
follower() {
  local addrs pids i
  IFS=, read -r -a addrs <<<"$1"
  IFS=, read -r -a pids <<<"$2"
  for i in "${!addrs[@]}"; do
    if [ "$(zk_srvr "${addrs[$i]##*:}" | sed -n 's/^Mode: //p')" = follower ]; then
      echo "${addrs[$i]} ${pids[$i]} $((i + 1))"
      return
    fi
  done
  die "no follower among $1"
}

# bench SYS OUT ARGS...: one run against SYS (zk or zb); its JSON report,
# with the load average before it, in OUT. A failed run writes {"failed":true}.
bench() {
  local sys=$1 out=$2 addr load
  shift 2
  addr=$zk_addr
  [ "$sys" = zb ] && addr=$zb_addr
  load=$(cut -d' ' -f1 /proc/loadavg)
  log "$(basename "$out" .json): $([ "$sys" = zk ] && echo ZooKeeper || echo zkbridge) (load $load)"
  if "$bin" bench --addr "$addr" --json --progress 0 "$@" >"$out.tmp" 2>"$out.err"; then
    jq --argjson load "$load" '. + {load1: $load}' "$out.tmp" >"$out"
  else
    log "  failed: $(tail -n 3 "$out.err" | tr '\n' ' ')"
    local p
    for p in ${zb_pids//,/ }; do
      [ "$sys" = zb ] && ! kill -0 "$p" 2>/dev/null && log "  zkbridge node pid $p is gone: its log is kept with the results (DIMS_KEEP=1)"
    done
    jq -n --argjson load "$load" '{failed: true, load1: $load}' >"$out"
  fi
  rm -f "$out.tmp"
}
pids_of() { if [ "$1" = zk ]; then echo "$zk_pids"; else echo "$zb_pids"; fi; }
addr_of() { if [ "$1" = zk ]; then echo "$zk_addr"; else echo "$zb_addr"; fi; }

run_sessions() {
  local r sys f faddr fpid
  for ((r = 1; r <= repeat; r++)); do
    for sys in zk zb; do
      if [ "$sys" = zk ]; then start_zk 3; else start_zb 3; fi
      read -r faddr fpid _ < <(follower "$(addr_of "$sys")" "$(pids_of "$sys")")
      printf '#!/bin/sh\n[ "$1" = storm ] && kill -9 %s\nexit 0\n' "$fpid" >"$work/storm-hook"
      bench "$sys" "$work/results/sessions-$sys-$r.json" --workload sessions --connections "$sessions" \
        --session-timeout 10s --duration "$duration" --warmup 10s --timeout 60s \
        --server-pids "$(pids_of "$sys")" --storm-addr "$faddr" --hook "sh $work/storm-hook"
      if [ "$sys" = zk ]; then stop_zk; else stop_zb; fi
    done
  done
}

run_churn() {
  local r sys
  start_zk 3
  start_zb 3
  for ((r = 1; r <= repeat; r++)); do
    for sys in zk zb; do
      bench "$sys" "$work/results/churn-$sys-$r.json" --workload churn --connections 16 \
        --duration "$duration" --warmup 5s --server-pids "$(pids_of "$sys")"
    done
  done
  stop_zk
  stop_zb
}

# heap_hook SYS OUT-PREFIX: a hook script that writes, at each phase, the
# heap in use after a full GC summed over SYS's nodes to OUT-PREFIX-PHASE:
# ZooKeeper's Java heap used (jcmd GC.run, GC.heap_info), zkbridge's Go
# heap in use (/debug/pprof/heap?gc=1, then /metrics). RSS, which the bench
# reads itself, also holds what a collector has not given back.
heap_hook() {
  local sys=$1 out=$2 f=$work/heap-hook-$1
  {
    echo '#!/bin/sh'
    echo 'total=0'
    if [ "$1" = zk ]; then
      local pid
      for pid in ${zk_pids//,/ }; do
        echo "\"$jcmd\" $pid GC.run >/dev/null"
        echo "v=\$(\"$jcmd\" $pid GC.heap_info | awk 'match(\$0, /used [0-9]+K/) { print substr(\$0, RSTART + 5, RLENGTH - 6) * 1024; exit }')"
        echo 'total=$((total + ${v:-0}))'
      done
    else
      local i
      for ((i = 1; ; i++)); do
        [ -f "$cluster_dir/node$i.env" ] || break
        # shellcheck disable=SC1090
        local admin; admin=$(. "$cluster_dir/node$i.env"; echo "127.0.0.1:$ADMIN")
        echo "curl -sf http://$admin/debug/pprof/heap?gc=1 >/dev/null"
        echo "v=\$(curl -sf http://$admin/metrics | awk '\$1 == \"go_memstats_heap_inuse_bytes\" { printf \"%.0f\", \$2 }')"
        echo 'total=$((total + ${v:-0}))'
      done
    fi
    echo "echo \$total >\"$out-\$1\""
  } >"$f"
  echo "sh $f"
}

run_watches() {
  local r sys out
  start_zk 3
  start_zb 3
  for ((r = 1; r <= repeat; r++)); do
    for sys in zk zb; do
      out=$work/results/watches-$sys-$r.json
      bench "$sys" "$out" --workload watches --connections 100 --outstanding 256 \
        --keyspace "$watch_paths" --fanout 1000 --payload 10 --watches "$watches" --warmup 10s --timeout 120s \
        --server-pids "$(pids_of "$sys")" --root "/dims-watches-$r" --hook "$(heap_hook "$sys" "$work/heap-$sys-$r")"
      if [ -f "$work/heap-$sys-$r-before" ] && [ -f "$work/heap-$sys-$r-armed" ]; then
        jq --argjson b "$(cat "$work/heap-$sys-$r-before")" --argjson a "$(cat "$work/heap-$sys-$r-armed")" \
          '. + {heap_before: $b, heap_armed: $a}' "$out" >"$out.tmp" && mv "$out.tmp" "$out"
      fi
    done
  done
  for ((r = 1; r <= repeat; r++)); do
    for sys in zk zb; do
      bench "$sys" "$work/results/fanout-$sys-$r.json" --workload watch --watch-kind children \
        --watchers "$fanout_watchers" --ops 20 --warmup 0s --timeout 120s --server-pids "$(pids_of "$sys")"
    done
  done
  for ((r = 1; r <= repeat; r++)); do
    for sys in zk zb; do
      bench "$sys" "$work/results/recursive-$sys-$r.json" --workload recursive --connections 8 \
        --rate "$recursive_rate" --duration "$duration" --warmup 3s --server-pids "$(pids_of "$sys")"
    done
  done
  stop_zk
  stop_zb
}

run_values() {
  local r sys size keys w
  start_zk 3
  start_zb 3
  for size in 100000 1000000; do
    keys=$((size == 100000 ? 128 : 32))
    for w in set get; do
      for ((r = 1; r <= repeat; r++)); do
        for sys in zk zb; do
          bench "$sys" "$work/results/values-$w-$size-$sys-$r.json" --workload "$w" --payload "$size" \
            --keyspace "$keys" --fanout "$keys" --connections 8 --outstanding 2 --duration "$duration" \
            --warmup 3s --timeout 60s --server-pids "$(pids_of "$sys")" --root "/dims-values-$size"
        done
      done
    done
  done
  stop_zk
  stop_zb
}

run_wide() {
  local sys n
  for sys in zk zb; do
    if [ "$sys" = zk ]; then start_zk 1; else start_zb 1; fi
    for n in $wide_sizes; do
      # Each size once per system: making the children is most of the time.
      bench "$sys" "$work/results/wide-$n-$sys-1.json" --workload list --keyspace "$n" --fanout "$n" --payload 0 \
        --connections 1 --outstanding 1 --ops 20 --warmup 0s --timeout 600s --no-cleanup \
        --server-pids "$(pids_of "$sys")" --root "/dims-wide-$n"
    done
    if [ "$sys" = zk ]; then stop_zk; else stop_zb; fi
  done
}

# newest_snapshot SYS: bytes of what a snapshot of SYS's running cluster
# holds. ZooKeeper: its newest snapshot.* file. zkbridge: the largest
# node's Pebble state directory, which a snapshot streams (dragonboat's
# own snapshot directory of an on-disk state machine is a marker of a few
# kB).
newest_snapshot() {
  local f
  if [ "$1" = zk ]; then
    f=$(ls -t "$zk_dir"/*/data/version-2/snapshot.* 2>/dev/null | head -n 1)
    if [ -n "$f" ]; then stat -c %s "$f"; else echo null; fi
  else
    du -sb "$cluster_dir"/node*/state 2>/dev/null | sort -n | tail -n 1 | cut -f1 | grep . || echo null
  fi
}

# run_catchup: per system, a 3-node cluster with one follower stopped
# (SIGKILL) while DIMS_CATCHUP znodes of 100 B are created, then started
# again: the time from its start to its first getAllChildrenNumber that
# counts them all, far enough behind that the leader sends it a snapshot
# (ZooKeeper: SNAP, the log being larger than a third of the snapshot;
# zkbridge: the log kept behind a snapshot is 5 × 10,000 entries).
run_catchup() {
  local sys faddr fpid fi t0 out restarter=""
  for sys in zk zb; do
    if [ "$sys" = zk ]; then start_zk 3; else start_zb 3; fi
    read -r faddr fpid fi < <(follower "$(addr_of "$sys")" "$(pids_of "$sys")")
    kill -9 "$fpid"
    local live
    live=$(addr_of "$sys" | tr ',' '\n' | grep -vx "$faddr" | paste -sd, -)
    log "catchup-$sys: follower $faddr stopped; creating $catchup znodes"
    out=$work/results/catchup-$sys-1.json
    if ! "$bin" bench --addr "$live" --workload create --ops "$catchup" --warmup 0s --no-cleanup --connections 8 \
      --outstanding 64 --payload 100 --root /dims-catchup --timeout 600s --progress 0 --json >"$out.load" 2>"$out.err"; then
      jq -n '{failed: true}' >"$out"
      log "catchup-$sys: creating the znodes failed: $(tail -n 1 "$out.err")"
      if [ "$sys" = zk ]; then stop_zk; else stop_zb; fi
      continue
    fi
    # What the live nodes hold: a create lost to ConnectionLoss may or
    # may not have been applied, so the count is asked, not assumed.
    local snap want
    want=$("$bin" bench --addr "${live%%,*}" --probe /dims-catchup --timeout 60s --json 2>>"$out.err" | jq -r '.children // empty')
    [ -n "$want" ] || want=$catchup
    snap=$(newest_snapshot "$sys")
    t0=$(date +%s.%N)
    if [ "$sys" = zk ]; then
      zk_launch org.apache.zookeeper.server.quorum.QuorumPeerMain "$zk_dir/$fi/zoo.cfg" "$zk_dir/$fi/zookeeper.log" "$ZK_HEAP"
      zk_pids=$(echo "$zk_pids" | tr ',' '\n' | sed "s/^$fpid\$/$!/" | paste -sd, -)
    else
      ZKBRIDGE_CLUSTER_DIR=$cluster_dir bash "$here/scripts/local-cluster.sh" restart "$fi" >/dev/null 2>&1 &
      restarter=$!
    fi
    if "$bin" bench --addr "$faddr" --probe /dims-catchup --probe-min "$want" --timeout 1200s --json >"$out.probe" 2>>"$out.err"; then
      jq --argjson t0 "$t0" --argjson snap "$snap" --argjson load "$(cut -d' ' -f1 /proc/loadavg)" --slurpfile l "$out.load" \
        '{catchup_s: (.answered_at_unix_s - $t0), znodes: .children, snapshot_bytes: $snap, load1: $load,
          create_per_sec: $l[0].ops_per_sec, create_errors: $l[0].errors}' "$out.probe" >"$out"
    else
      jq -n '{failed: true}' >"$out"
    fi
    log "catchup-$sys: $(jq -c . "$out")"
    if [ -n "$restarter" ]; then wait "$restarter" 2>/dev/null || true; fi
    if [ "$sys" = zk ]; then stop_zk; else stop_zb; fi
  done
}

run_bigtree() {
  log "bigtree: bench-vs-zk.sh's memory and restart run with $bigtree znodes"
  BENCH_NODES="" BENCH_MEMORY=1 BENCH_ZNODES=$bigtree ZKBRIDGE_BIN=$bin ZK_HEAP=${DIMS_BIGTREE_ZK_HEAP:-8g} \
    bash "$here/scripts/bench-vs-zk.sh" |
    tee "$work/results/bigtree.txt"
}

log "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1e6 }' /proc/meminfo); $(uptime)"
if [ -z "${DIMS_RESULTS:-}" ]; then
  for d in $dims; do "run_$d"; done
fi

# --- the tables -------------------------------------------------------------
# mean FILES... FILTER: the mean of FILTER over the runs that did not fail.
mean() {
  local filter=${*: -1}
  jq -s -r "map(select(.failed | not)) | if length == 0 then \"-\" else (map(($filter) // 0) | add / length) end" "${@:1:$#-1}" 2>/dev/null || echo -
}
failed() { jq -s -r 'map(select(.failed)) | length' "$@"; }
# row LABEL FILES-PREFIX FILTER FORMAT GOAL: ZooKeeper, zkbridge, ratio.
row() {
  local label=$1 prefix=$2 filter=$3 fmt=$4 goal=${5:-} z b
  z=$(mean "$work/results/$prefix-zk-"*.json "$filter")
  b=$(mean "$work/results/$prefix-zb-"*.json "$filter")
  awk -v l="$label" -v z="$z" -v b="$b" -v f="$fmt" -v g="$goal" 'BEGIN {
    zs = z == "-" ? "-" : sprintf(f, z); bs = b == "-" ? "-" : sprintf(f, b)
    r = (z != "-" && b != "-" && z + 0 != 0) ? sprintf("%.2f", b / z) : "-"
    printf "%s\t%s\t%s\t%s\t%s\n", l, zs, bs, r, g
  }'
}
table() { # title, then rows on stdin
  echo
  echo "$1"
  { printf 'measure\tZooKeeper\tzkbridge\tzkb/ZK\tgoal\n'; cat; } | column -t -s $'\t'
}
loads() { # prefix: the load averages before its runs
  jq -s -r 'map(.load1) | map(tostring) | join(" ")' "$work/results/$1-"*.json
}
have() { compgen -G "$work/results/$1-*.json" >/dev/null; }

echo
echo "zkbridge vs ZooKeeper 3.8 on loopback, $(nproc) cores shared by load generator and servers; mean of $repeat runs each, alternated"
echo "ZooKeeper: heap $ZK_HEAP per node (-Xms = -Xmx, G1), forceSync on, maxClientCnxns=0; zkbridge: defaults, fsync per write"
if have sessions; then
  {
    row "sessions held" sessions '.sessions.sessions' "%.0f"
    row "time to open them, s (lower is better)" sessions '.sessions.open_s' "%.1f"
    row "RSS per session, kB, mean of the nodes (lower)" sessions '.sessions.per_node | map(.rss_per_session_kb) | add / length' "%.1f" "<= 1/3"
    row "RSS per session, kB, worst node (lower)" sessions '.sessions.per_node | map(.rss_per_session_kb) | max' "%.1f" "<= 1/3"
    row "ping p50, ms" sessions '.per_op[] | select(.op == "ping") | .latency_ms.p50' "%.2f"
    row "ping p99, ms" sessions '.per_op[] | select(.op == "ping") | .latency_ms.p99' "%.2f" "<= 10 ms"
    row "connections lost before the storm" sessions '.sessions.lost_before_storm' "%.0f" "0"
    row "sessions expired before the storm" sessions '.sessions.expired_before_storm' "%.0f" "0"
    row "storm: connections lost (killed node's and others)" sessions '.sessions.lost - .sessions.lost_before_storm' "%.0f"
    row "storm: last session resumed after, s (lower)" sessions '.sessions.storm_resume_s' "%.2f" "< ZooKeeper"
    row "storm: resume p50, s (from its loss)" sessions '.per_op[] | select(.op == "resume") | .latency_ms.p50 / 1000' "%.2f"
    row "storm: expired" sessions '.sessions.expired - .sessions.expired_before_storm' "%.0f" "0"
    row "storm: not resumed within the wait" sessions '.sessions.unresolved' "%.0f" "0"
  } | table "sessions: $sessions over 3 nodes, 10 s timeout, a ping every 3.3 s; storm: SIGKILL of a follower, reconnects after 0-1 s (load: $(loads sessions); failed runs: $(failed "$work/results/sessions-"*.json))"
fi
if have churn; then
  {
    row "cycles/s (higher is better)" churn '.ops_per_sec' "%.0f" ">= 2x"
    row "cycle p50, ms" churn '.latency_ms.p50' "%.2f"
    row "cycle p99, ms" churn '.latency_ms.p99' "%.2f" "< ZooKeeper"
    row "server CPU per cycle, µs" churn '.server.cpu_us_per_op' "%.0f"
  } | table "session churn: connect + create ephemeral + closeSession, 16 connectors, 3 nodes (load: $(loads churn))"
fi
if have watches; then
  {
    row "watches set" watches '.watches.watches' "%.0f"
    row "time to set them, s (lower)" watches '.watches.arm_s' "%.1f"
    row "RSS per watch, bytes, 3 nodes summed (lower)" watches '.watches.rss_bytes_per_watch' "%.0f" "<= 1/3"
    row "heap per watch after a GC, bytes (lower)" watches '(.heap_armed - .heap_before) / .watches.watches' "%.0f" "<= 1/3"
    row "fan-out to $fanout_watchers watchers, p50 ms (lower)" fanout '.latency_ms.p50' "%.1f"
    row "fan-out to $fanout_watchers watchers, p99 ms (lower)" fanout '.latency_ms.p99' "%.1f"
    row "  of it the write (create/delete), p50 ms" fanout '.per_op[] | select(.op == "set") | .latency_ms.p50' "%.1f"
    row "  of it after the write's reply, p50 ms" fanout '.per_op[] | select(.op == "after_reply") | .latency_ms.p50' "%.1f"
    row "server CPU per round (arm $fanout_watchers + fan-out), ms" fanout '.server.cpu_us_per_op / 1000' "%.0f"
    row "recursive watch: sets/s" recursive '.per_op[] | select(.op == "set") | .ops_per_sec' "%.0f"
    row "recursive watch: delivery p50, ms" recursive '.latency_ms.p50' "%.2f"
    row "recursive watch: delivery p99, ms" recursive '.latency_ms.p99' "%.2f"
    row "recursive watch: sets failed (ConnectionLoss)" recursive '[.per_op[] | select(.op == "set") | .errors] | add' "%.0f" "0"
    row "recursive watch: events missing (failed sets' included)" recursive '[.per_op[] | select(.op == "event") | .errors] | add' "%.0f" "0"
  } | table "watches: $watches one-shot over $watch_paths nodes from 100 sessions; NodeChildrenChanged fan-out (write sent to last event, 20 rounds); persistent recursive watch on / under $recursive_rate sets/s (send to event), 3 nodes (load: $(loads watches) / $(loads fanout) / $(loads recursive))"
fi
if have values-set-100000; then
  {
    for size in 100000 1000000; do
      for w in set get; do
        row "$w $size B: ops/s (higher)" "values-$w-$size" '.ops_per_sec' "%.0f" ">= 1.5x"
        row "$w $size B: p99 ms" "values-$w-$size" '.latency_ms.p99' "%.1f"
      done
    done
  } | table "large values: 8 connections x 2 outstanding, 3 nodes (load: $(loads values))"
fi
if compgen -G "$work/results/wide-*.json" >/dev/null; then
  {
    for n in $wide_sizes; do
      row "$n children: getChildren p50 ms" "wide-$n" '.latency_ms.p50' "%.1f"
      row "$n children: getChildren p99 ms" "wide-$n" '.latency_ms.p99' "%.1f"
      row "$n children: RSS before, MB" "wide-$n" '.server.rss_start_mb' "%.0f"
      row "$n children: RSS peak while listing, MB" "wide-$n" '.server.rss_peak_mb' "%.0f"
    done
  } | table "wide nodes: getChildren, one at a time, 20 reads, 1 node (load: $(loads wide))"
fi
if have catchup; then
  {
    row "znodes created with the follower down" catchup '.znodes' "%.0f"
    row "create while it was down, znodes/s (higher)" catchup '.create_per_sec' "%.0f"
    row "snapshot, MB (ZooKeeper: newest file; zkbridge: Pebble state)" catchup '.snapshot_bytes / 1e6' "%.0f" "<= 1/2"
    row "follower's catch-up to serving them, s (lower)" catchup '.catchup_s' "%.2f" "<= 1/2"
  } | table "catch-up: a follower of 3 SIGKILLed, $catchup znodes of 100 B created, the follower started again (load: $(loads catchup))"
fi
printf '\nreproduce: DIMS_SESSIONS=%s DIMS_WATCHES=%s DIMS_WATCH_PATHS=%s DIMS_FANOUT_WATCHERS=%s DIMS_RECURSIVE_RATE=%s DIMS_WIDE=%q DIMS_BIGTREE=%s DIMS_DURATION=%s DIMS_REPEAT=%s ZK_HEAP=%s scripts/bench-dims.sh %s\n' \
  "$sessions" "$watches" "$watch_paths" "$fanout_watchers" "$recursive_rate" "$wide_sizes" "$bigtree" "$duration" "$repeat" "$ZK_HEAP" "$dims"
