#!/usr/bin/env bash
# Benchmarks zkbridge side by side with a real ZooKeeper 3.8 on loopback,
# with `zkbridge bench`, and prints a table with the ratio zkbridge/ZooKeeper
# per row.
#
# For each topology (1 node; 3 nodes) it starts ZooKeeper (start-zookeeper.sh,
# or start-zookeeper-ensemble.sh 3; forceSync on as by default, default JVM
# flags plus a fixed heap) and zkbridge (`zkbridge server`, or local-cluster.sh
# start 3; the Raft log is fsynced on every write), warms both up, then runs
# every workload against each in alternation (ZooKeeper, zkbridge, ZooKeeper,
# zkbridge, ...) and averages the repeats. Every process it starts is stopped
# on exit, interrupted or not.
#
# usage: bench-vs-zk.sh
# environment:
#   BENCH_NODES      topologies to run (default "1 3")
#   BENCH_WORKLOADS  (default "set get exists list mixed multi watch create"; create
#                    runs keep their nodes, as deleting them all takes long, so
#                    create comes last)
#   BENCH_DURATION   measured time per run (default 10s)
#   BENCH_WARMUP     warm-up inside each run (default 2s)
#   BENCH_PREWARM    an unmeasured mixed run against each system first (default 10s)
#   BENCH_REPEAT     runs per workload and system (default 2)
#   BENCH_ARGS       extra `zkbridge bench` flags for every run, e.g. "--connections 20"
#   ZK_HEAP          ZooKeeper's heap per node (default 1g)
#   ZKBRIDGE_BIN     a prebuilt zkbridge instead of building one
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bench-vs-zk: $*" >&2; exit 1; }
log() { echo "bench-vs-zk: $*" >&2; }

nodes_list=${BENCH_NODES:-1 3}
workloads=${BENCH_WORKLOADS:-set get exists list mixed multi watch create}
duration=${BENCH_DURATION:-10s}
warmup=${BENCH_WARMUP:-2s}
prewarm=${BENCH_PREWARM:-10s}
repeat=${BENCH_REPEAT:-2}
extra=${BENCH_ARGS:-}
export ZK_HEAP=${ZK_HEAP:-1g}

