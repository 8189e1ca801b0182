#!/usr/bin/env bash
# Runs a zkbridge cluster on loopback for tests, demos and benchmarks.
#
#   local-cluster.sh start N    start N nodes on free ports, wait for a leader,
#                               print the clients' connection string last
#   local-cluster.sh kill I     kill -9 node I (1-based, connection-string order)
#   local-cluster.sh restart I  start node I again on its ports and data
#   local-cluster.sh status     each node's pid and srvr Mode
#   local-cluster.sh native     the native API addresses (--native-addr), comma-separated
#   local-cluster.sh stop       stop every node and remove the cluster dir
#
# State lives in $ZKBRIDGE_CLUSTER_DIR (default: a fixed dir under $TMPDIR).
# ZKBRIDGE_BIN uses a prebuilt binary instead of building one.
# ZKBRIDGE_SERVER_FLAGS adds flags to every node's command line
# (e.g. "--force-sync=false"); they are kept for restart.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${ZKBRIDGE_CLUSTER_DIR:-${TMPDIR:-/tmp}/zkbridge-local-cluster}
die() { echo "local-cluster: $*" >&2; exit 1; }

srvr() { # port -> srvr output (empty if not answering)
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 0
  printf srvr >&3
  timeout 2 cat <&3 || true
  exec 3<&- 3>&-
}

mode_of() { srvr "$1" | sed -n 's/^Mode: //p'; }

start_node() { # i
  local i=$1
  # shellcheck disable=SC1090
  source "$dir/node$i.env"
  # shellcheck disable=SC2046 # the extra flags are split into words
  "$dir/zkbridge" server --data-dir "$dir/node$i" --client-addr "127.0.0.1:$CLIENT" \
    --peer-addr "127.0.0.1:$PEER" --admin-addr "127.0.0.1:$ADMIN" --native-addr "127.0.0.1:$NATIVE" --replica-id "$i" \
    --peers "$(cat "$dir/peers")" --4lw '*' --log-format json $(cat "$dir/flags" 2>/dev/null) \
    >>"$dir/node$i.log" 2>&1 </dev/null &
  echo $! >"$dir/node$i.pid"
}

wait_leader() { # n
  local n=$1 deadline=$((SECONDS + 60)) i
  while :; do
    local leaders=0 serving=0
    for ((i = 1; i <= n; i++)); do
      [ -f "$dir/node$i.pid" ] && kill -0 "$(cat "$dir/node$i.pid")" 2>/dev/null || continue
      # shellcheck disable=SC1090
      source "$dir/node$i.env"
      case "$(mode_of "$CLIENT")" in
        leader) leaders=$((leaders + 1)); serving=$((serving + 1)) ;;
        follower) serving=$((serving + 1)) ;;
      esac
    done
    ((leaders == 1 && serving > n / 2)) && return 0
    ((SECONDS > deadline)) && die "no leader within 60 s (logs in $dir/node*.log)"
    sleep 0.2
  done
}

nodes() { ls "$dir"/node*.env 2>/dev/null | wc -l; }

connect_string() {
  local n i out=()
  n=$(nodes)
  for ((i = 1; i <= n; i++)); do
    # shellcheck disable=SC1090
    source "$dir/node$i.env"
    out+=("127.0.0.1:$CLIENT")
  done
  (IFS=,; echo "${out[*]}")
}

case "${1:-}" in
  start)
    n=${2:?usage: local-cluster.sh start N}
    [ -e "$dir" ] && die "$dir exists: run 'local-cluster.sh stop' first"
    mkdir -p "$dir"
    if [ -n "${ZKBRIDGE_BIN:-}" ]; then
      cp "$ZKBRIDGE_BIN" "$dir/zkbridge"
    else
      (cd "$here" && go build -o "$dir/zkbridge" .) || die "go build failed"
    fi
    mapfile -t ports < <(/usr/bin/python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]) * 4)]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
for s in socks: s.close()
' "$n")
    peers=()
    for ((i = 1; i <= n; i++)); do
      c=${ports[$(( (i-1)*4 ))]} p=${ports[$(( (i-1)*4 + 1 ))]} a=${ports[$(( (i-1)*4 + 2 ))]} g=${ports[$(( (i-1)*4 + 3 ))]}
      printf 'CLIENT=%s\nPEER=%s\nADMIN=%s\nNATIVE=%s\n' "$c" "$p" "$a" "$g" >"$dir/node$i.env"
      peers+=("$i=127.0.0.1:$p")
    done
    (IFS=,; echo "${peers[*]}") >"$dir/peers"
    echo "${ZKBRIDGE_SERVER_FLAGS:-}" >"$dir/flags"
    echo "local-cluster: starting $n nodes in $dir" >&2
    for ((i = 1; i <= n; i++)); do start_node "$i"; done
    wait_leader "$n"
    connect_string
    ;;
  kill)
    i=${2:?usage: local-cluster.sh kill I}
    [ -f "$dir/node$i.pid" ] || die "no node $i"
    kill -9 "$(cat "$dir/node$i.pid")" 2>/dev/null || true
    rm -f "$dir/node$i.pid"
    echo "local-cluster: killed node $i" >&2
    ;;
  restart)
    i=${2:?usage: local-cluster.sh restart I}
    [ -f "$dir/node$i.env" ] || die "no node $i"
    if [ -f "$dir/node$i.pid" ]; then kill -9 "$(cat "$dir/node$i.pid")" 2>/dev/null || true; fi
    start_node "$i"
    wait_leader "$(nodes)"
    echo "local-cluster: node $i restarted" >&2
    ;;
  native)
    [ -d "$dir" ] || die "no cluster in $dir"
    n=$(nodes) out=()
    for ((i = 1; i <= n; i++)); do
      # shellcheck disable=SC1090
      source "$dir/node$i.env"
      out+=("127.0.0.1:${NATIVE:?node $i has no native port: a cluster from an older script}")
    done
    (IFS=,; echo "${out[*]}")
    ;;
  status)
    [ -d "$dir" ] || die "no cluster in $dir"
    n=$(nodes)
    for ((i = 1; i <= n; i++)); do
      # shellcheck disable=SC1090
      source "$dir/node$i.env"
      pid=-; [ -f "$dir/node$i.pid" ] && pid=$(cat "$dir/node$i.pid")
      m=$(mode_of "$CLIENT"); echo "node $i pid $pid client 127.0.0.1:$CLIENT mode ${m:-down}"
    done
    connect_string
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    for f in "$dir"/node*.pid; do
      [ -f "$f" ] || continue
      kill "$(cat "$f")" 2>/dev/null || true
    done
    sleep 0.5
    for f in "$dir"/node*.pid; do
      [ -f "$f" ] || continue
      kill -9 "$(cat "$f")" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
