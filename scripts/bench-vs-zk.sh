#!/usr/bin/env bash
# Benchmarks zkbridge side by side with a real ZooKeeper 3.8 on loopback,
# with `zkbridge bench`, and prints a table with the ratio zkbridge/ZooKeeper
# per row.
#
# For each topology (1 node; 3 nodes) it starts ZooKeeper (start-zookeeper.sh,
# or start-zookeeper-ensemble.sh 3; forceSync on as by default, default JVM
# flags plus a fixed heap) and zkbridge (`zkbridge server`, or local-cluster.sh
# start 3; the Raft log is fsynced on every write; BENCH_FSYNC=0 turns the log
# sync off in both), warms both up, then runs
# every workload against each in alternation (ZooKeeper, zkbridge, ZooKeeper,
# zkbridge, ...) and averages the repeats. Every process it starts is stopped
# on exit, interrupted or not.
#
# Then (BENCH_MEMORY=1) memory and restart, one node each, one system at a
# time: a fresh server, its memory measured, BENCH_ZNODES znodes of 100 B
# created under one parent (`zkbridge bench -w create`), its memory measured
# again, bytes per znode = (after - before) / BENCH_ZNODES; then it is
# stopped (SIGTERM) and restarted on its data directory, and the restart
# time is from the spawn to the first answer of getAllChildrenNumber of
# that parent with every znode (`zkbridge bench --probe`).
#   RSS: VmRSS of /proc/PID/status. Heap, after a forced full GC: ZooKeeper's
#   Java heap used (jcmd GC.run, GC.heap_info); zkbridge's Go heap in use
#   (/debug/pprof/heap?gc=1, then go_memstats_heap_inuse_bytes of /metrics).
#   Pebble's block cache and memtables are off the Go heap and not exported;
#   they are in RSS only.
#
# With --tls (or BENCH_TLS=1) every benchmark client speaks TLS to the
# secure client port of both systems, one node each: certificates made with
# openssl for the run (a throwaway CA, an EC P-256 server certificate, a
# client certificate; ssl.clientAuth=need), ZooKeeper on its Netty
# connection factory as TLS requires, the same zoo.cfg ssl.* keys for both.
# The connect workload's handshake latency then includes the TLS handshake.
#
# usage: bench-vs-zk.sh [--tls]
# environment:
#   BENCH_TLS        1: as --tls (one node only; no memory runs)
#   BENCH_NODES      topologies to run (default "1 3"; empty: no throughput runs)
#   BENCH_WORKLOADS  (default "set get exists list mixed multi watch connect create";
#                    create runs keep their nodes, as deleting them all takes long,
#                    so create comes last; W@1 runs workload W on one connection
#                    with one request outstanding: the latency rows, e.g. "set@1 create@1";
#                    W@N, N a multiple of 8, runs it with N outstanding in all,
#                    8 connections × N/8, e.g. "set@64 create@64"; W@CxO runs it on C
#                    connections with O outstanding each, e.g. "get@4x16 set@4x16";
#                    multiN is the multi workload with N setData per transaction,
#                    e.g. "multi100 multi1000"; plain multi has 10)
#   BENCH_DURATION   measured time per run (default 10s)
#   BENCH_WARMUP     warm-up inside each run (default 2s)
#   BENCH_PREWARM    an unmeasured mixed run against each system first (default 60s:
#                    after 10 s ZooKeeper's first W@1 row still ran ~25% slow)
#   BENCH_REPEAT     runs per workload and system (default 2)
#   BENCH_ARGS       extra `zkbridge bench` flags for every run, e.g. "--connections 20";
#                    "--rate 600" runs both at the same ops/s, to compare latency at one load
#   BENCH_AT1_ROLE   which node a W@1 run connects to on a cluster: follower (default),
#                    leader, or any (the first address); the same role for both systems,
#                    asked from each node's srvr before every run
#   BENCH_FSYNC      1 (default): both sync their log before acknowledging a write;
#                    0: neither does (ZooKeeper forceSync=no, zkbridge --force-sync=false),
#                    which shows what the disk's syncs cost each system
#   BENCH_MEMORY     1 (default): measure memory per znode and restart time; 0: skip
#   BENCH_STAGES     1: the 3-node zkbridge cluster records its write stages
#                    (ZKBRIDGE_WRITE_STAGES=1) and every zkbridge run prints where a
#                    write's time went, stage by stage (zkbridge bench --stages), and each
#                    node's log saves; the recording costs a little, so take the ratios
#                    from a run without it (default 0)
#   BENCH_ZNODES     znodes created for that (default 1000000; e.g. 100000 for a quick run)
#   ZK_HEAP          ZooKeeper's heap per node (default 1g)
#   ZKBRIDGE_BIN     a prebuilt zkbridge instead of building one
#   BENCH_KEEP       a directory: the 3-node zkbridge nodes' logs are copied there at
#                    the end (the run's own files go, as always)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bench-vs-zk: $*" >&2; exit 1; }
log() { echo "bench-vs-zk: $*" >&2; }

