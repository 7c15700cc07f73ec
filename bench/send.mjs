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
// Issue 20 adds a second same-run reference, `minimal`: raw amqplib plus the least SQL any relay must
// do, written plainly below (claim a batch with a lease in one short transaction, publish the
// stored snapshots with confirms, one guarded UPDATE per batch), two batches in flight as fcctl's
// default --pipeline 2; and CPU per row of each party (fcctl's own with its start-up taken out:
// the CPU of the same command on an empty outbox, run right after). It also shows what the second
// half of the rows cost alone (the full run less a `--max-rows` run over half of them): what a row
// costs once the process is warm, the first seconds' JIT compilation being paid once per run.
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
import {
  BATCH,
  benchArgs,
  collect,
  confirmWindowOf,
  insertOutboxRows,
  median,
  minimalRelay,
  ROOT,
  str,
} from './lib.mjs';

const args = benchArgs({
  rows: str('20000'),
  bytes: str('1024'),
  window: str('256'),
  rounds: str('3'),
  history: str('0'),
});
const HISTORY = Number(args.history);
const ROWS = Number(args.rows);
if (!Number.isInteger(ROWS) || ROWS < 1000)
  throw new Error('--rows: at least 1000 (the second half is measured on its own)');
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
const env = {
  ...process.env,
  FCCTL_FC_DATABASE_URL: fcUrl,
  FCCTL_AMQP_URL: amqpUrl,
  FCCTL_APP_KEY: '100021',
  FCCTL_APP_CODE: 'demo-publisher',
};

