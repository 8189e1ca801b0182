#!/usr/bin/env bash
# Vendors the web console's front-end libraries from npm at pinned
# versions into server/admin/console/assets/vendor/ (committed, embedded in
# the binary with go:embed), so `go build` needs no network and the console
# works offline. Run it only to change a version; commit what it writes.
#   scripts/vendor-console-assets.sh
set -euo pipefail

HTMX_VERSION=2.0.4
UPLOT_VERSION=1.6.32

cd "$(dirname "$0")/.."
out=server/admin/console/assets/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v npm >/dev/null || { echo "vendor-console-assets: needs npm (apt-get install npm)" >&2; exit 1; }

fetch() { # package@version → unpacked into $work/<package>
  local spec=$1 name=${1%@*}
  (cd "$work" && npm pack --silent "$spec" >/dev/null)
  mkdir -p "$work/$name"
  tar -xzf "$work/${name}-${spec##*@}.tgz" -C "$work/$name" --strip-components=1
}

fetch "htmx.org@$HTMX_VERSION"
fetch "uplot@$UPLOT_VERSION"

mkdir -p "$out"
cp "$work/htmx.org/dist/htmx.min.js" "$out/htmx.min.js"
cp "$work/htmx.org/LICENSE" "$out/htmx.LICENSE"
cp "$work/uplot/dist/uPlot.iife.min.js" "$out/uPlot.iife.min.js"
cp "$work/uplot/dist/uPlot.min.css" "$out/uPlot.min.css"
cp "$work/uplot/LICENSE" "$out/uPlot.LICENSE"
cat > "$out/VERSIONS" <<V
htmx.org $HTMX_VERSION (npm, BSD-2-Clause: htmx.LICENSE)
uplot $UPLOT_VERSION (npm, MIT: uPlot.LICENSE)
V
( cd "$out" && sha256sum htmx.min.js uPlot.iife.min.js uPlot.min.css >> VERSIONS )
echo "vendor-console-assets: wrote $out:"
cat "$out/VERSIONS"
