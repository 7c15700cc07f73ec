#!/usr/bin/env bash
# `npm run demo`: the main job on local services, as an operator would run it (npm runs the build
# and `scripts/services.sh up` first). Re-runnable. On a terminal each step is a one-line header
# (what it does and why), the command line, and what that command shows an operator on a terminal:
# its table or live view and its summary, a screen at most. Off a terminal (CI, demo-watch) the
# commands print their JSON lines, as they do for cron.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
# Every file the demo writes goes under the services' directory (FCCTL_SERVICES_DIR, as
# scripts/services.sh uses it), never elsewhere in the tree or in /tmp.
SVCDIR="${FCCTL_SERVICES_DIR:-$PWD/.services}"
mkdir -p "$SVCDIR"
export FCCTL_APP_KEY=100021 FCCTL_APP_CODE=demo-publisher
CONSUMERS=(100018 100031 100044)
# The commands draw their terminal views when their stdout is a terminal and CI is unset: the same rule.
TTY=0
if [ -t 1 ] && [ -z "${CI:-}" ]; then TTY=1; fi
fcctl() { node bin/fcctl "$@"; }
# Paths as the reader would type them: relative to the checkout.
short() { local a=$*; printf '%s' "${a//$PWD\//}"; }
STEPS=16
n=0
step() { # $1: the command; $2: what it does and why (one line)
  n=$((n + 1))
  if [ "$TTY" = 1 ]; then
    printf '\n\033[1;36m━━ %d/%d  %s\033[0m\033[36m — %s\033[0m\n' "$n" "$STEPS" "$1" "$2"
  else
    printf '\n== %d/%d  %s — %s\n' "$n" "$STEPS" "$1" "$2"
  fi
}
# On a terminal, the command line a reader could type (after `eval "$(bash scripts/services.sh env)"`).
show() { [ "$TTY" = 0 ] || printf '\033[2m$ %s\033[0m\n' "$(short "$@")"; }
run() { show fcctl "$@"; fcctl "$@"; }
# A deliberate failure, said to be one.
expected() {
  if [ "$TTY" = 1 ]; then printf '\033[33m▲ expected: %s\033[0m\n' "$*"; else echo "expected: $*"; fi
}
expect_exit() { # $1: the command; $2: its exit code; $3: the one expected; $4: why
  if [ "$2" = "$3" ]; then expected "$1 exit $3: $4"; else echo "$1 exited $2 ($3 expected: $4)"; fi
}
started=$(date +%s)
DEMO="$SVCDIR/demo"
# The page a person opens first: said before anything runs, and again at the end.
echo "demo: the reconcile report it writes is $(short "$DEMO/after/report.html") (one file, no network: open it in a browser when the demo ends)"

step "db init --side all --dev" "create the reference schema (idempotent); mark both databases as development ones"
run db init --side all --dev

step "dev seed" "600 answers × 3 consumers, a few rows built to fail, SH projections with drift"
show fcctl --json dev seed --answers 600 --consumer-keys "$(IFS=,; echo "${CONSUMERS[*]}")" --schools 2 --include-faults --replace
fcctl --json dev seed --answers 600 --consumer-keys "$(IFS=,; echo "${CONSUMERS[*]}")" --schools 2 --include-faults --replace \
  | node scripts/demo-digest.mjs seed

step "consumers bind" "the exchange and a queue per consumer (svc-hall's RabbitAdmin does this in production)"
show node scripts/demo-consumer.mjs bind "${CONSUMERS[@]}"
node scripts/demo-consumer.mjs bind "${CONSUMERS[@]}"

step "doctor --probe" "connections, schemas, the exchange; a mandatory return comes before its ack"
run doctor --probe

step "deliveries scan" "the outbox before sending: rows by state, how many are due, how many held"
run deliveries scan --limit 5

