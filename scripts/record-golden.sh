#!/usr/bin/env bash
# Records zkproto's golden vectors from a real ZooKeeper 3.8: starts a
# throwaway standalone server on loopback, runs zkproto/internal/recorder
# into zkproto/testdata/golden (or $1), and stops the server on exit.
#
# usage: scripts/record-golden.sh [OUT_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/zkproto/testdata/golden}

# A short container check interval lets the script watch the container
# manager reap a container and an expired TTL node within a second or two.
started=$(ZK_CONTAINER_CHECK_MS=1000 "$root/scripts/start-zookeeper.sh")
read -r port pid dir <<<"$started"
trap '"$root/scripts/stop-zookeeper.sh" "$pid" "$dir"' EXIT

cd "$root"
go run ./zkproto/internal/recorder -addr "127.0.0.1:$port" -out "$out"
