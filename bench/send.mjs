#!/usr/bin/env node
// `deliveries send` throughput against the raw amqplib publish-with-confirms rate on the same
// broker, same body size, same window, in the same script (issue 4: goal ≥ 0.5×).
//
//   npm run build && node bench/send.mjs [--rows 20000] [--bytes 1024] [--window 256] [--rounds 3] [--history N] [--json]
//   BENCH_FCCTL_ARGS="--pipeline 3 --batch-size 250"   extra options for the fcctl run (tuning)
//   BENCH_NODE_ARGS                                  extra node arguments for it (e.g. --cpu-prof)
//
// Each round: reset the bench outbox to PENDING and purge the queue, publish --rows raw messages
// of the same size with amqplib (ConfirmChannel, mandatory, persistent, the same window), then run
// the real `bin/fcctl deliveries send` as a child process over --rows rows. fcctl's rate is taken
// from its own summary (claim → publish → confirm → adjudicate, process start excluded) and also
// reported by wall clock including Node start-up.
//
// --history N (issue 20: a cost that does not grow with history): a second outbox, seeded once with
// N BROKER_ACCEPTED and N/40 DEAD old rows (the low ids, as in production) before the same --rows
// PENDING ones; each round runs fcctl on both (alternating which goes first) and reports the
// history run's rows/s against the plain one's (goal: within 10 %).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import { benchArgs, collect, ROOT, str } from './lib.mjs';

const args = benchArgs({ rows: str('20000'), bytes: str('1024'), window: str('256'), rounds: str('3'), history: str('0') });
const HISTORY = Number(args.history);
const ROWS = Number(args.rows);
const WINDOW = Number(args.window);
const BIN = `${ROOT}bin/fcctl`;
const KEY = 'benchconsumer';
const EXCHANGE = 'fc.answer.delivery.v2';

const envText = execFileSync('bash', [`${ROOT}scripts/services.sh`, 'env'], { encoding: 'utf8' });
const svc = Object.fromEntries([...envText.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
const mysqlBase = process.env.FCCTL_TEST_MYSQL_URL ?? svc.FCCTL_TEST_MYSQL_URL;
const amqpUrl = process.env.FCCTL_TEST_AMQP_URL ?? svc.FCCTL_TEST_AMQP_URL;
const dbName = 'fcctl_bench_send';
const fcUrl = `${mysqlBase}/${dbName}`;
const historyUrl = `${mysqlBase}/${dbName}_history`;
const env = { ...process.env, FCCTL_FC_DATABASE_URL: fcUrl, FCCTL_AMQP_URL: amqpUrl, FCCTL_APP_KEY: '100021', FCCTL_APP_CODE: 'demo-publisher' };

/** Runs fcctl; resolves its stdout, with `cpuSeconds` (user + system, from the shell's `times`). */
const fcctl = (argv, url = fcUrl) =>
  new Promise((resolve, reject) => {
    const node = [process.execPath, ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), BIN, '--json', ...argv];
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bench', ...node], { env: { ...env, FCCTL_FC_DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
    const text = collect(child);
    child.on('error', reject);
    child.on('close', (code) => {
      const { out, err } = text;
      const lines = err.trimEnd().split('\n');
      const sec = (t) => { const m = /(\d+)m([\d.]+)s/.exec(t ?? ''); return m ? Number(m[1]) * 60 + Number(m[2]) : NaN; };
      // `times` prints the shell's own times, then its children's (fcctl's)
      const [user, system] = (lines.pop() ?? '').trim().split(/\s+/);
      lines.pop();
      if (lines.length) process.stderr.write(`${lines.join('\n')}\n`);
      if (code === 0) resolve(Object.assign(new String(out), { cpuSeconds: sec(user) + sec(system) }));
      else reject(new Error(`fcctl ${argv.join(' ')} exited ${code}`));
    });
  });
// CPU seconds the broker and the database used (Linux /proc), to see who the machine's cores went to.
// The servers of this run's services dir (FCCTL_SERVICES_DIR: several pairs may run on one machine),
// else the first of that name.
const servicesDir = process.env.FCCTL_SERVICES_DIR ?? `${ROOT}.services`;
const pidFile = { mariadbd: `${servicesDir}/mariadb/mysqld.pid`, 'beam.smp': `${servicesDir}/rabbitmq/rabbit.pid` };
const serverPids = () => Object.fromEntries(['mariadbd', 'beam.smp'].map((n) => {
  try { return [n, readFileSync(pidFile[n], 'utf8').trim()]; } catch { /* not ours: look it up by name */ }
  try { return [n, execFileSync('pgrep', ['-x', n], { encoding: 'utf8' }).trim().split('\n')[0]]; } catch { return [n, null]; }
}));
const cpuOf = (pids) =>
  Object.fromEntries(Object.entries(pids).map(([n, pid]) => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return [n, (Number(f[11]) + Number(f[12])) / 100]; // utime + stime, in clock ticks of 1/100 s
    } catch {
      return [n, NaN];
    }
  }));