step "deliveries send" "claim each due row, check it, publish it with publisher confirms"
set +e
run deliveries send --metrics-file "$SVCDIR/fcctl_send.prom"
rc=$?
set -e
expect_exit "deliveries send" "$rc" 1 "the rows built to fail failed their pre-publish checks (never published)"
expected "GRANT_REVOKED, GRANT_VERSION_CHANGED (revoked) and held rows: the seeded grants that must not send"
[ "$rc" -le 1 ] || exit "$rc"

step "consumers verify" "read every message back as a consumer must: envelope, routing key, content hash"
show node scripts/demo-consumer.mjs verify "${CONSUMERS[@]}"
node scripts/demo-consumer.mjs verify "${CONSUMERS[@]}"

step "deliveries scan" "the outbox after: only the deliberate failures, revoked and held rows remain"
# --limit 2: the reasons table above the listing already names every failure
run deliveries scan --limit 2
expected "the FAILED rows are the ones built to fail (dotted and wildcard app keys, school 0, a tampered snapshot)"

step "metrics" "what deliveries send wrote for node_exporter's textfile collector (the alerts read it)"
show grep -E "'^fcctl_(rows|run_exit_code|last_success_timestamp_seconds)\{'" "$SVCDIR/fcctl_send.prom"
grep -E '^fcctl_(rows|run_exit_code|last_success_timestamp_seconds)\{' "$SVCDIR/fcctl_send.prom"

rm -rf "$DEMO"; mkdir -p "$DEMO"
# A run id of its own for each reconcile (the default, today's UTC date, would find a second demo
# run of the day already done); every pair the FC grants of the first consumer name, or SH holds.
RUN_ID="demo-$(date -u +%Y%m%dT%H%M%S)"
reconcile_all() { # $1: before|after
  local args=(reconcile run --all --consumer "${CONSUMERS[0]}" --run-id "$RUN_ID-$1" --out-dir "$DEMO/$1"
    --metrics-file "$DEMO/fcctl_reconcile.prom")
  if [ "$TTY" = 1 ]; then
    run "${args[@]}"
    echo "every difference, per pair: $(short "$DEMO/$1")/<school>/<form>/report.csv; the page: $(short "$DEMO/$1")/report.html"
  else
    # one line per pair as it finishes, progress every 2 s (demo-watch: never silent), then the totals
    fcctl --json --progress-interval 2 "${args[@]}" 2>&1 | node scripts/demo-reconcile.mjs
  fi
}
# The pairs' run directories of the first reconcile: DIR/<school>/<form>.
pair_dirs() { find "$DEMO/before" -mindepth 2 -maxdepth 2 -type d | sort; }

step "reconcile run --all" "each school × form, 4 at a time: FC and SH manifests with checkpoints, then the diff"
reconcile_all before

