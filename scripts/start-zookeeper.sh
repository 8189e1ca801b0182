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
#   ZK_HEAP              JVM heap, e.g. 512m (default 512m)
#   ZK_JVM_FLAGS         extra JVM flags
set -euo pipefail

die() { echo "start-zookeeper: $*" >&2; exit 1; }

jar=/usr/share/java/zookeeper.jar
[ -f "$jar" ] || die "ZooKeeper is not installed ($jar missing); run scripts/install-zookeeper.sh"
command -v java >/dev/null || die "java not found; run scripts/install-zookeeper.sh"

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

port=${1:-$(free_port)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/zkbridge-zk.XXXXXX")
mkdir -p "$dir/data"
# super:superpw -> base64(sha1("super:superpw"))
super=${ZK_SUPER_DIGEST:-super:g9oN2HttPfn8MMWJZ2r45Np/LIA=}

cat >"$dir/zoo.cfg" <<CFG
tickTime=${ZK_TICK_TIME:-2000}
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
4lw.commands.whitelist=*
admin.enableServer=false
CFG

# shellcheck disable=SC2086
setsid java -Xms"${ZK_HEAP:-512m}" -Xmx"${ZK_HEAP:-512m}" \
  -Dzookeeper.extendedTypesEnabled=true \
  -Dzookeeper.DigestAuthenticationProvider.superDigest="$super" \
  -Dznode.container.checkIntervalMs="${ZK_CONTAINER_CHECK_MS:-60000}" \
  -Dzookeeper.jmx.log4j.disable=true \
  ${ZK_JVM_FLAGS:-} \
  -cp "$jar" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
  >"$dir/zookeeper.log" 2>&1 </dev/null &
pid=$!

# ruok answers before the server serves; srvr tells when it does.
serving() {
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf srvr >&3
  local answer
  answer=$(timeout 2 cat <&3 || true)
  exec 3<&- 3>&-
  [[ "$answer" == "Zookeeper version"* ]]
}

deadline=$((SECONDS + 60))
until serving 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 20 "$dir/zookeeper.log" >&2 || true
    rm -rf "$dir"
    die "ZooKeeper exited during start-up (log above)"
  fi
  if ((SECONDS > deadline)); then
    kill -9 "$pid" 2>/dev/null || true
    rm -rf "$dir"
    die "ZooKeeper did not serve on 127.0.0.1:$port within 60 s"
  fi
  sleep 0.2
done
echo "$port $pid $dir"
