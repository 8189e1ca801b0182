#!/usr/bin/env bash
# Installs what zkbridge's tests need from Debian's packages: a real
# ZooKeeper 3.8 (the oracle), its C client, kazoo, a headless JRE, nc
# (the documentation's four-letter-word examples), chromium (the web
# console's browser tests, driven headless by chromedp) and libnetty-java
# (the netty jars a TLS-enabled ZooKeeper needs beyond its manifest).
# python3-pure-sasl is kazoo's SASL (the SASL compat tests); tmux runs zkbridge top
# and shell in a terminal for their tests. krb5-kdc, krb5-admin-server
# (kadmin.local) and krb5-user (kinit) run a throwaway Kerberos realm for
# the SASL GSSAPI tests; python3-kerberos is pure-sasl's GSSAPI.
# Idempotent: apt-get runs only when something is missing.
set -euo pipefail

packages=(zookeeper zookeeper-bin python3-kazoo default-jre-headless netcat-openbsd chromium libnetty-java python3-pure-sasl tmux krb5-kdc krb5-admin-server krb5-user python3-kerberos)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-zookeeper: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-zookeeper: need root to apt-get install ${missing[*]}; run: sudo $0" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for p in "${packages[@]}"; do
  printf 'install-zookeeper: %-22s %s\n' "$p" "$(dpkg-query -W -f='${Version}' "$p")"
done
printf 'install-zookeeper: %-22s %s\n' java "$(java -version 2>&1 | head -n1)"
