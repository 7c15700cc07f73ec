#!/usr/bin/env node
// `fcctl deliveries scan` against a long history (issue 20): the same 20,000 PENDING rows in two
// outboxes, one alone and one after N BROKER_ACCEPTED and N/40 DEAD rows (a month old, written by
// fcctl: update_time set), each scanned in turn, and the scan's statements timed one by one on the
// history outbox. Goal: the whole command (start-up included) under 1 s at N = 2,000,000.
//
//   npm run build && eval "$(bash scripts/services.sh env)" && node bench/scan.mjs \
//     [--history 2000000] [--pending 20000] [--bytes 1000] [--rounds 5] [--json]
//     --history 0   no history outbox: the plain outbox's figures only
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import mysql from 'mysql2/promise';
import { benchArgs, FCCTL, loadText, scratch, str, median } from './lib.mjs';

const args = benchArgs({ history: str('2000000'), pending: str('20000'), bytes: str('1000'), rounds: str('5'), dir: str() });
const HISTORY = Number(args.history);
const DEAD = Math.floor(HISTORY / 40);
const PENDING = Number(args.pending);
const ROUNDS = Number(args.rounds);
if (![HISTORY, PENDING, ROUNDS, Number(args.bytes)].every((x) => Number.isInteger(x) && x >= 0) || ROUNDS < 1) {
  console.error('bench/scan: --history, --pending, --bytes are whole numbers, --rounds at least 1');
  process.exit(2);
}

const { dbs, admin, log, cleanup } = await scratch('scan', args, HISTORY > 0 ? ['_plain', '_history'] : ['_plain']);
const fcctl = (argv, url) => {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [FCCTL, ...argv], { env: { PATH: process.env.PATH, FCCTL_FC_DATABASE_URL: url }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`fcctl ${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { ms: performance.now() - t0, out: r.stdout };
};

/** `count` rows from `seq_from_to`, one INSERT … SELECT per 50,000 (MariaDB's Sequence engine). */
async function insertRows(db, count, kind) {
  const history = kind === 'history';
  for (let from = 1; from <= count; from += 50_000) {
    const to = Math.min(count, from + 49_999);
    // history: BROKER_ACCEPTED, then every 41st row DEAD with one of 7 reasons; backlog: PENDING, never written
    const dead = history ? 'seq % 41 = 0' : 'FALSE';
    await db.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, last_error, broker_accepted_at, create_time, update_time) ' +
        `SELECT UUID(), 'UPSERT', '100021', ?, 1, 1, '00000000-0000-0000-0000-000000000000', 1, LPAD(CONCAT(?, seq), 36, '0'), 1, REPEAT('0', 64), ` +
        `NOW() - INTERVAL ? DAY, CONCAT('{"h":"', REPEAT('x', ?), '"}'), ` +
        `CASE WHEN ${dead} THEN 'DEAD' WHEN ? THEN 'BROKER_ACCEPTED' ELSE 'PENDING' END, ` +
        `CASE WHEN ${dead} THEN CONCAT('NO_ROUTE: bench history ', seq % 7) END, ` +
        `CASE WHEN ? AND NOT (${dead}) THEN NOW() - INTERVAL 30 DAY END, NOW() - INTERVAL ? DAY, ` +
        `CASE WHEN ? THEN NOW() - INTERVAL 30 DAY + INTERVAL seq SECOND END FROM seq_${from}_to_${to}`,
      [history ? 'benchhistory' : 'bench', history ? 'h' : 'p', history ? 30 : 0, Math.max(0, Number(args.bytes) - 8), history, history, history ? 30 : 0, history],
    );
  }
}

async function seed({ name, url }, history) {
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  fcctl(['db', 'init', '--side', 'fc'], url);
  const db = await mysql.createConnection({ uri: url });
  const t0 = performance.now();
  // the history first (the low ids, as in production), then the backlog
  if (history > 0) await insertRows(db, history + DEAD, 'history');
  await insertRows(db, PENDING, 'pending');
  await db.query('ANALYZE TABLE answer_delivery');
  // A production history is old and on disk: the runs start once the seed's dirty pages are
  // written (at most 180 s), not while the server still flushes gigabytes of them.
  for (let t = Date.now(); Date.now() - t < 180_000; await new Promise((r) => setTimeout(r, 1000))) {
    const [[{ Value: dirty }]] = await db.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'");
    if (Number(dirty) < 1000) break;
  }
  const [states] = await db.query('SELECT state, COUNT(*) AS n FROM answer_delivery GROUP BY state');
  await db.end();
  log(`${url.replace(/:[^:@/]*@/, ':***@')}: ${states.map((s) => `${s.n} ${s.state}`).join(', ')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** The scan's statements one by one in one transaction, as `readScan` runs them: ms each. */
async function statementTimes(url) {
  const { scanSql } = await import('../dist/lib/deliveries/scan/sql.js');
  const db = await mysql.createConnection({ uri: url, dateStrings: true });
  const times = { states: [], open: [], reasons: [], newestFailed: [] };
  for (let round = 0; round < ROUNDS; round++) {
    await db.query('START TRANSACTION READ ONLY');
    const [[{ now }]] = await db.query(scanSql.now().sql);
    for (const [name, q] of Object.entries({ states: scanSql.states(), open: scanSql.open(now), reasons: scanSql.reasons(), newestFailed: scanSql.newestFailed(20) })) {
      const t0 = performance.now();
      await db.query(q.sql, q.params);
      times[name].push(performance.now() - t0);
    }
    await db.query('COMMIT');
  }
  await db.end();
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(median(v))]));
}

