#!/usr/bin/env bash
# Benchmarks zkbridge's native API side by side with etcd (Debian's
# etcd-server, installed here if missing) on loopback, with
# `zkbridge bench native`: a 3-node zkbridge cluster (local-cluster.sh) and
# a 3-node etcd cluster, both fsyncing every write, the workloads run
# against each in turn. Every process it starts is stopped on exit.
#
# usage: bench-native-vs-etcd.sh
# environment:
#   BENCH_WORKLOADS  (default "leases feed allocate snapshot")
#   BENCH_DURATION   measured time per workload (default 30s)
#   BENCH_LEASES     leases held (default 10000)
#   BENCH_RATE       feed writes/s (default 5000)
#   BENCH_ZNODES     snapshot subtree size (default 1000000)
#   ZKBRIDGE_BIN     a prebuilt zkbridge instead of building one
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "bench-native-vs-etcd: $*" >&2; exit 1; }
log() { echo "bench-native-vs-etcd: $*" >&2; }

workloads=${BENCH_WORKLOADS:-leases feed allocate snapshot}
duration=${BENCH_DURATION:-30s}

if ! command -v etcd >/dev/null; then
  log "installing etcd-server (Debian)"
  [ "$(id -u)" -eq 0 ] || die "need root to apt-get install etcd-server"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq etcd-server >/dev/null || { apt-get update -qq && apt-get install -y -qq etcd-server >/dev/null; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-native-bench.XXXXXX")
export ZKBRIDGE_CLUSTER_DIR=$work/zkbridge
etcd_pids=()
cleanup() {
  "$here/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true
  for p in "${etcd_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${etcd_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

if [ -z "${ZKBRIDGE_BIN:-}" ]; then
  (cd "$here" && go build -o "$work/zkbridge" .) || die "go build failed"
  export ZKBRIDGE_BIN=$work/zkbridge
fi
"$here/scripts/local-cluster.sh" start 3 >/dev/null
native=$("$here/scripts/local-cluster.sh" native)
log "zkbridge native API at $native"

mapfile -t ports < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
for s in socks: s.close()
')
cluster="" endpoints=()
for i in 0 1 2; do
  cluster+="${cluster:+,}e$i=http://127.0.0.1:${ports[$((2 * i + 1))]}"
  endpoints+=("127.0.0.1:${ports[$((2 * i))]}")
done
for i in 0 1 2; do
  c=${ports[$((2 * i))]} p=${ports[$((2 * i + 1))]}
  etcd --name "e$i" --data-dir "$work/etcd$i" \
    --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
    --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token zkbridge-bench \
    --quota-backend-bytes 8589934592 >"$work/etcd$i.log" 2>&1 &
  etcd_pids+=($!)
done
etcd_addrs=$(IFS=,; echo "${endpoints[*]}")
for _ in $(seq 150); do
  curl -sf "http://${endpoints[0]}/health" | grep -q '"health":"true"' && break
  sleep 0.2
done
log "etcd $(etcd --version | head -1) at $etcd_addrs"

zkb_pids=$(cat "$ZKBRIDGE_CLUSTER_DIR"/node*.pid | paste -sd,)
etcd_pid_list=$(IFS=,; echo "${etcd_pids[*]}")
for w in $workloads; do
  log "workload $w"
  "$ZKBRIDGE_BIN" bench native -w "$w" --addr "$native" --etcd "$etcd_addrs" --duration "$duration" \
    --server-pids "$zkb_pids" --etcd-pids "$etcd_pid_list" \
    --leases "${BENCH_LEASES:-10000}" --rate "${BENCH_RATE:-5000}" --znodes "${BENCH_ZNODES:-1000000}"
  echo
done
echo "reproduce: BENCH_WORKLOADS='$workloads' BENCH_DURATION=$duration BENCH_LEASES=${BENCH_LEASES:-10000} BENCH_RATE=${BENCH_RATE:-5000} BENCH_ZNODES=${BENCH_ZNODES:-1000000} scripts/bench-native-vs-etcd.sh"
