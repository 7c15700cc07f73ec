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

echo
echo "demo: done in $(( $(date +%s) - started ))s"