const cpuSince = (before) => Object.fromEntries(Object.entries(cpuOf(pids)).map(([n, s]) => [n, Math.round((s - before[n]) * 100) / 100]));
const pids = serverPids();
const summaryOf = (out) => String(out).trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.type === 'summary');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function setup() {
  const admin = await mysql.createConnection({ uri: mysqlBase });
  await admin.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
  await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  await fcctl(['db', 'init', '--side', 'fc', '--dev']);
  await fcctl(['dev', 'seed', '--answers', String(ROWS), '--consumer-keys', KEY, '--schools', '1', '--snapshot-bytes', args.bytes, '--no-grant-mix', '--no-sh']);
  const conn = await amqp.connect(amqpUrl);
  const ch = await conn.createChannel();
  await ch.assertExchange(EXCHANGE, 'topic', { durable: true });
  await ch.assertQueue('bench.send', { durable: true });
  await ch.bindQueue('bench.send', EXCHANGE, `fc.snapshot.v2.${KEY}.*`);
  if (HISTORY > 0) await seedHistory();
  return { conn, ch };
}

/**
 * The --history outbox: N BROKER_ACCEPTED and N/40 DEAD rows of another consumer (same snapshot
 * size, a month old), inserted first so they hold the low ids, then the same seed as the plain one
 * (`dev seed` wants an empty outbox: it seeds one, whose rows are then appended after the history).
 */
