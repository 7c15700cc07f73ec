#!/usr/bin/env node
// `fcctl explain answer` and `fcctl status` on big tables (issue 29 §1, §2): the answer under test among N outbox rows
// (default 2,000,000, a month of history as bench/scan.mjs seeds it) and M projection rows
// (1,000,000), with its own outbox rows, grant, projection, audit row and apply command. Goal: the
// whole command (start-up included) under 1 s. Snapshots are small (--bytes 100): explain never
// reads them, and the seed is what takes the time here.
//
//   npm run build && eval "$(bash scripts/services.sh env)" && node bench/explain.mjs \
//     [--outbox 2000000] [--projections 1000000] [--bytes 100] [--rounds 5] [--json]
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import mysql from 'mysql2/promise';
import { benchArgs, FCCTL, insertOutboxRows, loadText, median, scratch, str } from './lib.mjs';

const args = benchArgs({
  outbox: str('2000000'),
  projections: str('1000000'),
  bytes: str('100'),
  rounds: str('5'),
  dir: str(),
});
const OUTBOX = Number(args.outbox);
const PROJECTIONS = Number(args.projections);
const ROUNDS = Number(args.rounds);
if (![OUTBOX, PROJECTIONS, ROUNDS, Number(args.bytes)].every((x) => Number.isInteger(x) && x >= 0) || ROUNDS < 1) {
  console.error('bench/explain: --outbox, --projections, --bytes are whole numbers, --rounds at least 1');
  process.exit(2);
}
const A = '0e0e0e0e-0000-4000-8000-00000000beef';
const FORM = '0e0e0e0e-0000-4000-8000-00000000f0f0';

