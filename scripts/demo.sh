#!/usr/bin/env bash
# `npm run demo`: the main job on local services (npm runs build and services up first).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
fcctl() { node bin/fcctl "$@"; }
step() { printf '\n== %s\n' "$*"; }

step "fcctl db init --side all --dev   (reference schema, idempotent)"
fcctl db init --side all --dev
step "fcctl db check"
fcctl db check
step "fcctl config show   (secrets and URL passwords masked)"
fcctl config show
echo
echo "demo: done"
