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
import { benchArgs, FCCTL, insertOutboxRows, loadText, median, scratch, str } from './lib.mjs';

const args = benchArgs({
  history: str('2000000'),
  pending: str('20000'),
  bytes: str('1000'),
  rounds: str('5'),
  dir: str(),
});
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
  const r = spawnSync(process.execPath, [FCCTL, ...argv], {
    env: { PATH: process.env.PATH, FCCTL_FC_DATABASE_URL: url },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`fcctl ${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return { ms: performance.now() - t0, out: r.stdout };
};

async function seed({ name, url }, history) {
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  fcctl(['db', 'init', '--side', 'fc'], url);
  const db = await mysql.createConnection({ uri: url });
  const t0 = performance.now();
  // the history first (the low ids, as in production), then the backlog
  if (history > 0) await insertOutboxRows(db, history + DEAD, { history: true, bytes: Number(args.bytes) });
  await insertOutboxRows(db, PENDING, { history: false, bytes: Number(args.bytes) });
  await db.query('ANALYZE TABLE answer_delivery');
  // A production history is old and on disk: the runs start once the seed's dirty pages are
  // written (at most 180 s), not while the server still flushes gigabytes of them.
  for (let t = Date.now(); Date.now() - t < 180_000; await new Promise((r) => setTimeout(r, 1000))) {
    const [[{ Value: dirty }]] = await db.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'");
    if (Number(dirty) < 1000) break;
  }
  const [states] = await db.query('SELECT state, COUNT(*) AS n FROM answer_delivery GROUP BY state');
  await db.end();
  log(
    `${url.replace(/:[^:@/]*@/, ':***@')}: ${states.map((s) => `${s.n} ${s.state}`).join(', ')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

/** The scan's statements one by one in one transaction, as `readScan` runs them: ms each. */
async function statementTimes(url) {
  const { scanSql } = await import('../dist/lib/deliveries/scan/sql.js');
  const db = await mysql.createConnection({ uri: url, dateStrings: true });
  const times = { states: [], open: [], reasons: [], newestFailed: [] };
  for (let round = 0; round < ROUNDS; round++) {
    await db.query('START TRANSACTION READ ONLY');
    const [[{ now }]] = await db.query(scanSql.now().sql);
    for (const [name, q] of Object.entries({
      states: scanSql.states(),
      open: scanSql.open(now),
      reasons: scanSql.reasons(),
      newestFailed: scanSql.newestFailed(20),
    })) {
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
    history: HISTORY,
    dead: history ? DEAD : 0,
    pending: PENDING,
    snapshotBytes: Number(args.bytes),
    rounds: ROUNDS,
    medianMs: { version: Math.round(median(ms.version)), plain: Math.round(median(ms.plain)), history: historyMs },
    allMs: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v.map(Math.round)])),
    statementsMs: history ? await statementTimes(history.url) : await statementTimes(plain.url),
    states: summary?.states ?? null,
    goalMet: historyMs === null ? undefined : historyMs < 1000,
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
    `deliveries scan, ${PENDING} PENDING rows, median of ${ROUNDS} runs (start-up included; load ${report.load} on ${report.cpus} CPUs):`,
  );
  console.log(`  fcctl --version            ${m.version} ms (the start-up floor)`);
  console.log(`  no history                 ${m.plain} ms`);
  if (m.history !== null)
    console.log(
      `  + ${HISTORY} BROKER_ACCEPTED, ${DEAD} DEAD   ${m.history} ms (goal < 1000 ms: ${report.goalMet ? 'met' : 'NOT met'})`,
    );
  console.log(
    `  statements on the ${m.history !== null ? 'history' : 'plain'} outbox (ms, median): ${Object.entries(
      report.statementsMs,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}
