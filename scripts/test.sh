#!/usr/bin/env bash
# The whole suite against the local services (`npm test` runs `npm run build` and
# `scripts/services.sh up` first). Ends with the line `N passed, N failed` for CI.
set -uo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
results=.test-results.json
rm -f "$results"
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@"
rc=$?
node scripts/test-summary.mjs "$results" || rc=1
exit $rc