/** Runs fcctl; resolves its stdout, with `cpuSeconds` (user + system, from the shell's `times`). */
const fcctl = (argv, url = fcUrl) =>
  new Promise((resolve, reject) => {
    const node = [
      process.execPath,
      ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []),
      BIN,
      '--json',
      ...argv,
    ];
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bench', ...node], {
      env: { ...env, FCCTL_FC_DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const text = collect(child);
    child.on('error', reject);
    child.on('close', (code) => {
      const { out, err } = text;
      const lines = err.trimEnd().split('\n');
      const sec = (t) => {
        const m = /(\d+)m([\d.]+)s/.exec(t ?? '');
        return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
      };
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
const serverPids = () =>
  Object.fromEntries(
    ['mariadbd', 'beam.smp'].map((n) => {
      try {
        return [n, readFileSync(pidFile[n], 'utf8').trim()];
      } catch {
        /* not ours: look it up by name */
      }
      try {
        return [n, execFileSync('pgrep', ['-x', n], { encoding: 'utf8' }).trim().split('\n')[0]];
      } catch {
        return [n, null];
      }
    }),
  );
const cpuOf = (pids) =>
  Object.fromEntries(
    Object.entries(pids).map(([n, pid]) => {
      try {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        return [n, (Number(f[11]) + Number(f[12])) / 100]; // utime + stime, in clock ticks of 1/100 s
      } catch {
        return [n, NaN];
      }
    }),
  );
const cpuSince = (before) =>
  Object.fromEntries(Object.entries(cpuOf(pids)).map(([n, s]) => [n, Math.round((s - before[n]) * 100) / 100]));
const pids = serverPids();
const summaryOf = (out) =>
  String(out)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .find((l) => l.type === 'summary');

async function setup() {
  const admin = await mysql.createConnection({ uri: mysqlBase });
  await admin.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
  await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  await fcctl(['db', 'init', '--side', 'fc', '--dev']);
  await fcctl([
    'dev',
    'seed',
    '--answers',
    String(ROWS),
    '--consumer-keys',
    KEY,
    '--schools',
    '1',
    '--snapshot-bytes',
    args.bytes,
    '--no-grant-mix',
    '--no-sh',
  ]);
  const conn = await amqp.connect(amqpUrl);
  const ch = await conn.createChannel();
  await ch.assertExchange(EXCHANGE, 'topic', { durable: true });
  await ch.assertQueue('bench.send', { durable: true });
  await ch.bindQueue('bench.send', EXCHANGE, `fc.snapshot.v2.${KEY}.*`);
  if (HISTORY > 0) await seedHistory();
  return { conn, ch };
}

/**
 * The --history outbox: N BROKER_ACCEPTED and about N/40 DEAD rows of another consumer (same
 * snapshot size, a month old: `insertOutboxRows`), inserted first so they hold the low ids, then
 * the same seed as the plain one (`dev seed` wants an empty outbox: it seeds one, whose rows are
 * then appended after the history).
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
  await insertOutboxRows(db, total, { history: true, bytes: Number(args.bytes) });
  await db.query('RENAME TABLE answer_delivery TO bench_history');
  await db.query('CREATE TABLE answer_delivery LIKE bench_history');
  await fcctl(
    [
      'dev',
      'seed',
      '--answers',
      String(ROWS),
      '--consumer-keys',
      KEY,
      '--schools',
      '1',
      '--snapshot-bytes',
      args.bytes,
      '--no-grant-mix',
      '--no-sh',
    ],
    historyUrl,
  );
  const [cols] = await db.query(
    "SELECT GROUP_CONCAT(column_name ORDER BY ordinal_position) AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'answer_delivery' AND column_name <> 'id'",
  );
  await db.query(`INSERT INTO bench_history (${cols[0].c}) SELECT ${cols[0].c} FROM answer_delivery ORDER BY id`);
  await db.query('DROP TABLE answer_delivery');
  await db.query('RENAME TABLE bench_history TO answer_delivery');
  await db.query('ANALYZE TABLE answer_delivery');
  await db.end();
  if (!args.json)
    console.error(
      `history: ${total - Math.floor(total / 41)} BROKER_ACCEPTED + ${Math.floor(total / 41)} DEAD rows seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
}

/** Back to PENDING for a round: in the --history outbox only the bench consumer's rows. */
async function resetRound(ch, url = fcUrl) {
  const db = await mysql.createConnection({ uri: url });
  const only = url === fcUrl ? '' : ` WHERE consumer_app_key = '${KEY}'`;
  await db.query(
    `UPDATE answer_delivery SET state = 'PENDING', broker_accepted_at = NULL, next_retry_at = NULL, retry_count = 0, claim_owner = NULL, claim_expires_at = NULL${only}`,
  );
  const [[{ size }]] = await db.query(`SELECT ROUND(AVG(LENGTH(snapshot_json))) AS size FROM answer_delivery${only}`);
  await db.end();
  await quiesce();
  await ch.purgeQueue('bench.send');
  return Number(size);
}

/**
 * Waits (up to 20 s) until MariaDB is idle again (under 3 % of a core over 300 ms, twice running):
 * InnoDB purges the undo of the bench's reset in the background, and the next measured run must
 * not be charged for the bench's own bookkeeping.
 */
async function quiesce() {
  let quiet = 0;
  for (let i = 0; i < 66 && quiet < 2; i++) {
    const before = cpuOf({ mariadbd: pids.mariadbd }).mariadbd;
    await new Promise((r) => setTimeout(r, 300));
    quiet = cpuOf({ mariadbd: pids.mariadbd }).mariadbd - before < 0.01 ? quiet + 1 : 0;
  }
}

const confirmWindow = (ch) => confirmWindowOf(ch, WINDOW, EXCHANGE);
const minimalRate = async (conn, url) =>
  ROWS / (await minimalRelay(conn, url, { window: WINDOW, exchange: EXCHANGE })).seconds;

async function rawRate(conn, bodyBytes) {
  const ch = await conn.createConfirmChannel();
  const win = confirmWindow(ch);
  const body = Buffer.alloc(bodyBytes, 0x61);
  const t0 = performance.now();
  const all = [];
  for (let i = 0; i < ROWS; i++) {
    if (win.full) await win.slot();
    all.push(win.send(`fc.snapshot.v2.${KEY}.5`, body, `raw-${i}`));
  }
  await Promise.all(all);
  const seconds = (performance.now() - t0) / 1000;
  await ch.close();
  return ROWS / seconds;
}

const FCCTL_ARGS = [
  'deliveries',
  'send',
  '--window',
  String(WINDOW),
  ...(process.env.BENCH_FCCTL_ARGS ? process.env.BENCH_FCCTL_ARGS.split(' ') : []),
];
const perRowOf = (cpu, rows) =>
  Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Math.round((v / rows) * 1e6) / 1e3])); // ms per row
const perRow = (cpu) => perRowOf(cpu, ROWS);

/**
 * One `fcctl deliveries send` over the --rows PENDING rows of `url`: its rate (its own summary),
 * wall rate, every party's CPU, and fcctl's CPU without its start-up: the same command run again
 * at once on the now empty outbox (start-up, identity, probe, exit) is taken out.
 * With `half`, also the second half's cost: the outbox is reset and fcctl run again with
 * --max-rows of half the rows; the full run less this one is what the second half of the rows
 * cost, after the process has warmed up (V8 compiles its hot code during the first seconds).
 */
async function sendRound(url, half = false) {
  await ch.purgeQueue('bench.send');
  const full = await measuredSend(url, FCCTL_ARGS);
  const s = full.summary;
  if (s.accepted !== ROWS) throw new Error(`fcctl accepted ${s.accepted} of ${ROWS}`);
  const q = await ch.checkQueue('bench.send');
  if (q.messageCount !== ROWS) throw new Error(`queue holds ${q.messageCount}, expected ${ROWS}`);
  const empty = await fcctl(FCCTL_ARGS, url);
  if (summaryOf(empty).claimed !== 0) throw new Error('the start-up run found rows to send');
  const startupCpu = Math.round(empty.cpuSeconds * 100) / 100;
  const round = {
    rate: s.rowsPerSecond,
    wallRate: ROWS / full.wall,
    cpu: full.cpu,
    startupCpu,
    perRow: perRow({ ...full.cpu, node: full.cpu.node - startupCpu }),
  };
  if (!half) return round;
  await resetRound(ch, url);
  const halfRows = Math.floor(ROWS / 2);
  const first = await measuredSend(url, [...FCCTL_ARGS, '--max-rows', String(halfRows)]);
  if (first.summary.accepted !== halfRows || first.summary.claimed !== halfRows)
    throw new Error(
      `fcctl --max-rows ${halfRows} claimed ${first.summary.claimed}, accepted ${first.summary.accepted}`,
    );
  const q2 = await ch.checkQueue('bench.send');
  if (q2.messageCount !== halfRows)
    throw new Error(`queue holds ${q2.messageCount} after the half run, expected ${halfRows}`);
  // run times from the summaries, unrounded (seconds is rounded to 0.1 s)
  const seconds = (x) => x.summary.claimed / x.summary.rowsPerSecond;
  const dt = seconds(full) - seconds(first);
  // a difference of two noisy runs: refused rather than printed when it cannot mean anything
  if (!(dt > 0.1 * seconds(full)))
    throw new Error(
      `the second half took ${dt.toFixed(2)} s of the full run's ${seconds(full).toFixed(2)} s: too noisy to report; run again`,
    );
  const secondHalf = Object.fromEntries(Object.keys(full.cpu).map((k) => [k, Math.max(0, full.cpu[k] - first.cpu[k])]));
  return { ...round, secondHalf: { rate: (ROWS - halfRows) / dt, perRow: perRowOf(secondHalf, ROWS - halfRows) } };
}

/** One fcctl run over `url` with every party's CPU (fcctl's own from the shell's `times`). */
async function measuredSend(url, argv) {
  const c0 = cpuOf(pids);
  const t0 = performance.now();
  const sent = await fcctl(argv, url);
  const wall = (performance.now() - t0) / 1000;
  return { summary: summaryOf(sent), wall, cpu: { ...cpuSince(c0), node: Math.round(sent.cpuSeconds * 100) / 100 } };
}

/** Runs `fn` (an in-process reference); resolves its rate with every party's CPU (this process's as `node`). */
async function measured(fn) {
  const c0 = cpuOf(pids);
  const self0 = process.cpuUsage();
  const rate = await fn();
  const cpu = cpuSince(c0);
  const self = process.cpuUsage(self0);
  cpu.node = Math.round((self.user + self.system) / 1e4) / 100;
  return { rate, cpu, perRow: perRow(cpu) };
}

const { conn, ch } = await setup();
const rounds = [];
for (let r = 0; r < Number(args.rounds); r++) {
  if (HISTORY > 0) await resetRound(ch, historyUrl);
  const snapshotBytes = await resetRound(ch);
  // the envelope adds the 14 other members (~420 bytes) around the snapshot
  const raw = await measured(() => rawRate(conn, snapshotBytes + 420));
  await ch.purgeQueue('bench.send');
  const minimal = await measured(() => minimalRate(conn, fcUrl));
  const q = await ch.checkQueue('bench.send');
  if (q.messageCount !== ROWS) throw new Error(`the minimal relay left ${q.messageCount} messages, expected ${ROWS}`);
  await resetRound(ch);
  // --history: the history run goes first in every other round, so drift favours neither
  const historyRun = HISTORY > 0 && r % 2 === 1 ? await sendRound(historyUrl) : null;
  const plain = await sendRound(fcUrl, true);
  const history = HISTORY > 0 ? (historyRun ?? (await sendRound(historyUrl))) : null;
  rounds.push({ raw, minimal, fcctl: plain, snapshotBytes, history });
}
await ch.purgeQueue('bench.send');
await conn.close();

const med = (f) => median(rounds.map(f));
const r2 = (x) => Number(x.toFixed(2));
const medianPerRow = (pick) =>
  Object.fromEntries(
    ['node', 'mariadbd', 'beam.smp'].map((k) => [k, Number(med((r) => pick(r).perRow[k]).toFixed(3))]),
  );
const result = {
  bench: 'send',
  rows: ROWS,
  window: WINDOW,
  batchSize: BATCH,
  snapshotBytes: rounds[0].snapshotBytes,
  rawPerSecond: Math.round(med((r) => r.raw.rate)),
  minimalPerSecond: Math.round(med((r) => r.minimal.rate)),
  fcctlPerSecond: Math.round(med((r) => r.fcctl.rate)),
  fcctlWallPerSecond: Math.round(med((r) => r.fcctl.wallRate)),
  // each round's fcctl against the same round's references, then the median
  ratio: r2(med((r) => r.fcctl.rate / r.raw.rate)),
  ratioWall: r2(med((r) => r.fcctl.wallRate / r.raw.rate)),
  ratioToMinimal: r2(med((r) => r.fcctl.rate / r.minimal.rate)),
  minimalRatio: r2(med((r) => r.minimal.rate / r.raw.rate)),
  // CPU ms per row (fcctl's node: start-up taken out)
  cpuMsPerRow: {
    raw: medianPerRow((r) => r.raw),
    minimal: medianPerRow((r) => r.minimal),
    fcctl: medianPerRow((r) => r.fcctl),
  },
  fcctlStartupCpuSeconds: r2(med((r) => r.fcctl.startupCpu)),
  // the second half of the rows alone (full run less a --max-rows half run): fcctl warmed up
  secondHalf: {
    perSecond: Math.round(med((r) => r.fcctl.secondHalf.rate)),
    ratio: r2(med((r) => r.fcctl.secondHalf.rate / r.raw.rate)),
    ratioToMinimal: r2(med((r) => r.fcctl.secondHalf.rate / r.minimal.rate)),
    cpuMsPerRow: medianPerRow((r) => r.fcctl.secondHalf),
  },
  ...(HISTORY > 0
    ? {
        history: HISTORY,
        historyDead: Math.floor(HISTORY / 40),
        historyPerSecond: Math.round(med((r) => r.history.rate)),
        // per round against the same round's plain run, then the median (goal ≥ 0.9)
        historyRatio: r2(med((r) => r.history.rate / r.fcctl.rate)),
        historyCpuMsPerRow: medianPerRow((r) => r.history),
      }
    : {}),
  rounds: rounds.length,
  cpus: os.cpus().length,
  node: process.version,
};
if (args.json) console.log(JSON.stringify(result));
else {
  console.log(
    `| rows | window | snapshot bytes | raw amqplib msg/s | minimal relay rows/s | fcctl rows/s (in run) | fcctl rows/s (wall, incl. start) | ratio | ratio (wall) | ratio to minimal |`,
  );
  console.log(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  console.log(
    `| ${result.rows} | ${result.window} | ${result.snapshotBytes} | ${result.rawPerSecond} | ${result.minimalPerSecond} | ${result.fcctlPerSecond} | ${result.fcctlWallPerSecond} | ${result.ratio} | ${result.ratioWall} | ${result.ratioToMinimal} |`,
  );
  console.log(
    `\nmedian of ${result.rounds} rounds; goals (issue 20): ratio ≥ 0.7, ratio (wall) ≥ 0.6, ratio to minimal ≥ 0.9; the minimal relay itself: ${result.minimalRatio}× raw`,
  );
  console.log('\nCPU ms per row (median)   | node (publisher) | MariaDB | RabbitMQ');
  for (const k of ['raw', 'minimal', 'fcctl']) {
    const c = result.cpuMsPerRow[k];
    console.log(
      `${k.padEnd(26)}| ${c.node.toFixed(3).padStart(16)} | ${c.mariadbd.toFixed(3).padStart(7)} | ${c['beam.smp'].toFixed(3).padStart(8)}`,
    );
  }
  const h = result.secondHalf.cpuMsPerRow;
  console.log(
    `${'fcctl, 2nd half of rows'.padEnd(26)}| ${h.node.toFixed(3).padStart(16)} | ${h.mariadbd.toFixed(3).padStart(7)} | ${h['beam.smp'].toFixed(3).padStart(8)}`,
  );
  console.log(
    `(fcctl's node without its start-up, ${result.fcctlStartupCpuSeconds} s CPU; goals: fcctl ≤ 0.07, MariaDB ≤ 0.05)`,
  );
  console.log(
    `second half of the rows (full run less a --max-rows ${Math.floor(ROWS / 2)} run; fcctl warmed up): ${result.secondHalf.perSecond} rows/s, ${result.secondHalf.ratio}× raw, ${result.secondHalf.ratioToMinimal}× the minimal relay`,
  );
  if (HISTORY > 0) {
    console.log(
      `\nwith history (${result.history} BROKER_ACCEPTED + ${result.historyDead} DEAD rows next to the ${result.rows} PENDING): ${result.historyPerSecond} rows/s, ${result.historyRatio}× the same run without history (goal ≥ 0.9)`,
    );
    for (const [i, r] of rounds.entries())
      console.log(
        `round ${i + 1} with history: ${Math.round(r.history.rate)} rows/s (plain ${Math.round(r.fcctl.rate)}), CPU seconds ${JSON.stringify(r.history.cpu)}`,
      );
  }
  for (const [i, r] of rounds.entries())
    console.log(
      `round ${i + 1}: CPU seconds during raw ${JSON.stringify(r.raw.cpu)}, minimal ${JSON.stringify(r.minimal.cpu)}, fcctl ${JSON.stringify(r.fcctl.cpu)} (start-up ${r.fcctl.startupCpu})`,
    );
}