let report;
try {
  const [plain, history] = dbs;
  await seed(plain, 0);
  if (history) await seed(history, HISTORY);
  const ms = { version: [], plain: [], history: [] };
  let summary = null;
  // alternating, so a change in the machine's load falls on both
  for (let round = 0; round < ROUNDS; round++) {
    ms.version.push(fcctl(['--version'], plain.url).ms);
    ms.plain.push(fcctl(['--json', 'deliveries', 'scan'], plain.url).ms);
    if (history) {
      const r = fcctl(['--json', 'deliveries', 'scan'], history.url);
      ms.history.push(r.ms);
      summary = JSON.parse(r.out.trim().split('\n').at(-1));
    }
  }
  const historyMs = history ? Math.round(median(ms.history)) : null;
  report = {
    history: HISTORY, dead: history ? DEAD : 0, pending: PENDING, snapshotBytes: Number(args.bytes), rounds: ROUNDS,
    medianMs: { version: Math.round(median(ms.version)), plain: Math.round(median(ms.plain)), history: historyMs },
    allMs: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.map(Math.round)])),
    statementsMs: history ? await statementTimes(history.url) : await statementTimes(plain.url),
    states: summary?.states ?? null,
    goalMet: historyMs === null ? undefined : historyMs < 1000,
    load: loadText(), cpus: os.cpus().length, node: process.version,
  };
} finally {
  await cleanup();
}
if (args.json) console.log(JSON.stringify(report));
else {
  const m = report.medianMs;
  console.log(`deliveries scan, ${PENDING} PENDING rows, median of ${ROUNDS} runs (start-up included; load ${report.load} on ${report.cpus} CPUs):`);
  console.log(`  fcctl --version            ${m.version} ms (the start-up floor)`);
  console.log(`  no history                 ${m.plain} ms`);
  if (m.history !== null) console.log(`  + ${HISTORY} BROKER_ACCEPTED, ${DEAD} DEAD   ${m.history} ms (goal < 1000 ms: ${report.goalMet ? 'met' : 'NOT met'})`);
  console.log(`  statements on the ${m.history !== null ? 'history' : 'plain'} outbox (ms, median): ${Object.entries(report.statementsMs).map(([k, v]) => `${k} ${v}`).join(', ')}`);
}