[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer"
for n in $nodes_list; do [[ "$n" == 1 || "$n" == 3 ]] || die "BENCH_NODES: $n (want 1 and/or 3)"; done
command -v jq >/dev/null || die "jq not found"

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-bench.XXXXXX")
mkdir -p "$work/results"
zk_pids="" zk_dir="" zb_pid="" cluster_dir=""

stop_zk() {
  if [ -n "$zk_pids" ]; then bash "$here/scripts/stop-zookeeper.sh" "$zk_pids" "$zk_dir" || true; fi
  zk_pids="" zk_dir=""
}
stop_zkbridge() {
  if [ -n "$zb_pid" ]; then
    kill "$zb_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$zb_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$zb_pid" 2>/dev/null || true
    wait "$zb_pid" 2>/dev/null || true
  fi
  zb_pid=""
  if [ -n "$cluster_dir" ]; then
    ZKBRIDGE_CLUSTER_DIR=$cluster_dir bash "$here/scripts/local-cluster.sh" stop || true
  fi
  cluster_dir=""
}
cleanup() {
  stop_zk
  stop_zkbridge
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${ZKBRIDGE_BIN:-}" ]; then
  bin=$ZKBRIDGE_BIN
else
  bin=$work/zkbridge
  (cd "$here" && go build -o "$bin" .) || die "go build failed"
fi

free_ports() { # n
  /usr/bin/python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
for s in socks: s.close()
' "$1"
}

serving() { # port: srvr answers with a Mode
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf srvr >&3
  local answer
  answer=$(timeout 2 cat <&3 || true)
  exec 3<&- 3>&-
  [[ "$answer" == *"Mode: "* ]]
}

start_zk() { # nodes -> sets zk_addr
  local out
  if [ "$1" = 1 ]; then
    out=$(bash "$here/scripts/start-zookeeper.sh") || die "ZooKeeper did not start"
    read -r port zk_pids zk_dir <<<"$out"
    zk_addr=127.0.0.1:$port
  else
    out=$(bash "$here/scripts/start-zookeeper-ensemble.sh" 3) || die "the ZooKeeper ensemble did not start"
    read -r zk_addr zk_pids zk_dir <<<"$out"
  fi
}

start_zkbridge() { # nodes -> sets zb_addr
  if [ "$1" = 1 ]; then
    local ports
    mapfile -t ports < <(free_ports 2)
    "$bin" server --data-dir "$work/zkbridge-data" --client-addr "127.0.0.1:${ports[0]}" \
      --peer-addr "127.0.0.1:${ports[1]}" --no-admin --log-format json \
      >"$work/zkbridge.log" 2>&1 </dev/null &
    zb_pid=$!
    local deadline=$((SECONDS + 60))
    until serving "${ports[0]}"; do
      kill -0 "$zb_pid" 2>/dev/null || { tail -n 20 "$work/zkbridge.log" >&2; die "zkbridge exited during start-up"; }
      ((SECONDS < deadline)) || die "zkbridge did not serve within 60 s"
      sleep 0.2
    done
    zb_addr=127.0.0.1:${ports[0]}
  else
    cluster_dir=$work/cluster
    zb_addr=$(ZKBRIDGE_CLUSTER_DIR=$cluster_dir ZKBRIDGE_BIN=$bin bash "$here/scripts/local-cluster.sh" start 3 | tail -n 1) ||
      die "the zkbridge cluster did not start"
  fi
}

bench() { # addr out-file args...
  local addr=$1 out=$2
  shift 2
  # shellcheck disable=SC2086
  "$bin" bench --addr "$addr" --progress 0 --json "$@" $extra >"$out"
}

ncpu=$(nproc)
log "load generator and servers share this machine's $ncpu cores; the servers not under test idle"
for n in $nodes_list; do
  log "$n node(s): starting ZooKeeper (heap $ZK_HEAP per node) and zkbridge"
  start_zk "$n"
  start_zkbridge "$n"
  log "ZooKeeper at $zk_addr, zkbridge at $zb_addr; pre-warming each for $prewarm"
  bench "$zk_addr" /dev/null --workload mixed --duration "$prewarm" --warmup 0s
  bench "$zb_addr" /dev/null --workload mixed --duration "$prewarm" --warmup 0s
  for w in $workloads; do
    for ((r = 1; r <= repeat; r++)); do
      for sys in zk zb; do
        addr=$zk_addr; [ "$sys" = zb ] && addr=$zb_addr
        log "$n node(s) $w run $r/$repeat: $([ "$sys" = zk ] && echo ZooKeeper || echo zkbridge)"
        keep=(); [ "$w" = create ] && keep=(--no-cleanup)
        bench "$addr" "$work/results/$n-$w-$sys-$r.json" --workload "$w" --duration "$duration" --warmup "$warmup" "${keep[@]}" ||
          echo '{"failed":true}' >"$work/results/$n-$w-$sys-$r.json"
      done
    done
  done
  stop_zk
  stop_zkbridge
done

# The table: means over the repeats.
# A run that failed (bench exited non-zero) is left out of the means and
# counted in the errors column as "+Nfailed".
mean() { # files... -> "ops/s p50 p99 errors"
  jq -s -r '(map(select(.failed | not))) as $ok | (length - ($ok | length)) as $failed |
    if ($ok | length) == 0 then [0, 0, 0, "\($failed)failed"] else
    [ ($ok | map(.ops_per_sec) | add / length), ($ok | map(.latency_ms.p50) | add / length),
      ($ok | map(.latency_ms.p99) | add / length),
      "\($ok | map(.errors) | add)\(if $failed > 0 then "+\($failed)failed" else "" end)" ] end | @tsv' "$@"
}
echo
echo "zkbridge vs ZooKeeper 3.8 on loopback; $duration per run after $warmup warm-up, mean of $repeat runs, alternated"
echo "connections/outstanding/payload: zkbridge bench defaults${extra:+ plus $extra}; both fsync every write"
echo "note: the load generator shares the $ncpu cores with the server under test (and the idle other one)"
echo
{
  printf 'nodes\tworkload\tZK ops/s\tzkbridge ops/s\tratio\tZK p50 ms\tzkb p50 ms\tZK p99 ms\tzkb p99 ms\tp99 ratio\terrors ZK/zkb\n'
  for n in $nodes_list; do
    for w in $workloads; do
      read -r zo z50 z99 ze < <(mean "$work/results/$n-$w-zk-"*.json)
      read -r bo b50 b99 be < <(mean "$work/results/$n-$w-zb-"*.json)
      awk -v n="$n" -v w="$w" -v zo="$zo" -v bo="$bo" -v z50="$z50" -v b50="$b50" -v z99="$z99" -v b99="$b99" -v ze="$ze" -v be="$be" 'BEGIN {
        ratio = zo > 0 ? sprintf("%.2f", bo / zo) : "-"
        pr = z99 > 0 ? sprintf("%.2f", b99 / z99) : "-"
        printf "%s\t%s\t%.0f\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s/%s\n", n, w, zo, bo, ratio, z50, b50, z99, b99, pr, ze, be
      }'
    done
  done
} | column -t -s $'\t'
echo
echo "errors: failed requests summed over the runs; +Nfailed: runs that aborted (left out of the means)."
echo "ratio = zkbridge/ZooKeeper ops/s (above 1: zkbridge faster); p99 ratio = zkbridge/ZooKeeper (below 1: zkbridge faster)."
echo "watch rows: ops are rounds (${BENCH_ARGS:+see BENCH_ARGS; }50 watchers by default), latency is write reply to last event."
printf 'reproduce: BENCH_NODES=%q BENCH_WORKLOADS=%q BENCH_DURATION=%s BENCH_WARMUP=%s BENCH_PREWARM=%s BENCH_REPEAT=%s BENCH_ARGS=%q ZK_HEAP=%s scripts/bench-vs-zk.sh\n' \
  "$nodes_list" "$workloads" "$duration" "$warmup" "$prewarm" "$repeat" "$extra" "$ZK_HEAP"