nodes_list=${BENCH_NODES-1 3}
workloads=${BENCH_WORKLOADS:-set@1 set@64 set get exists list mixed multi watch connect create@1 create@64 create}
memory=${BENCH_MEMORY:-1}
znodes=${BENCH_ZNODES:-1000000}
duration=${BENCH_DURATION:-10s}
warmup=${BENCH_WARMUP:-2s}
prewarm=${BENCH_PREWARM:-60s}
repeat=${BENCH_REPEAT:-2}
extra=${BENCH_ARGS:-}
at1_role=${BENCH_AT1_ROLE:-follower}
stages=${BENCH_STAGES:-0}
fsync=${BENCH_FSYNC:-1}
export ZK_HEAP=${ZK_HEAP:-1g}
tls=${BENCH_TLS:-0}
case ${1:-} in
--tls) tls=1 ;;
"") ;;
*) die "usage: bench-vs-zk.sh [--tls]" ;;
esac
if [ "$tls" = 1 ]; then
  [ "$nodes_list" = 1 ] || { [ -z "${BENCH_NODES+x}" ] && nodes_list=1; } || die "--tls runs one node only (BENCH_NODES=1)"
  memory=${BENCH_MEMORY:-0}
  [ "$memory" = 0 ] || die "--tls has no memory runs (BENCH_MEMORY=0)"
  command -v openssl >/dev/null || die "openssl not found (--tls makes its certificates with it)"
fi