const { dbs, admin, log, cleanup } = await scratch('explain', args, ['_fc', '_sh']);
const [fcDb, shDb] = dbs;
const env = { PATH: process.env.PATH, FCCTL_FC_DATABASE_URL: fcDb.url, FCCTL_SH_DATABASE_URL: shDb.url };
const fcctl = (argv) => {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [FCCTL, ...argv], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`fcctl ${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { ms: performance.now() - t0, out: r.stdout };
};

async function seed() {
  for (const d of dbs) await admin.query(`CREATE DATABASE \`${d.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  fcctl(['db', 'init', '--side', 'fc']);
  fcctl(['db', 'init', '--side', 'sh']);
  const fc = await mysql.createConnection({ uri: fcDb.url });
  const sh = await mysql.createConnection({ uri: shDb.url });
  const t0 = performance.now();
  await insertOutboxRows(fc, OUTBOX, { history: true, bytes: Number(args.bytes) });
  const outboxSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  for (let from = 1; from <= PROJECTIONS; from += 100_000) {
    const to = Math.min(PROJECTIONS, from + 99_999);
    await sh.query(
      'INSERT INTO fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, snapshot_json, create_time) ' +
        `SELECT LPAD(CONCAT('p', seq), 36, '0'), 1 + seq % 500, '00000000-0000-0000-0000-000000000000', 1, 1, REPEAT('0', 64), '{}', NOW() FROM seq_${from}_to_${to}`,
    );
  }
  const projectionSeconds = (performance.now() - t1) / 1000;
  // the answer under test: FC row, two consumers' rows (one DEAD), grants, projection (stale), audit, apply
  await fc.query(
    "INSERT INTO answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, status, values_json, create_time, answer_revision) VALUES (?, ?, 1, 5, 'a', 'c', 1, 's', '{\"n\":1}', '2026-11-30 10:00:00', 4)",
    [A, FORM],
  );
  await fc.query(
    'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, retry_count, last_error, create_time) ' +
      "VALUES (UUID(), 'created', 'p', 'k1', 5, 1, ?, 1, ?, 4, REPEAT('0', 64), NOW(), '{}', 'DEAD', 8, 'NO_ROUTE: x', NOW()), (UUID(), 'created', 'p', 'k2', 5, 1, ?, 1, ?, 4, REPEAT('0', 64), NOW(), '{}', 'BROKER_ACCEPTED', 0, NULL, NOW())",
    [FORM, A, FORM, A],
  );
  await fc.query(
    "INSERT INTO form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, create_time) VALUES (?, 5, 'k1', NOW()), (?, 5, 'k2', NOW())",
    [FORM, FORM],
  );
  await sh.query("INSERT INTO service_apply (id, biz_type, biz_id, flow_status) VALUES (77, 'T', 'b1', 20)");
  await sh.query(
    "INSERT INTO flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, state, create_time) VALUES ('T', 'b1', 'a', 1, 'g', 't', 'DONE', NOW())",
  );
  await sh.query(
    "INSERT INTO fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, snapshot_json, apply_id, create_time) VALUES (?, 5, ?, 1, 3, REPEAT('1', 64), '{}', 77, NOW())",
    [A, FORM],
  );
  await sh.query(
    "INSERT INTO fc_reconcile_audit (action, outcome, run_id, host, sch_id, answer_uuid, create_time) VALUES ('REPAIR', 'APPLIED', 'r', 'h', 5, ?, NOW())",
    [A],
  );
  await fc.query('ANALYZE TABLE answer_delivery');
  await sh.query('ANALYZE TABLE fc_answer_projection');
  for (let t = Date.now(); Date.now() - t < 180_000; await new Promise((r) => setTimeout(r, 1000))) {
    const [[{ Value: dirty }]] = await fc.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'");
    if (Number(dirty) < 1000) break;
  }
  await fc.end();
  await sh.end();
  log(
    `seeded ${OUTBOX} outbox rows in ${outboxSeconds.toFixed(1)} s, ${PROJECTIONS} projections in ${projectionSeconds.toFixed(1)} s`,
  );
  return { outboxSeconds: Math.round(outboxSeconds), projectionSeconds: Math.round(projectionSeconds) };
}

let report;
try {
  const seeded = await seed();
  const ms = { version: [], explain: [], status: [] };
  let doc = null;
  for (let round = 0; round < ROUNDS; round++) {
    ms.version.push(fcctl(['--version']).ms);
    const r = fcctl(['--json', 'explain', 'answer', A]);
    ms.explain.push(r.ms);
    doc = JSON.parse(r.out);
    // `fcctl status` on the same outbox (issue 29 §2): the same goal
    ms.status.push(fcctl(['--json', 'status']).ms);
  }
  const explainMs = Math.round(median(ms.explain));
  report = {
    outbox: OUTBOX,
    projections: PROJECTIONS,
    rounds: ROUNDS,
    seedSeconds: seeded,
    medianMs: { version: Math.round(median(ms.version)), explain: explainMs, status: Math.round(median(ms.status)) },
    allMs: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.map(Math.round)])),
    verdicts: doc.verdicts.map((v) => `${v.consumerAppKey}: ${v.kind}`),
    goalMet: explainMs < 1000,
    statusGoalMet: median(ms.status) < 1000,
    load: loadText(),
    cpus: os.cpus().length,
    node: process.version,
  };
} finally {
  await cleanup();
}
if (args.json) console.log(JSON.stringify(report));
else {
  const m = report.medianMs;
  console.log(
    `explain answer, ${OUTBOX} outbox rows, ${PROJECTIONS} projection rows, median of ${ROUNDS} runs (start-up included; load ${report.load} on ${report.cpus} CPUs):`,
  );
  console.log(`  fcctl --version   ${m.version} ms (the start-up floor)`);
  console.log(`  explain answer    ${m.explain} ms (goal < 1000 ms: ${report.goalMet ? 'met' : 'NOT met'})`);
  console.log(`  status            ${m.status} ms (goal < 1000 ms: ${report.statusGoalMet ? 'met' : 'NOT met'})`);
  console.log(`  verdicts: ${report.verdicts.join('; ')}`);
  console.log(
    `  seed: outbox ${report.seedSeconds.outboxSeconds} s, projections ${report.seedSeconds.projectionSeconds} s`,
  );
}