step "projection repair-authoritative" "repair SH from FC, per school: a dry run, then --execute"
[ "$TTY" = 0 ] || echo "one line per school (its table has a line per answer); each decision: $(short "$DEMO")/repair-evidence.jsonl"
for school in $(pair_dirs | xargs -n 1 dirname | xargs -n 1 basename | sort -u); do
  plan="$DEMO/repair-plan-$school.jsonl"
  cat "$DEMO/before/$school"/*/repair-plan.jsonl >"$plan"
  [ -s "$plan" ] || continue
  set +e
  fcctl --json projection repair-authoritative --plan "$plan" --consumer "${CONSUMERS[0]}" --proof-id "demo-reconcile-$school" >"$DEMO/dry-$school.jsonl"
  rc=$?
  [ "$rc" -le 1 ] || exit "$rc"
  fcctl --json projection repair-authoritative --plan "$plan" --consumer "${CONSUMERS[0]}" --proof-id "demo-reconcile-$school" --execute >"$DEMO/repair-$school.jsonl"
  rc=$?
  set -e
  [ "$rc" -le 1 ] || exit "$rc"
  node scripts/demo-digest.mjs repair "$school" "$plan" "$DEMO/dry-$school.jsonl" "$DEMO/repair-$school.jsonl"
done

step "retire-absent prove, retire-absent" "retire only rows FC provably no longer has, two pairs at a time"
[ "$TTY" = 0 ] || echo "one line per pair (its two summaries are 40 lines); the proofs: $(short "$DEMO")/before/<school>/<form>/proof.json"
retire_pair() { # $1: a pair's run directory; prints one line
  local run=$1 form=${1##*/} school rc=0
  school=$(basename "$(dirname "$run")")
  [ -s "$run/retire-candidates.jsonl" ] || return 0
  fcctl --json retire-absent prove --candidates "$run/retire-candidates.jsonl" --fc-manifest "$run/fc-manifest.jsonl" --out "$run/proof.json" >"$DEMO/prove-$school-$form.jsonl" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  fcctl --json retire-absent --proof "$run/proof.json" --execute >"$DEMO/retire-$school-$form.jsonl" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  node scripts/demo-digest.mjs retire "$school" "$form" "$DEMO/retire-$school-$form.jsonl"
}
lane=()
for run in $(pair_dirs); do
  retire_pair "$run" &
  lane+=($!)
  if [ ${#lane[@]} -ge 2 ]; then wait "${lane[0]}" || exit $?; lane=("${lane[@]:1}"); fi
done
for pid in "${lane[@]}"; do wait "$pid" || exit $?; done

step "apply-command resolve-unknown" "settle flow-center commands of unknown outcome, against a stand-in"
export FCCTL_APP_SECRET="demo-secret-$RANDOM$RANDOM"
FLOW_STANDIN_APPS="{\"$FCCTL_APP_KEY\":\"$FCCTL_APP_SECRET\"}" node fixtures/flow-center/server.mjs --port 0 >"$SVCDIR/flow-center.out" 2>&1 &
flow_pid=$!
trap 'kill "$flow_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -s "$SVCDIR/flow-center.out" ] && break; sleep 0.1; done
export FCCTL_FLOW_URL=$(head -n 1 "$SVCDIR/flow-center.out")
# (on a terminal the summary names it: flowUrl)
[ "$TTY" = 1 ] || echo "stand-in at $FCCTL_FLOW_URL"
node fixtures/flow-center/demo-rows.mjs
set +e
run apply-command resolve-unknown --request-timeout 1 --lease-seconds 30
rc=$?
set -e
expect_exit "resolve-unknown" "$rc" 1 "a row DEAD for another owner, one for a RESTARTED branch, one FAILED on a timeout"
echo "requests the stand-in received (no POST for an instance that existed):"
node scripts/demo-digest.mjs requests "$FCCTL_FLOW_URL"
[ "$rc" -le 1 ] || exit "$rc"

step "apply-command scan" "the command table after: DONE, and the DEAD and FAILED rows to look at"
run apply-command scan --limit 5
kill "$flow_pid" 2>/dev/null || true

step "deliveries scan" "what remains in the outbox: the deliberate failures, revoked and held rows"
if [ "$TTY" = 1 ]; then
  run deliveries scan --limit 1
else
  fcctl --json deliveries scan | tail -n 1
fi

step "reconcile run --all" "again, after the repairs and retirements: what is left"
reconcile_all after
expected "differences remain by design: LOCAL_AHEAD, rows absent at FC but too new or undated to retire, RETIRED"

echo
echo "demo: done in $(( $(date +%s) - started ))s"
first=$(find "$DEMO/after" -mindepth 2 -maxdepth 2 -type d | sort | head -n 1)
if [ "$TTY" = 1 ]; then printf '\n\033[1mWhere to look next\033[0m\n'; else printf '\nWhere to look next\n'; fi
echo "  reconcile report  $(short "$DEMO/after/report.html")  (open it in a browser: one file, no network)"
echo "  reconcile output  $(short "$DEMO/after")/summary.json, and per pair <school>/<form>/:"
(cd "$first" && ls) | tr '\n' ' ' | fold -s -w 96 | sed 's/^/                    /'
echo
echo "  the outbox        eval \"\$(bash scripts/services.sh env)\"; node bin/fcctl deliveries scan"
echo "  how it fits       docs/ARCHITECTURE.md"
