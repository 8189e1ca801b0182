#!/usr/bin/env bash
# Measures what an idle zkbridge cluster costs: each node's CPU and context
# switches per second while no client sends anything (Raft ticks and
# heartbeats, the peer transport's timers, session and metrics work, the
# garbage collector). At one write in flight this fixed cost is paid per
# round, so it shows in the CPU per write of the @1 bench rows.
#
#   scripts/idle-cpu.sh                 3 nodes, 10 s to settle, 30 s measured
#
# Environment:
#   IDLE_NODES     nodes in the cluster (default 3)
#   IDLE_SETTLE    seconds to wait after the cluster has a leader (default 10)
#   IDLE_SECONDS   seconds measured (default 30)
#   IDLE_PROFILE   a directory: also take a CPU profile of every node over
#                  the measured seconds (node<i>.pprof; read with
#                  `go tool pprof -top FILE`)
#   IDLE_JSON=1    print one JSON object instead of the table
#   ZKBRIDGE_BIN   a prebuilt zkbridge instead of building one
#
# The figures come from /proc/PID/stat (utime + stime) and /proc/PID/status
# (voluntary + nonvoluntary context switches, summed over the process's
# threads), read at the start and the end of the measured seconds. A profile
# costs a little CPU itself; compare figures taken with the same setting.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
nodes=${IDLE_NODES:-3}
settle=${IDLE_SETTLE:-10}
seconds=${IDLE_SECONDS:-30}
profile=${IDLE_PROFILE:-}
die() { echo "idle-cpu: $*" >&2; exit 1; }

[ -r /proc/self/stat ] || die "needs Linux /proc"
clk=$(getconf CLK_TCK)
work=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-idle.XXXXXX")
cluster=$work/cluster
cleanup() {
  ZKBRIDGE_CLUSTER_DIR=$cluster bash "$here/scripts/local-cluster.sh" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ZKBRIDGE_CLUSTER_DIR=$cluster bash "$here/scripts/local-cluster.sh" start "$nodes" >/dev/null ||
  die "the cluster did not start (logs in $cluster/node*.log)"
sleep "$settle"

cpu_ticks() { # pid -> utime + stime in clock ticks
  # Field 2 (comm) may hold spaces: cut after its closing parenthesis.
  local rest
  rest=$(sed 's/^.*) //' "/proc/$1/stat")
  awk '{ print $12 + $13 }' <<<"$rest"
}
switches() { # pid -> voluntary + nonvoluntary switches of every thread
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^voluntary_ctxt_switches|^nonvoluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}

declare -a pids admins cpu0 sw0
for ((i = 1; i <= nodes; i++)); do
  pids[i]=$(cat "$cluster/node$i.pid")
  # shellcheck disable=SC1090
  admins[i]=$(source "$cluster/node$i.env" && echo "127.0.0.1:$ADMIN")
done
if [ -n "$profile" ]; then
  mkdir -p "$profile"
  for ((i = 1; i <= nodes; i++)); do
    curl -fsS -o "$profile/node$i.pprof" "http://${admins[i]}/debug/pprof/profile?seconds=$seconds" &
  done
fi
load=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 1; i <= nodes; i++)); do cpu0[i]=$(cpu_ticks "${pids[i]}"); sw0[i]=$(switches "${pids[i]}"); done
start=$(date +%s.%N)
sleep "$seconds"
end=$(date +%s.%N)
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
rows=""
for ((i = 1; i <= nodes; i++)); do
  c=$(cpu_ticks "${pids[i]}") s=$(switches "${pids[i]}")
  rows+=$(awk -v n="$i" -v c0="${cpu0[i]}" -v c1="$c" -v s0="${sw0[i]}" -v s1="$s" -v t0="$start" -v t1="$end" -v hz="$clk" \
    'BEGIN { d = t1 - t0; printf "%d %.1f %.0f\n", n, (c1 - c0) * 1000 / hz / d, (s1 - s0) / d }')$'\n'
done
wait # the profiles
if [ "${IDLE_JSON:-0}" = 1 ]; then
  awk -v load="$load" -v load_end="$load_end" -v secs="$seconds" '
    NF { cpu += $2; sw += $3; nodes = nodes sep sprintf("{\"node\":%d,\"cpu_ms_per_s\":%s,\"switches_per_s\":%s}", $1, $2, $3); sep = "," }
    END { printf "{\"seconds\":%s,\"load_start\":\"%s\",\"load_end\":\"%s\",\"cpu_ms_per_s\":%.1f,\"switches_per_s\":%.0f,\"nodes\":[%s]}\n", secs, load, load_end, cpu, sw, nodes }' <<<"$rows"
else
  echo "idle ${nodes}-node cluster, ${seconds} s measured; load average $load at the start, $load_end at the end"
  printf '%-6s %14s %14s\n' node "CPU ms/s" "switches/s"
  awk 'NF { printf "%-6s %14s %14s\n", $1, $2, $3; cpu += $2; sw += $3 } END { printf "%-6s %14.1f %14.0f\n", "total", cpu, sw }' <<<"$rows"
  [ -z "$profile" ] || echo "profiles: $profile/node*.pprof (go tool pprof -top FILE)"
fi