async function seedHistory() {
  const admin = await mysql.createConnection({ uri: mysqlBase });
  await admin.query(`DROP DATABASE IF EXISTS \`${dbName}_history\``);
  await admin.query(`CREATE DATABASE \`${dbName}_history\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  await fcctl(['db', 'init', '--side', 'fc', '--dev'], historyUrl);
  const db = await mysql.createConnection({ uri: historyUrl });
  const total = HISTORY + Math.floor(HISTORY / 40);
  const t0 = performance.now();
  // one INSERT … SELECT per 50,000 rows from MariaDB's Sequence engine (`seq_A_to_B`)
  for (let from = 1; from <= total; from += 50_000) {
    const to = Math.min(total, from + 49_999);
    await db.query(
      'INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, ' +
        'answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, state, last_error, broker_accepted_at, create_time, update_time) ' +
        "SELECT UUID(), 'UPSERT', '100021', 'benchhistory', 1, 1, '00000000-0000-0000-0000-000000000000', 1, LPAD(CONCAT('h', seq), 36, '0'), 1, " +
        `REPEAT('0', 64), NOW() - INTERVAL 30 DAY, CONCAT('{"h":"', REPEAT('x', ?), '"}'), IF(seq <= ?, 'BROKER_ACCEPTED', 'DEAD'), ` +
        "IF(seq <= ?, NULL, 'NO_ROUTE: bench history'), IF(seq <= ?, NOW() - INTERVAL 30 DAY, NULL), NOW() - INTERVAL 30 DAY, NOW() - INTERVAL 30 DAY " +
        `FROM seq_${from}_to_${to}`,
      [Math.max(0, Number(args.bytes) - 8), HISTORY, HISTORY, HISTORY],
    );
  }
  await db.query('RENAME TABLE answer_delivery TO bench_history');
  await db.query('CREATE TABLE answer_delivery LIKE bench_history');
  await fcctl(['dev', 'seed', '--answers', String(ROWS), '--consumer-keys', KEY, '--schools', '1', '--snapshot-bytes', args.bytes, '--no-grant-mix', '--no-sh'], historyUrl);
  const [cols] = await db.query("SELECT GROUP_CONCAT(column_name ORDER BY ordinal_position) AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'answer_delivery' AND column_name <> 'id'");
  await db.query(`INSERT INTO bench_history (${cols[0].c}) SELECT ${cols[0].c} FROM answer_delivery ORDER BY id`);
  await db.query('DROP TABLE answer_delivery');
  await db.query('RENAME TABLE bench_history TO answer_delivery');
  await db.query('ANALYZE TABLE answer_delivery');
  await db.end();
  if (!args.json) console.error(`history: ${HISTORY} BROKER_ACCEPTED + ${total - HISTORY} DEAD rows seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** Back to PENDING for a round: in the --history outbox only the bench consumer's rows. */
async function resetRound(ch, url = fcUrl) {
  const db = await mysql.createConnection({ uri: url });
  const only = url === fcUrl ? '' : ` WHERE consumer_app_key = '${KEY}'`;
  await db.query(`UPDATE answer_delivery SET state = 'PENDING', broker_accepted_at = NULL, next_retry_at = NULL, retry_count = 0, claim_owner = NULL, claim_expires_at = NULL${only}`);
  const [[{ size }]] = await db.query(`SELECT ROUND(AVG(LENGTH(snapshot_json))) AS size FROM answer_delivery${only}`);
  await db.end();
  await ch.purgeQueue('bench.send');
  return Number(size);
}

async function rawRate(conn, bodyBytes) {
  const ch = await conn.createConfirmChannel();
  const body = Buffer.alloc(bodyBytes, 0x61);
  let inFlight = 0;
  const waiters = [];
  const t0 = performance.now();
  const all = [];
  for (let i = 0; i < ROWS; i++) {
    while (inFlight >= WINDOW) await new Promise((r) => waiters.push(r));
    inFlight++;
    all.push(
      new Promise((resolve, reject) =>
        ch.publish(EXCHANGE, `fc.snapshot.v2.${KEY}.5`, body, { mandatory: true, persistent: true, messageId: `raw-${i}`, contentType: 'application/json' }, (err) => {
          inFlight--;
          waiters.shift()?.();
          err ? reject(err) : resolve();
        }),
      ),
    );
  }
  await Promise.all(all);
  const seconds = (performance.now() - t0) / 1000;
  await ch.close();
  return ROWS / seconds;
}

/** One `fcctl deliveries send` over the --rows PENDING rows of `url`: its rate, wall rate and CPU. */
async function sendRound(url) {
  await ch.purgeQueue('bench.send');
  const c0 = cpuOf(pids);
  const t0 = performance.now();
  const sent = await fcctl(['deliveries', 'send', '--window', String(WINDOW), ...(process.env.BENCH_FCCTL_ARGS ? process.env.BENCH_FCCTL_ARGS.split(' ') : [])], url);
  const wall = (performance.now() - t0) / 1000;
  const s = summaryOf(sent);
  if (s.accepted !== ROWS) throw new Error(`fcctl accepted ${s.accepted} of ${ROWS}`);
  const q = await ch.checkQueue('bench.send');
  if (q.messageCount !== ROWS) throw new Error(`queue holds ${q.messageCount}, expected ${ROWS}`);
  return { rate: s.rowsPerSecond, wallRate: ROWS / wall, cpu: { ...cpuSince(c0), node: Math.round(sent.cpuSeconds * 100) / 100 } };
}

const { conn, ch } = await setup();
const rounds = [];
for (let r = 0; r < Number(args.rounds); r++) {
  if (HISTORY > 0) await resetRound(ch, historyUrl);
  const snapshotBytes = await resetRound(ch);
  // the envelope adds the 14 other members (~420 bytes) around the snapshot
  let c0 = cpuOf(pids);
  const self0 = process.cpuUsage();
  const raw = await rawRate(conn, snapshotBytes + 420);
  const rawServerCpu = cpuSince(c0);
  const selfCpu = process.cpuUsage(self0);
  rawServerCpu.node = Math.round((selfCpu.user + selfCpu.system) / 1e4) / 100;
  // --history: the history run goes first in every other round, so drift favours neither
  const historyRun = HISTORY > 0 && r % 2 === 1 ? await sendRound(historyUrl) : null;
  await ch.purgeQueue('bench.send');
  c0 = cpuOf(pids);
  const t0 = performance.now();
  const sent = await fcctl(['deliveries', 'send', '--window', String(WINDOW), ...(process.env.BENCH_FCCTL_ARGS ? process.env.BENCH_FCCTL_ARGS.split(' ') : [])]);
  const wall = (performance.now() - t0) / 1000;
  const s = summaryOf(sent);
  if (s.accepted !== ROWS) throw new Error(`fcctl accepted ${s.accepted} of ${ROWS}`);
  const q = await ch.checkQueue('bench.send');
  if (q.messageCount !== ROWS) throw new Error(`queue holds ${q.messageCount}, expected ${ROWS}`);
  // rowsPerSecond: from the unrounded run time (seconds is rounded to 0.1 s)
  const fcctlServerCpu = { ...cpuSince(c0), node: Math.round(sent.cpuSeconds * 100) / 100 };
  const history = HISTORY > 0 ? (historyRun ?? (await sendRound(historyUrl))) : null;
  rounds.push({ raw, fcctl: s.rowsPerSecond, fcctlWall: ROWS / wall, snapshotBytes, rawServerCpu, fcctlServerCpu, history });
}
await ch.purgeQueue('bench.send');
await conn.close();

const result = {
  bench: 'send',
  rows: ROWS,
  window: WINDOW,
  snapshotBytes: rounds[0].snapshotBytes,
  rawPerSecond: Math.round(median(rounds.map((r) => r.raw))),
  fcctlPerSecond: Math.round(median(rounds.map((r) => r.fcctl))),
  fcctlWallPerSecond: Math.round(median(rounds.map((r) => r.fcctlWall))),
  ratio: Number((median(rounds.map((r) => r.fcctl / r.raw))).toFixed(2)),
  ratioWall: Number((median(rounds.map((r) => r.fcctlWall / r.raw))).toFixed(2)),
  ...(HISTORY > 0
    ? {
        history: HISTORY,
        historyDead: Math.floor(HISTORY / 40),
        historyPerSecond: Math.round(median(rounds.map((r) => r.history.rate))),
        // per round against the same round's plain run, then the median (goal ≥ 0.9)
        historyRatio: Number(median(rounds.map((r) => r.history.rate / r.fcctl)).toFixed(2)),
      }
    : {}),
  rounds: rounds.length,
  cpus: os.cpus().length,
  node: process.version,
};
if (args.json) console.log(JSON.stringify(result));
else {
  console.log(`| rows | window | snapshot bytes | raw amqplib msg/s | fcctl rows/s (in run) | fcctl rows/s (wall, incl. start) | ratio | ratio (wall) |`);
  console.log(`|---:|---:|---:|---:|---:|---:|---:|---:|`);
  console.log(`| ${result.rows} | ${result.window} | ${result.snapshotBytes} | ${result.rawPerSecond} | ${result.fcctlPerSecond} | ${result.fcctlWallPerSecond} | ${result.ratio} | ${result.ratioWall} |`);
  console.log(`\nmedian of ${result.rounds} rounds; goal: ratio ≥ 0.5`);
  if (HISTORY > 0) {
    console.log(`\nwith history (${result.history} BROKER_ACCEPTED + ${result.historyDead} DEAD rows next to the ${result.rows} PENDING): ${result.historyPerSecond} rows/s, ${result.historyRatio}× the same run without history (goal ≥ 0.9)`);
    for (const [i, r] of rounds.entries()) console.log(`round ${i + 1} with history: ${Math.round(r.history.rate)} rows/s (plain ${Math.round(r.fcctl)}), CPU seconds ${JSON.stringify(r.history.cpu)}`);
  }
  for (const [i, r] of rounds.entries()) console.log(`round ${i + 1}: CPU seconds (node = the publishing process, fcctl's with its start-up) during raw ${JSON.stringify(r.rawServerCpu)}, during fcctl ${JSON.stringify(r.fcctlServerCpu)}`);
}
