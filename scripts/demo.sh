#!/usr/bin/env bash
# `npm run demo`: the main job on local services, as an operator would run it (npm runs the build
# and `scripts/services.sh up` first). Each step prints what it did. Re-runnable.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/services.sh env)"
export FCCTL_APP_KEY=100021 FCCTL_APP_CODE=demo-publisher
CONSUMERS=(100018 100031 100044)
fcctl() { node bin/fcctl "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
started=$(date +%s)

step "db init --side all --dev   (reference schema, idempotent; marks the databases as development ones)"
fcctl db init --side all --dev

step "dev seed   (600 answers × 3 consumers, a few revoked/held/advanced grants, a few rows built to fail)"
fcctl --json dev seed --answers 600 --consumer-keys "$(IFS=,; echo "${CONSUMERS[*]}")" --schools 2 --include-faults --replace | tail -n 1

step "consumers declare the exchange and bind their queues (svc-hall's RabbitAdmin does this in production)"
node scripts/demo-consumer.mjs bind "${CONSUMERS[@]}"

step "doctor --probe   (connections, schemas, exchange, mandatory return before ack)"
fcctl doctor --probe

step "deliveries scan   (before)"
fcctl deliveries scan --limit 5

step "deliveries send   (claims, checks, publishes with confirms; exit 1 = some rows failed, as seeded)"
set +e
fcctl deliveries send --metrics-file .services/fcctl_send.prom
rc=$?
set -e
echo "deliveries send exited $rc (1 expected: the seeded faulty rows failed their pre-publish checks)"
[ "$rc" -le 1 ] || exit "$rc"

step "consumers read every message back and verify each hash"
node scripts/demo-consumer.mjs verify "${CONSUMERS[@]}"

step "deliveries scan   (after: only the deliberate failures, revoked and held rows remain)"
fcctl deliveries scan --limit 10

step "metrics written for the node_exporter textfile collector"
grep -E '^fcctl_(rows|run_exit_code|last_success)' .services/fcctl_send.prom

step "apply-command resolve-unknown against the flow-center stand-in (fixtures/flow-center/server.mjs)"
export FCCTL_APP_SECRET="demo-secret-$RANDOM$RANDOM"
FLOW_STANDIN_APPS="{\"$FCCTL_APP_KEY\":\"$FCCTL_APP_SECRET\"}" node fixtures/flow-center/server.mjs --port 0 >.services/flow-center.out 2>&1 &
flow_pid=$!
trap 'kill "$flow_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do [ -s .services/flow-center.out ] && break; sleep 0.1; done
export FCCTL_FLOW_URL=$(head -n 1 .services/flow-center.out)
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

echo
echo "demo: done in $(( $(date +%s) - started ))s"
