# Shared by start-zookeeper.sh and start-zookeeper-ensemble.sh (sourced,
# not run): the JVM launch of one ZooKeeper node, free loopback ports and
# srvr reads, so both start a node the same way.

zk_jar=/usr/share/java/zookeeper.jar

zk_die() { echo "$(basename "$0"): $*" >&2; exit 1; }

zk_require() {
  [ -f "$zk_jar" ] || zk_die "ZooKeeper is not installed ($zk_jar missing); run scripts/install-zookeeper.sh"
  command -v java >/dev/null || zk_die "java not found; run scripts/install-zookeeper.sh"
}

# zk_free_ports N: N distinct loopback ports, free a moment ago, one a line.
zk_free_ports() {
  /usr/bin/python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
for s in socks: s.close()
' "$1"
}

# zk_netty_classpath: the netty jars ZooKeeper's TLS (Netty) needs that
# zookeeper.jar's manifest does not list, ':'-separated.
zk_netty_classpath() {
  local jars="" j
  for j in netty-codec netty-resolver netty-transport-native-unix-common; do
    [ -f "/usr/share/java/$j.jar" ] || zk_die "/usr/share/java/$j.jar missing; run scripts/install-zookeeper.sh"
    jars="$jars${jars:+:}/usr/share/java/$j.jar"
  done
  echo "$jars"
}

# zk_launch MAINCLASS CFG LOG HEAP: starts one node in the background
# (its PID in $!) with TTL nodes, the super digest and the container check
# interval of the environment (ZK_SUPER_DIGEST, ZK_CONTAINER_CHECK_MS,
# ZK_JVM_FLAGS); ZK_TLS=1 adds the netty jars TLS needs.
zk_launch() {
  # super:superpw -> base64(sha1("super:superpw"))
  local super=${ZK_SUPER_DIGEST:-super:g9oN2HttPfn8MMWJZ2r45Np/LIA=}
  # shellcheck disable=SC2086
  setsid java -Xms"$4" -Xmx"$4" \
    -Dzookeeper.extendedTypesEnabled=true \
    -Dzookeeper.DigestAuthenticationProvider.superDigest="$super" \
    -Dznode.container.checkIntervalMs="${ZK_CONTAINER_CHECK_MS:-60000}" \
    -Dzookeeper.jmx.log4j.disable=true \
    ${ZK_JVM_FLAGS:-} \
    -cp "$zk_jar${ZK_TLS:+:$(zk_netty_classpath)}" "$1" "$2" >"$3" 2>&1 </dev/null &
}

# zk_srvr PORT: the node's srvr answer, or nothing if it does not answer.
# (ruok answers before a node serves; srvr tells when it does.)
zk_srvr() {
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 0
  printf srvr >&3
  timeout 2 cat <&3 || true
  exec 3<&- 3>&-
}
