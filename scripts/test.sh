#!/usr/bin/env bash
# The whole suite against the local services (`npm test` runs `npm run build` and
# `scripts/services.sh up` first): the main tests, then the fault suite (test/faults/, which restarts
# the services, so it runs alone, one file at a time) at its bounded size. Ends with the line
# `N passed, N failed` for CI.
#   scripts/test.sh [vitest args]   main suite + bounded fault suite
#   scripts/test.sh --faults        fault suite only (npm run test:faults: FCCTL_FAULT_SIZE=full)
set -uo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
export FCCTL_FAULT_TOTALS="$PWD/.fault-totals.jsonl"
rm -f .test-results.json .test-results-faults.json "$FCCTL_FAULT_TOTALS"
rc=0
# The tests are type-checked too (their expectTypeOf checks, helpers' types): a type error fails the run.
export FCCTL_TYPECHECK=passed
if ! npx tsc -p tsconfig.test.json; then echo "test: the type check of src/ and test/ failed (npx tsc -p tsconfig.test.json)" >&2; FCCTL_TYPECHECK=failed; rc=1; fi
# Formatting and lint (Biome, biome.jsonc): a file not formatted or a lint error fails the run.
export FCCTL_LINT=passed
if ! npx biome ci --reporter=summary .; then echo "test: formatting or lint failed (npx biome check --write . fixes the formatting)" >&2; FCCTL_LINT=failed; rc=1; fi
if [ "${1:-}" = "--faults" ]; then
  shift
  npx vitest run --config vitest.faults.config.ts --reporter=default --reporter=json --outputFile=.test-results-faults.json "$@" || rc=1
else
  npx vitest run --reporter=default --reporter=json --outputFile=.test-results.json "$@" || rc=1
  # Filters given for the main suite (a file, -t) are not meant for the fault suite.
  if [ $# -eq 0 ]; then
    npx vitest run --config vitest.faults.config.ts --reporter=default --reporter=json --outputFile=.test-results-faults.json || rc=1
  fi
fi
node scripts/test-summary.mjs .test-results.json .test-results-faults.json || rc=1
exit $rc
