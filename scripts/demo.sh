#!/usr/bin/env bash
# `npm run demo`: the main job on local services, as an operator would run it (npm runs the build
# and `scripts/services.sh up` first). Each step prints what it did. Re-runnable.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
# Every file the demo writes goes under the services' directory (FCCTL_SERVICES_DIR, as
# scripts/services.sh uses it), never elsewhere in the tree or in /tmp.
SVCDIR="${FCCTL_SERVICES_DIR:-$PWD/.services}"
mkdir -p "$SVCDIR"
export FCCTL_APP_KEY=100021 FCCTL_APP_CODE=demo-publisher
CONSUMERS=(100018 100031 100044)
fcctl() { node bin/fcctl "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
started=$(date +%s)

step "db init --side all --dev   (reference schema, idempotent; marks the databases as development ones)"
fcctl db init --side all --dev

step "dev seed   (600 answers × 3 consumers, a few revoked/held/advanced grants, a few rows built to fail; SH projections with drift)"
fcctl --json dev seed --answers 600 --consumer-keys "$(IFS=,; echo "${CONSUMERS[*]}")" --schools 2 --include-faults --replace \
  | node -e 'let t="";process.stdin.on("data",(c)=>t+=c).on("end",()=>{const s=JSON.parse(t.trim().split("\n").pop());console.log("tables:",JSON.stringify(Object.fromEntries(Object.entries(s.counts).filter(([k])=>!k.includes("_")||k.startsWith("answer")||k.startsWith("form")||k.startsWith("application")||k.startsWith("fc_")))));console.log("projection drift:",JSON.stringify(s.drift));console.log("rows built to fail:",s.faults.map((f)=>f.kind).join(", "))})'

step "consumers declare the exchange and bind their queues (svc-hall's RabbitAdmin does this in production)"
node scripts/demo-consumer.mjs bind "${CONSUMERS[@]}"

step "doctor --probe   (connections, schemas, exchange, mandatory return before ack)"
fcctl doctor --probe

step "deliveries scan   (before)"
fcctl deliveries scan --limit 5

step "deliveries send   (claims, checks, publishes with confirms; exit 1 = some rows failed, as seeded)"
set +e
fcctl deliveries send --metrics-file "$SVCDIR/fcctl_send.prom"
rc=$?
set -e
echo "deliveries send exited $rc (1 expected: the seeded faulty rows failed their pre-publish checks)"
[ "$rc" -le 1 ] || exit "$rc"

step "consumers read every message back and verify each hash"
node scripts/demo-consumer.mjs verify "${CONSUMERS[@]}"

step "deliveries scan   (after: only the deliberate failures, revoked and held rows remain)"
fcctl deliveries scan --limit 10

step "metrics written for the node_exporter textfile collector"
grep -E '^fcctl_(rows|run_exit_code|last_success)' "$SVCDIR/fcctl_send.prom"

DEMO="$SVCDIR/demo"
rm -rf "$DEMO"; mkdir -p "$DEMO"
# A run id of its own for each reconcile (the default, today's UTC date, would find a second demo
# run of the day already done); every pair the FC grants of the first consumer name, or SH holds.
RUN_ID="demo-$(date -u +%Y%m%dT%H%M%S)"
reconcile_all() { # $1: before|after; one line per pair as it finishes, progress every 2 s, then the totals
  fcctl --json --progress-interval 2 reconcile run --all --consumer "${CONSUMERS[0]}" --run-id "$RUN_ID-$1" \
    --out-dir "$DEMO/$1" --metrics-file "$DEMO/fcctl_reconcile.prom" 2>&1 | node scripts/demo-reconcile.mjs
}
# The pairs' run directories of the first reconcile: DIR/<school>/<form>.
pair_dirs() { find "$DEMO/before" -mindepth 2 -maxdepth 2 -type d | sort; }

step "reconcile run --all   (every school × form at FC or SH, 4 at a time: FC and local manifests with checkpoints, then the diff)"
reconcile_all before

step "projection repair-authoritative --plan … (one plan per school from its pairs' repair-plan.jsonl; dry run first, then --execute)"
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
  node -e 'const fs=require("fs");const last=(f)=>fs.readFileSync(f,"utf8").trim().split("\n").map(JSON.parse).pop();const s=last(process.argv[1]);const d=last(process.argv[2]);console.log(`school ${process.argv[3]} (${process.argv[4]} plan lines): dry run ${JSON.stringify(d.counts??d.byResult??{})} → executed ${JSON.stringify(s.counts??s.byResult??{})}`)' "$DEMO/repair-$school.jsonl" "$DEMO/dry-$school.jsonl" "$school" "$(grep -c . "$plan")"
done

step "retire-absent prove, then retire-absent --execute   (only rows FC provably no longer has; two pairs at a time)"
retire_pair() { # $1: a pair's run directory; prints one line
  local run=$1 form=${1##*/} school rc=0
  school=$(basename "$(dirname "$run")")
  [ -s "$run/retire-candidates.jsonl" ] || return 0
  fcctl --json retire-absent prove --candidates "$run/retire-candidates.jsonl" --fc-manifest "$run/fc-manifest.jsonl" --out "$run/proof.json" >"$DEMO/prove-$school-$form.jsonl" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  fcctl --json retire-absent --proof "$run/proof.json" --execute >"$DEMO/retire-$school-$form.jsonl" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  node -e 'const fs=require("fs");const s=fs.readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse).pop();const n=Object.fromEntries(Object.entries(s).filter(([k,v])=>typeof v==="number"&&k!=="exitCode"&&k!=="seconds"));console.log(`school ${process.argv[2]} form ${process.argv[3].slice(0,8)}…: proof ${s.proofId}: ${JSON.stringify(n)}`)' "$DEMO/retire-$school-$form.jsonl" "$school" "$form"
}
lane=()
for run in $(pair_dirs); do
  retire_pair "$run" &
  lane+=($!)
  if [ ${#lane[@]} -ge 2 ]; then wait "${lane[0]}" || exit $?; lane=("${lane[@]:1}"); fi
done
for pid in "${lane[@]}"; do wait "$pid" || exit $?; done

step "apply-command resolve-unknown against the flow-center stand-in (fixtures/flow-center/server.mjs)"
export FCCTL_APP_SECRET="demo-secret-$RANDOM$RANDOM"
FLOW_STANDIN_APPS="{\"$FCCTL_APP_KEY\":\"$FCCTL_APP_SECRET\"}" node fixtures/flow-center/server.mjs --port 0 >"$SVCDIR/flow-center.out" 2>&1 &
flow_pid=$!
trap 'kill "$flow_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -s "$SVCDIR/flow-center.out" ] && break; sleep 0.1; done
export FCCTL_FLOW_URL=$(head -n 1 "$SVCDIR/flow-center.out")
echo "stand-in at $FCCTL_FLOW_URL"
node fixtures/flow-center/demo-rows.mjs
set +e
fcctl apply-command resolve-unknown --request-timeout 1 --lease-seconds 30
rc=$?
set -e
echo "apply-command resolve-unknown exited $rc (1 expected: one row DEAD for another owner, one for a RESTARTED branch, one FAILED on a lookup timeout)"
[ "$rc" -le 1 ] || exit "$rc"
echo "requests the stand-in received (no POST for an instance that existed):"
node -e 'fetch(process.argv[1] + "/__admin/log").then((r) => r.json()).then((log) => { for (const e of log) console.log(`  ${e.method.padEnd(4)} ${e.bizId}  ${e.status}${e.branch ? " " + e.branch : ""}${e.fault ? " (fault: " + e.fault + ")" : ""}`); })' "$FCCTL_FLOW_URL"

step "apply-command scan"
fcctl apply-command scan --limit 5
kill "$flow_pid" 2>/dev/null || true

step "final deliveries scan   (what remains: the deliberate failures, revoked and held rows)"
fcctl --json deliveries scan | tail -n 1

step "final reconcile run   (what remains: local-ahead rows, repairs deferred by a revoked grant, rows created after the task start or without createTime)"
reconcile_all after

echo
echo "demo: done in $(( $(date +%s) - started ))s"
