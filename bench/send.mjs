#!/usr/bin/env node
// `deliveries send` throughput against the raw amqplib publish-with-confirms rate on the same
// broker, same body size, same window, in the same script (issue 4: goal ≥ 0.5×).
//
//   npm run build && node bench/send.mjs [--rows 20000] [--bytes 1024] [--window 256] [--rounds 3] [--json]
//   BENCH_FCCTL_ARGS="--pipeline 3 --batch-size 250"   extra options for the fcctl run (tuning)
//   BENCH_NODE_ARGS                                  extra node arguments for it (e.g. --cpu-prof)
//
// Each round: reset the bench outbox to PENDING and purge the queue, publish --rows raw messages
// of the same size with amqplib (ConfirmChannel, mandatory, persistent, the same window), then run
// the real `bin/fcctl deliveries send` as a child process over --rows rows. fcctl's rate is taken
// from its own summary (claim → publish → confirm → adjudicate, process start excluded) and also
// reported by wall clock including Node start-up.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import { benchArgs, collect, ROOT, str } from './lib.mjs';

const args = benchArgs({ rows: str('20000'), bytes: str('1024'), window: str('256'), rounds: str('3') });
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
const env = { ...process.env, FCCTL_FC_DATABASE_URL: fcUrl, FCCTL_AMQP_URL: amqpUrl, FCCTL_APP_KEY: '100021', FCCTL_APP_CODE: 'demo-publisher' };

/** Runs fcctl; resolves its stdout, with `cpuSeconds` (user + system, from the shell's `times`). */
const fcctl = (argv) =>
  new Promise((resolve, reject) => {
    const node = [process.execPath, ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), BIN, '--json', ...argv];
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bench', ...node], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
const serverPids = () => Object.fromEntries(['mariadbd', 'beam.smp'].map((n) => { try { return [n, execFileSync('pgrep', ['-x', n], { encoding: 'utf8' }).trim().split('\n')[0]]; } catch { return [n, null]; } }));
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
  return { conn, ch };
}

async function resetRound(ch) {
  const db = await mysql.createConnection({ uri: fcUrl });
  await db.query("UPDATE answer_delivery SET state = 'PENDING', broker_accepted_at = NULL, next_retry_at = NULL, retry_count = 0, claim_owner = NULL, claim_expires_at = NULL");
  const [[{ size }]] = await db.query('SELECT ROUND(AVG(LENGTH(snapshot_json))) AS size FROM answer_delivery');
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

const { conn, ch } = await setup();
const rounds = [];
for (let r = 0; r < Number(args.rounds); r++) {
  const snapshotBytes = await resetRound(ch);
  // the envelope adds the 14 other members (~420 bytes) around the snapshot
  let c0 = cpuOf(pids);
  const self0 = process.cpuUsage();
  const raw = await rawRate(conn, snapshotBytes + 420);
  const rawServerCpu = cpuSince(c0);
  const selfCpu = process.cpuUsage(self0);
  rawServerCpu.node = Math.round((selfCpu.user + selfCpu.system) / 1e4) / 100;
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
  rounds.push({ raw, fcctl: s.rowsPerSecond, fcctlWall: ROWS / wall, snapshotBytes, rawServerCpu, fcctlServerCpu });
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
  for (const [i, r] of rounds.entries()) console.log(`round ${i + 1}: CPU seconds (node = the publishing process, fcctl's with its start-up) during raw ${JSON.stringify(r.rawServerCpu)}, during fcctl ${JSON.stringify(r.fcctlServerCpu)}`);
}
