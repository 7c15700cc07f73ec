#!/usr/bin/env bash
# The whole suite against the local services (`npm test` runs `npm run build` and
# `scripts/services.sh up` first): the main tests, then the fault suite (test/faults/, which restarts
# the services, so it runs alone, one file at a time) at its bounded size. Ends with the line
# `N passed, N failed` for CI.
#   scripts/test.sh [vitest args]   main suite + bounded fault suite
#   scripts/test.sh --faults        fault suite only (npm run test:faults: FCCTL_FAULT_SIZE=full)
# Node versions and SQL modes (issue 35 §4, §7): the main and fault suites run on FCCTL_TEST_NODE
# (default 24, the active LTS), under MySQL 8.0's default sql_mode; then, under MariaDB's default
# sql_mode, the whole main suite on the first of FCCTL_OTHER_NODES (default "22 20") and the unit files
# (scripts/unit-tests.mjs) and the demo on the others. Each Node is installed from the npm registry
# by scripts/node.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
export FCCTL_FAULT_TOTALS="$PWD/.fault-totals.jsonl"
rm -f .test-results*.json "$FCCTL_FAULT_TOTALS"
rc=0
MAIN_NODE=${FCCTL_TEST_NODE:-24}
OTHER_NODES=${FCCTL_OTHER_NODES-22 20}
# The machine's own PATH, before a Node version is put first.
BASE_PATH=$PATH
on_node() { # $1: major; sets PATH so that `node`, npx and every process the tests start use it
  local bin
  bin=$(bash scripts/node.sh "$1") || return 1
  export PATH="$bin:$BASE_PATH"
  echo "test: Node $(node --version)" >&2
}
# The result files that must exist at the end: a pass that wrote none (crashed) is a failure.
results=()
# A step around the suites that failed (a Node not installed, a mode not set): one failure each in
# the closing line, not only in the exit code (a run on the machine's own Node said "0 failed").
setup_failed=""
setup_failure() { echo "test: $1" >&2; setup_failed+="$1"$'\n'; rc=1; }
if ! on_node "$MAIN_NODE"; then setup_failure "Node $MAIN_NODE could not be installed: the suites ran on $(node --version)"; fi
# A server left in another mode by an interrupted run is put back in MySQL 8.0's first.
bash scripts/services.sh sql-mode mysql8 || setup_failure "the server's sql_mode could not be set to MySQL 8.0's"
# The tests are type-checked too (their expectTypeOf checks, helpers' types): a type error fails the run.
export FCCTL_TYPECHECK=passed
if ! npx tsc -p tsconfig.test.json; then echo "test: the type check of src/ and test/ failed (npx tsc -p tsconfig.test.json)" >&2; FCCTL_TYPECHECK=failed; rc=1; fi
# Formatting and lint (Biome, biome.jsonc): a file not formatted or a lint error fails the run.
export FCCTL_LINT=passed
if ! npx biome ci --reporter=summary .; then echo "test: formatting or lint failed (npx biome check --write . fixes the formatting)" >&2; FCCTL_LINT=failed; rc=1; fi
if [ "${1:-}" = "--faults" ]; then
  shift
  results+=(.test-results-faults.json)
  npx vitest run --config vitest.faults.config.ts --reporter=default --reporter=json --outputFile=.test-results-faults.json "$@" || rc=1
else
  results+=(.test-results.json)
  npx vitest run --reporter=default --reporter=json --outputFile=.test-results.json "$@" || rc=1
  # Filters given for the main suite (a file, -t) are not meant for the fault suite.
  if [ $# -eq 0 ]; then
    results+=(.test-results-faults.json)
    npx vitest run --config vitest.faults.config.ts --reporter=default --reporter=json --outputFile=.test-results-faults.json || rc=1
    # MySQL 8 fidelity (issue 35 §4): the passes above ran under MySQL 8.0's default sql_mode (the
    # server's mode at start, scripts/services.sh); the main suite runs again under MariaDB's own
    # default on the second Node, then the unit files and the demo on the third.
    bash scripts/services.sh sql-mode mariadb || setup_failure "the server's sql_mode could not be set to MariaDB's"
    first=1
    for v in $OTHER_NODES; do
      out=".test-results-node$v.json"
      results+=("$out")
      if ! on_node "$v"; then echo "test: Node $v could not be installed" >&2; rc=1; continue; fi
      if [ $first = 1 ]; then
        npx vitest run --reporter=default --reporter=json --outputFile="$out" || rc=1
      else
        # an empty list would run the whole main suite again instead
        units=$(node scripts/unit-tests.mjs) && [ -n "$units" ] || { setup_failure "scripts/unit-tests.mjs listed no unit file"; continue; }
        # shellcheck disable=SC2086
        npx vitest run --reporter=default --reporter=json --outputFile="$out" $units test/ops/demo.test.ts || rc=1
      fi
      first=0
    done
    bash scripts/services.sh sql-mode mysql8 || setup_failure "the server's sql_mode could not be set back to MySQL 8.0's"
  fi
fi
export PATH=$BASE_PATH
FCCTL_SETUP_FAILED="$setup_failed" node scripts/test-summary.mjs "${results[@]}" || rc=1
exit $rc