[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPEAT must be a positive integer"
for w in $workloads; do
  if [[ "$w" == *@* ]]; then
    [[ "${w#*@}" =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] ||
      { [[ "${w#*@}" =~ ^[1-9][0-9]*$ ]] && { [ "${w#*@}" = 1 ] || [ $((${w#*@} % 8)) = 0 ]; }; } ||
      die "BENCH_WORKLOADS: $w (W@1, W@N with N a multiple of 8, or W@CxO)"
  fi
  if [[ "${w%@*}" == multi* ]] && ! [[ "${w%@*}" =~ ^multi([1-9][0-9]*)?$ ]]; then
    die "BENCH_WORKLOADS: $w (multiN: N setData per multi, N ≥ 1)"
  fi
done
case $at1_role in follower | leader | any) ;; *) die "BENCH_AT1_ROLE must be follower, leader or any" ;; esac
for n in $nodes_list; do [[ "$n" == 1 || "$n" == 3 ]] || die "BENCH_NODES: $n (want 1 and/or 3)"; done
[[ "$memory" == 0 || "$memory" == 1 ]] || die "BENCH_MEMORY must be 0 or 1"
[[ "$fsync" == 0 || "$fsync" == 1 ]] || die "BENCH_FSYNC must be 0 or 1"
[[ "$stages" == 0 || "$stages" == 1 ]] || die "BENCH_STAGES must be 0 or 1"
zb_flags=() # every zkbridge node's extra flags, one node or a cluster
if [ "$fsync" = 0 ]; then
  export ZK_FORCE_SYNC=no
  zb_flags=(--force-sync=false)
fi
[[ "$znodes" =~ ^[1-9][0-9]*$ ]] || die "BENCH_ZNODES must be a positive integer"
[ -n "$nodes_list" ] || [ "$memory" = 1 ] || die "nothing to run (BENCH_NODES empty and BENCH_MEMORY=0)"
command -v jq >/dev/null || die "jq not found"
if [ "$memory" = 1 ]; then
  command -v curl >/dev/null || die "curl not found (BENCH_MEMORY=0 skips the memory runs that need it)"
  # The JDK that runs ZooKeeper, for its jcmd.
  jcmd=$(dirname "$(readlink -f "$(command -v java)")")/jcmd
  [ -x "$jcmd" ] || die "$jcmd not found (BENCH_MEMORY=0 skips the memory runs that need it)"
fi
# shellcheck source=scripts/zookeeper-lib.sh
source "$here/scripts/zookeeper-lib.sh" # zk_launch, to restart ZooKeeper on its data

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
    if [ -n "${BENCH_KEEP:-}" ]; then
      mkdir -p "$BENCH_KEEP" && cp "$cluster_dir"/node*.log "$BENCH_KEEP"/ 2>/dev/null || true
    fi
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


# make_tls_files: a throwaway CA, server and client certificates in
# $work/tls (PEM key stores: key and chain in one file, as ZooKeeper reads).
make_tls_files() {
  local d=$work/tls
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
      -keyout ca.key -out ca.pem
    for who in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench $who" \
        -keyout "$who.key" -out "$who.csr"
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$who.ext"
      openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$who.ext" -out "$who.crt"
      cat "$who.key" "$who.crt" >"$who.pem"
    done
  ) >/dev/null 2>&1 || die "openssl could not make the TLS certificates"
}
tls_cfg() { # secure-port: the zoo.cfg TLS keys both systems get
  cat <<CFG
secureClientPort=$1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$work/tls/server.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$work/tls/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need
CFG
}
if [ "$tls" = 1 ]; then
  make_tls_files
  export ZK_TLS=1
fi

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
    local secure=""
    if [ "$tls" = 1 ]; then
      secure=$(zk_free_ports 1)
      ZK_EXTRA_CFG=$(tls_cfg "$secure")
      export ZK_EXTRA_CFG
    fi
    out=$(bash "$here/scripts/start-zookeeper.sh") || die "ZooKeeper did not start"
    read -r port zk_pids zk_dir <<<"$out"
    zk_addr=127.0.0.1:${secure:-$port}
  else
    out=$(bash "$here/scripts/start-zookeeper-ensemble.sh" 3) || die "the ZooKeeper ensemble did not start"
    read -r zk_addr zk_pids zk_dir <<<"$out"
  fi
}

start_zkbridge() { # nodes -> sets zb_addr
  if [ "$1" = 1 ]; then
    local ports tls_flags=()
    mapfile -t ports < <(zk_free_ports 3)
    if [ "$tls" = 1 ]; then
      tls_flags=(--secure-client-addr "127.0.0.1:${ports[2]}" --ssl-keystore "$work/tls/server.pem"
        --ssl-truststore "$work/tls/ca.pem" --ssl-client-auth need --native-addr "")
    fi
    "$bin" server --data-dir "$work/zkbridge-data" --client-addr "127.0.0.1:${ports[0]}" \
      --peer-addr "127.0.0.1:${ports[1]}" --no-admin --log-format json "${zb_flags[@]}" "${tls_flags[@]}" \
      >"$work/zkbridge.log" 2>&1 </dev/null &
    zb_pid=$!
    local deadline=$((SECONDS + 60))
    until serving "${ports[0]}"; do
      kill -0 "$zb_pid" 2>/dev/null || { tail -n 20 "$work/zkbridge.log" >&2; die "zkbridge exited during start-up"; }
      ((SECONDS < deadline)) || die "zkbridge did not serve within 60 s"
      sleep 0.2
    done
    zb_addr=127.0.0.1:${ports[0]}
    if [ "$tls" = 1 ]; then zb_addr=127.0.0.1:${ports[2]}; fi
  else
    cluster_dir=$work/cluster
    zb_addr=$(ZKBRIDGE_CLUSTER_DIR=$cluster_dir ZKBRIDGE_BIN=$bin ZKBRIDGE_SERVER_FLAGS="${zb_flags[*]}" \
      ZKBRIDGE_WRITE_STAGES=$stages bash "$here/scripts/local-cluster.sh" start 3 | tail -n 1) ||
      die "the zkbridge cluster did not start"
  fi
}

server_pids_zb() { # the running zkbridge node(s), comma-separated
  if [ -n "$zb_pid" ]; then echo "$zb_pid"; else cat "$cluster_dir"/node*.pid | paste -sd, -; fi
}

# The zkbridge node logs, and what happened in them during a run: a run's
# failed requests are mostly connections closed because a proposal's
# outcome became unknown, which happens when the leader changes (a node
# starved past the election timeout) or a starved node drops its peers'
# stale backlog; the table's notes name them per run.
zb_logs() {
  if [ -n "$zb_pid" ]; then echo "$work/zkbridge.log"; else ls "$cluster_dir"/node*.log; fi
}
log_marks() { # -> each log's current line count
  local f
  for f in $(zb_logs); do wc -l <"$f"; done | paste -sd' ' -
}
log_events() { # marks -> JSON: leader elections (the most any node saw) and starvation stalls since marks
  local marks i=0 f new el=0 st=0 e
  read -r -a marks <<<"$1"
  for f in $(zb_logs); do
    new=$(tail -n +"$((${marks[i]:-0} + 1))" "$f")
    e=$(grep -c '"message":"raft leader elected"' <<<"$new" || true)
    ((e > el)) && el=$e
    st=$((st + $(grep -c 'did not run for a while' <<<"$new" || true)))
    i=$((i + 1))
  done
  echo "{\"zb_elections\": $el, \"zb_stalls\": $st}"
}

bench() { # addr out-file args...
  local addr=$1 out=$2 tls_flags=()
  shift 2
  if [ "$tls" = 1 ]; then tls_flags=(--tls-ca "$work/tls/ca.pem" --tls-cert "$work/tls/client.pem"); fi
  # shellcheck disable=SC2086
  "$bin" bench --addr "$addr" --progress 0 --json "${tls_flags[@]}" "$@" $extra >"$out"
}

# at1_addr addr-list: the first node in the list (loopback addresses)
# whose srvr Mode is at1_role.
# Client placement matters at one outstanding request (a follower forwards
# to the leader), and which node leads differs between the two systems, so
# both are measured through the same role. A standalone server, or no
# match, gets the first address.
at1_addr() {
  local a
  if [ "$at1_role" != any ]; then
    for a in ${1//,/ }; do
      if [ "$(zk_srvr "${a##*:}" | sed -n 's/^Mode: //p')" = "$at1_role" ]; then
        echo "$a"
        return
      fi
    done
  fi
  echo "${1%%,*}"
}

# stage_admins addr-list: the cluster's admin addresses for bench --stages,
# the node of the list's first address first (the node a W@1 run uses).
stage_admins() {
  local first=${1%%,*} env admins="" head="" CLIENT ADMIN PEER NATIVE
  for env in "$cluster_dir"/node*.env; do
    # shellcheck disable=SC1090
    source "$env"
    if [ "$CLIENT" = "${first##*:}" ]; then head=127.0.0.1:$ADMIN; else admins=$admins,127.0.0.1:$ADMIN; fi
  done
  echo "$head$admins"
}

ncpu=$(nproc)
# The machine's load average as the runs start and end: on a shared
# machine other work skews both systems' figures, so the table says it.
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
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
        keep=(); [ "${w%@*}" = create ] && keep=(--no-cleanup)
        shape=() workload=${w%@*}
        if [[ "$workload" =~ ^multi([1-9][0-9]*)$ ]]; then
          shape=(--multi-ops "${BASH_REMATCH[1]}") workload=multi
        fi
        case $w in
        *@1)
          shape+=(--connections 1 --outstanding 1)
          addr=$(at1_addr "$addr")
          log "  one connection to $addr"
          ;;
        *@*x*) cxo=${w#*@} && shape+=(--connections "${cxo%x*}" --outstanding "${cxo#*x}") ;;
        *@*) shape+=(--connections 8 --outstanding $((${w#*@} / 8))) ;;
        esac
        pids=$zk_pids
        [ "$sys" = zb ] && pids=$(server_pids_zb) && marks=$(log_marks)
        stage_flags=()
        if [ "$sys" = zb ] && [ "$stages" = 1 ] && [ -n "$cluster_dir" ]; then stage_flags=(--stages "$(stage_admins "$addr")"); fi
        out=$work/results/$n-$w-$sys-$r.json
        bench "$addr" "$out" --workload "$workload" --duration "$duration" --warmup "$warmup" \
          --server-pids "$pids" "${keep[@]}" "${shape[@]}" "${stage_flags[@]}" ||
          echo '{"failed":true}' >"$out"
        if [ "$sys" = zb ]; then
          jq --argjson ev "$(log_events "$marks")" '. + $ev' "$out" >"$out.tmp" && mv "$out.tmp" "$out"
        fi
      done
    done
  done
  stop_zk
  stop_zkbridge
done

# --- memory per znode and restart ------------------------------------------
mem_root=/zkbridge-mem

rss_bytes() { # pid
  awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"
}
zk_heap_bytes() { # pid: Java heap used after a full GC
  "$jcmd" "$1" GC.run >/dev/null
  "$jcmd" "$1" GC.heap_info | awk 'match($0, /used [0-9]+K/) { print substr($0, RSTART + 5, RLENGTH - 6) * 1024; exit }'
}
zb_heap_bytes() { # admin-addr: "Go heap in use, idle heap not returned to the OS" after a GC
  curl -sf "http://$1/debug/pprof/heap?gc=1" >/dev/null
  curl -sf "http://$1/metrics" | awk '$1 ~ /^go_memstats_heap_(inuse|idle|released)_bytes$/ { v[$1] = $2 }
    END { printf "%.0f %.0f\n", v["go_memstats_heap_inuse_bytes"], v["go_memstats_heap_idle_bytes"] - v["go_memstats_heap_released_bytes"] }'
}
zk_data_size() { # port: mntr's zk_approximate_data_size
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 0
  printf mntr >&3
  timeout 5 cat <&3 | awk '$1 == "zk_approximate_data_size" { print $2 }' || true
  exec 3<&- 3>&-
}
zb_data_size() { # admin-addr
  curl -sf "http://$1/commands/monitor" | jq -r '.approximate_data_size'
}
now() { date +%s.%N; }
wait_exit() { # pid: SIGTERM, then SIGKILL after 60 s
  kill "$1" 2>/dev/null || true
  for _ in $(seq 600); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  log "pid $1 did not exit within 60 s of SIGTERM; killing it"
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# memory_measure sys phase: writes $work/mem/SYS-PHASE.json
memory_measure() {
  local sys=$1 phase=$2 pid heap idle="" size
  if [ "$sys" = zk ]; then
    pid=$zk_pids
    heap=$(zk_heap_bytes "$pid")
    size=$(zk_data_size "$mem_port")
  else
    pid=$zb_pid
    read -r heap idle < <(zb_heap_bytes "$mem_admin")
    size=$(zb_data_size "$mem_admin")
  fi
  jq -n --argjson rss "$(rss_bytes "$pid")" --argjson heap "${heap:-null}" --argjson idle "${idle:-null}" \
    --argjson size "${size:-null}" '{rss: $rss, heap: $heap, heap_idle_retained: $idle, data_size: $size}' \
    >"$work/mem/$sys-$phase.json"
}

# memory_spawn sys: starts the memory run's server on its data directory
# (fresh the first time) without waiting for it.
memory_spawn() {
  if [ "$1" = zk ]; then
    zk_launch org.apache.zookeeper.server.ZooKeeperServerMain "$zk_dir/zoo.cfg" "$zk_dir/restart.log" "$ZK_HEAP"
    zk_pids=$!
  else
    "$bin" server --data-dir "$work/mem-zkbridge" --client-addr "127.0.0.1:$mem_port" \
      --peer-addr "127.0.0.1:$mem_peer" --admin-addr "$mem_admin" --log-format json "${zb_flags[@]}" \
      >>"$work/mem-zkbridge.log" 2>&1 </dev/null &
    zb_pid=$!
  fi
}

# memory_run sys: the memory and restart measurements of one system.
memory_run() {
  local sys=$1 name pid t0
  name=$([ "$sys" = zk ] && echo ZooKeeper || echo zkbridge)
  if [ "$sys" = zk ]; then
    local out
    out=$(bash "$here/scripts/start-zookeeper.sh") || die "ZooKeeper did not start"
    read -r mem_port zk_pids zk_dir <<<"$out"
    [ "$(cat "/proc/$zk_pids/comm")" = java ] || die "ZooKeeper's pid $zk_pids is not the JVM"
  else
    local ports
    mapfile -t ports < <(zk_free_ports 3)
    mem_port=${ports[0]} mem_peer=${ports[1]} mem_admin=127.0.0.1:${ports[2]}
    memory_spawn zb
    "$bin" bench --addr "127.0.0.1:$mem_port" --probe / --timeout 60s >/dev/null ||
      { tail -n 20 "$work/mem-zkbridge.log" >&2; die "zkbridge did not serve within 60 s"; }
  fi
  log "memory, $name: before"
  memory_measure "$sys" before
  log "memory, $name: creating $znodes znodes of 100 B under $mem_root/c"
  "$bin" bench --addr "127.0.0.1:$mem_port" --workload create --ops "$znodes" --warmup 0s --no-cleanup \
    --connections 8 --outstanding 64 --payload 100 --root "$mem_root" --timeout 120s --progress 0 --json \
    >"$work/mem/$sys-create.json" || die "creating the znodes on $name failed"
  jq -e --argjson n "$znodes" '.ops == $n and .errors == 0' "$work/mem/$sys-create.json" >/dev/null ||
    die "$name: the create run did not make $znodes znodes: $(jq -c '{ops, errors, per_op}' "$work/mem/$sys-create.json")"
  log "memory, $name: after"
  memory_measure "$sys" after

  log "restart, $name: stopping it (SIGTERM) and starting it on its data"
  if [ "$sys" = zk ]; then wait_exit "$zk_pids"; else wait_exit "$zb_pid"; wait "$zb_pid" 2>/dev/null || true; fi
  t0=$(now)
  memory_spawn "$sys"
  "$bin" bench --addr "127.0.0.1:$mem_port" --probe "$mem_root/c" --probe-min "$znodes" --timeout 600s --json \
    >"$work/mem/$sys-probe.json" || die "$name did not answer after the restart"
  jq --argjson t0 "$t0" '. + {restart_s: (.answered_at_unix_s - $t0)}' "$work/mem/$sys-probe.json" >"$work/mem/$sys-restart.json"
  pid=$([ "$sys" = zk ] && echo "$zk_pids" || echo "$zb_pid")
  jq -n --argjson rss "$(rss_bytes "$pid")" '{rss: $rss}' >"$work/mem/$sys-restarted.json"
  log "restart, $name: $(jq -r '"\(.children) znodes answered \(.restart_s) s after the spawn"' "$work/mem/$sys-restart.json")"
  if [ "$sys" = zk ]; then stop_zk; else stop_zkbridge; rm -rf "$work/mem-zkbridge"; fi
}

if [ "$memory" = 1 ]; then
  mkdir -p "$work/mem"
  for sys in zk zb; do memory_run "$sys"; done
fi

# The table: means over the repeats.
# A run that failed (bench exited non-zero) is left out of the means and
# counted in the errors column as "+Nfailed".
mean() { # files... -> "ops/s p50 p99 errors cpu-µs/op runqueue-µs/op switches/op"
  jq -s -r '(map(select(.failed | not))) as $ok | (length - ($ok | length)) as $failed |
    def avg(f): $ok | map(f // 0) | add / length;
    if ($ok | length) == 0 then [0, 0, 0, "\($failed)failed", 0, 0, 0] else
    [ avg(.ops_per_sec), avg(.latency_ms.p50), avg(.latency_ms.p99),
      "\($ok | map(.errors) | add)\(if $failed > 0 then "+\($failed)failed" else "" end)",
      avg(.server.cpu_us_per_op), avg(.server.runqueue_wait_us_per_op), avg(.server.switches_per_op) ] end | @tsv' "$@"
}
if [ -n "$nodes_list" ]; then
  echo
  echo "zkbridge vs ZooKeeper 3.8 on loopback; $duration per run after $warmup warm-up, mean of $repeat runs, alternated"
  if [ "$fsync" = 1 ]; then synced="both fsync every write"; else synced="NEITHER syncs its log (BENCH_FSYNC=0: forceSync=no, --force-sync=false)"; fi
  echo "connections/outstanding/payload: zkbridge bench defaults${extra:+ plus $extra}; $synced"
  echo "note: the load generator shares the $ncpu cores with the server under test (and the idle other one)"
  echo "load average (1, 5, 15 min): $load_start as the runs started, $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) as they ended"
  if [ "$tls" = 1 ]; then echo "TLS: every client connection is TLS to the secure client port (EC P-256, clientAuth=need; ZooKeeper on Netty, TLS 1.2; zkbridge negotiates TLS 1.3)"; fi
  echo
  {
    printf 'nodes\tworkload\tZK ops/s\tzkbridge ops/s\tratio\tZK p50 ms\tzkb p50 ms\tZK p99 ms\tzkb p99 ms\tp99 ratio\terrors ZK/zkb\tCPU µs/op ZK/zkb\tCPU wait µs/op ZK/zkb\tswitches/op ZK/zkb\n'
    for n in $nodes_list; do
      for w in $workloads; do
        read -r zo z50 z99 ze zc zq zs < <(mean "$work/results/$n-$w-zk-"*.json)
        read -r bo b50 b99 be bc bq bs < <(mean "$work/results/$n-$w-zb-"*.json)
        awk -v n="$n" -v w="$w" -v zo="$zo" -v bo="$bo" -v z50="$z50" -v b50="$b50" -v z99="$z99" -v b99="$b99" -v ze="$ze" -v be="$be" \
          -v zc="$zc" -v bc="$bc" -v zq="$zq" -v bq="$bq" -v zs="$zs" -v bs="$bs" 'BEGIN {
          ratio = zo > 0 ? sprintf("%.2f", bo / zo) : "-"
          pr = z99 > 0 ? sprintf("%.2f", b99 / z99) : "-"
          printf "%s\t%s\t%.0f\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s/%s\t%.0f/%.0f\t%.0f/%.0f\t%.1f/%.1f\n", n, w, zo, bo, ratio, z50, b50, z99, b99, pr, ze, be, zc, bc, zq, bq, zs, bs
        }'
      done
    done
  } | column -t -s $'\t'
  echo
  echo "errors: failed requests summed over the runs; +Nfailed: runs that aborted (left out of the means)."
  # The zkbridge runs with failed requests, a leader change or a starved
  # node, and what the node logs say happened during them.
  for f in "$work/results/"*-zb-*.json; do
    jq -r --arg run "$(basename "$f" .json)" 'select((.errors // 0) > 0 or .failed or (.zb_elections // 0) > 0 or (.zb_stalls // 0) > 0) |
      "  zkbridge run \($run | sub("-zb-"; " run ")): \(if .failed then "aborted" else "\(.errors) errors \([.per_op[]? | .errors_by_code // {} | to_entries[] | "\(.key) \(.value)"] | join(", "))" end); during it \(.zb_elections // 0) leader elections, \(.zb_stalls // 0) starved-node stalls in the logs"' "$f"
  done
  echo "ratio = zkbridge/ZooKeeper ops/s (above 1: zkbridge faster); p99 ratio = zkbridge/ZooKeeper (below 1: zkbridge faster)."
  if jq -e -s 'any(.[]; (.rate // 0) > 0)' "$work/results/"*.json >/dev/null 2>&1; then
    echo "paced (--rate): both get the same ops/s wherever they keep up, so compare the latency columns; ratio below 1: zkbridge fell behind the pace."
  fi
  echo "watch rows: ops are rounds (${BENCH_ARGS:+see BENCH_ARGS; }50 watchers by default), latency is write sent to last event."
  echo "connect rows: ops are sessions (handshake, then closeSession awaited), latency is the handshake's."
  echo "CPU, CPU wait, switches: summed over the server processes' threads (/proc/PID/task/*/schedstat) over the measured time, per op:"
  echo "  time on a CPU, time ready but waiting for one, and times put on one (wake-ups and preemptions)."
  echo "W@1 rows: one connection, one request outstanding (latency), to a $at1_role on a cluster; W@N: 8 connections, N requests outstanding in all; W@CxO: C connections × O; multiN: N setData per multi; the others: zkbridge bench's connections and outstanding."
  if [ "$stages" = 1 ]; then
    # Each zkbridge run's write stages (BENCH_STAGES=1), µs.
    for f in "$work/results/3-"*-zb-*.json; do
      jq -e '.stages' "$f" >/dev/null 2>&1 || continue
      echo
      jq -r --arg run "$(basename "$f" .json)" '.stages | "write stages, zkbridge \($run | sub("^3-"; "") | sub("-zb-"; " run ")): client on replica \(.serving) (leader \(.leader)), \(.writes) writes joined; stage, whose, writes, p50 µs, p99 µs"' "$f"
      jq -r '.stages.stages[] | "  \(.name)\t\(.who)\t\(.n)\t\(.p50_us | floor)\t\(.p99_us | floor)"' "$f" | column -t -s $'\t'
      jq -r '.stages.logs[] | "  replica \(.replica): log saves/s \(.saves_per_sec | floor), entries/save \(.entries_per_save * 10 | floor / 10), in save \(.save_busy * 100 | floor)%, mean save µs \(.save_mean_us | floor); applies/s \(.applies_per_sec | floor), entries/apply \(.entries_per_apply * 10 | floor / 10), in apply \(.apply_busy * 100 | floor)%"' "$f"
    done
  fi
fi

# The memory and restart table: one run per system.
if [ "$memory" = 1 ]; then
  m=$work/mem
  echo
  echo "memory and restart, 1 node each, run one system at a time: $znodes znodes of 100 B under one parent"
  echo "(created with zkbridge bench -w create -c 8 -o 64); ZooKeeper heap $ZK_HEAP (-Xms = -Xmx)"
  echo
  {
    printf 'measure\tZooKeeper\tzkbridge\tratio zkb/ZK\n'
    row() { # label zk-value zb-value format
      awk -v l="$1" -v z="$2" -v b="$3" -v f="$4" 'BEGIN {
        zs = z == "" || z == "null" ? "-" : sprintf(f, z); bs = b == "" || b == "null" ? "-" : sprintf(f, b)
        r = zs != "-" && bs != "-" && z + 0 != 0 ? sprintf("%.2f", b / z) : "-"
        printf "%s\t%s\t%s\t%s\n", l, zs, bs, r
      }'
    }
    per() { # sys field: (after - before) / znodes, or null
      jq -n --slurpfile a "$m/$1-after.json" --slurpfile b "$m/$1-before.json" --argjson n "$znodes" --arg f "$2" \
        'if $a[0][$f] == null or $b[0][$f] == null then null else ($a[0][$f] - $b[0][$f]) / $n end'
    }
    get() { jq -r "$2" "$m/$1"; } # file filter
    row "RSS bytes/znode (lower is better)" "$(per zk rss)" "$(per zb rss)" "%.0f"
    row "heap bytes/znode after GC (lower is better)" "$(per zk heap)" "$(per zb heap)" "%.0f"
    row "RSS with the znodes, MB (lower is better)" "$(get zk-after.json '.rss / 1e6')" "$(get zb-after.json '.rss / 1e6')" "%.0f"
    row "heap with the znodes, MB (lower is better)" "$(get zk-after.json '(.heap // empty) / 1e6')" "$(get zb-after.json '(.heap // empty) / 1e6')" "%.0f"
    row "approximate_data_size bytes/znode (mntr)" "$(per zk data_size)" "$(per zb data_size)" "%.0f"
    row "create, znodes/s (higher is better)" "$(get zk-create.json .ops_per_sec)" "$(get zb-create.json .ops_per_sec)" "%.0f"
    row "restart to getAllChildrenNumber, s (lower is better)" "$(get zk-restart.json .restart_s)" "$(get zb-restart.json .restart_s)" "%.2f"
    row "RSS after the restart, MB (lower is better)" "$(get zk-restarted.json '.rss / 1e6')" "$(get zb-restarted.json '.rss / 1e6')" "%.0f"
  } | column -t -s $'\t'
  echo
  echo "bytes/znode = (after - before) / $znodes, each process measured fresh and again with the znodes."
  echo "heap: ZooKeeper's Java heap used after jcmd GC.run; zkbridge's go_memstats_heap_inuse_bytes after a GC"
  echo "(which includes the Raft log's 16 write buffers of 1 MiB)."
  echo "zkbridge's Pebble block cache and memtables are off the Go heap and not exported: they count in RSS only."
  echo "RSS also holds freed memory not yet returned to the OS: zkbridge's idle Go heap after the GC was" \
    "$(jq -r '(.heap_idle_retained // 0) / 1e6 | floor' "$m/zb-after.json") MB with the znodes;" \
    "ZooKeeper's RSS grows with the heap pages it touched (up to -Xmx)."
  echo "restart: SIGTERM, then the time from spawning the server on its data to the first getAllChildrenNumber"
  echo "of the parent that counts all $znodes znodes (polled every 20 ms)."
fi
printf 'reproduce: BENCH_NODES=%q BENCH_WORKLOADS=%q BENCH_DURATION=%s BENCH_WARMUP=%s BENCH_PREWARM=%s BENCH_REPEAT=%s BENCH_ARGS=%q BENCH_AT1_ROLE=%s BENCH_FSYNC=%s BENCH_MEMORY=%s BENCH_ZNODES=%s ZK_HEAP=%s BENCH_TLS=%s BENCH_STAGES=%s scripts/bench-vs-zk.sh\n' \
  "$nodes_list" "$workloads" "$duration" "$warmup" "$prewarm" "$repeat" "$extra" "$at1_role" "$fsync" "$memory" "$znodes" "$ZK_HEAP" "$tls" "$stages"
