#!/usr/bin/env node
// Throughput of `fcctl apply-command resolve-unknown` against the flow-center stand-in with a fixed
// latency, on the local MariaDB (scripts/services.sh). The bound is concurrency / latency requests
// per second; a row costs one request when its instance exists (lookup) and two when it does not
// (lookup + apply), so rows/s is compared with bound / requests-per-row.
//
//   npm run build && eval "$(bash scripts/services.sh env)" && node bench/apply-command.mjs \
//     [--rows 2000] [--latency 20] [--concurrency 16] [--batch-size 100] [--mode found|not-found] [--rounds 3] [--json]
//     [--dry-run]        lookups only (what the writes cost, by difference)
//     [--history N]      a second database holding N DONE rows of the same app key (a month old) under
//                        the same rounds, alternating with the plain one (one moment's load on both):
//                        the cost of a long history, as historyRatio (issue 20; goal ≥ 0.9)
//     BENCH_TIMELINE=1   also print the stand-in's requests per 250 ms of each run (warm-up, stalls)
//     BENCH_NODE_ARGS    extra node arguments for the fcctl child (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
//     [--simulated]      no HTTP: the runner in this process with the flow center replaced by a timer of
//                        --latency ms (claims, decisions and writes on the real database): the runner's own ceiling
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import mysql from 'mysql2/promise';
import { benchArgs, flag, ROOT, str } from './lib.mjs';

const args = benchArgs({
  history: str('0'),
  rows: str('2000'),
  latency: str('20'),
  concurrency: str('16'),
  'batch-size': str('100'),
  mode: str('found'),
  rounds: str('3'),
  'dry-run': flag(),
  simulated: flag(),
});
const rows = Number(args.rows);
const history = Number(args.history);
const latency = Number(args.latency);
const concurrency = Number(args.concurrency);
const rounds = Number(args.rounds);
const mode = args.mode;
if (mode !== 'found' && mode !== 'not-found') throw new Error('--mode found|not-found');

const root = ROOT;
const base = process.env.FCCTL_TEST_MYSQL_URL;
if (!base) throw new Error('FCCTL_TEST_MYSQL_URL is not set: eval "$(bash scripts/services.sh env)"');
const APP = { key: '100021', secret: randomBytes(16).toString('hex') };

function run(cmd, argv, env, onFirstLine) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
      if (onFirstLine && out.includes('\n')) {
        onFirstLine(out.split('\n')[0], child);
        onFirstLine = null;
      }
    });
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const dbName = `fcctl_bench_${randomBytes(3).toString('hex')}_sh`;
const admin = await mysql.createConnection({ uri: base, multipleStatements: true });
await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
const shUrl = `${base.replace(/\/$/, '')}/${dbName}`;
const histName = `${dbName}_history`;
if (history > 0) await admin.query(`CREATE DATABASE \`${histName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);

let standIn;
const standInUrl = await new Promise((resolve, reject) => {
  run(
    process.execPath,
    ['fixtures/flow-center/server.mjs', '--port', '0', '--latency-ms', String(latency)],
    { PATH: process.env.PATH, FLOW_STANDIN_APPS: JSON.stringify({ [APP.key]: APP.secret }) },
    (line, child) => {
      standIn = child;
      resolve(line.trim());
    },
  ).then((r) => reject(new Error(`stand-in exited: ${r.err}`)));
});
const adminCall = (method, path, body) =>
  fetch(`${standInUrl}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) }).then((r) =>
    r.json(),
  );
const env = {
  PATH: process.env.PATH,
  FCCTL_SH_DATABASE_URL: shUrl,
  FCCTL_FLOW_URL: standInUrl,
  FCCTL_APP_KEY: APP.key,
  FCCTL_APP_SECRET: APP.secret,
};
/** The databases each round runs on: the plain one, and with --history the one behind the history. */
const targets = [{ name: dbName, url: shUrl, env, history: false }];
if (history > 0)
  targets.push({
    name: histName,
    url: `${base.replace(/\/$/, '')}/${histName}`,
    env: { ...env, FCCTL_SH_DATABASE_URL: `${base.replace(/\/$/, '')}/${histName}` },
    history: true,
  });

const results = [];
const perRow = mode === 'found' ? 1 : 2;
/** rows/s the transport alone reaches (second, warm pass), or null when simulated */
let reference = null;

/** One run of the runner in this process, the flow center replaced by a timer (every instance exists, owned, status 30). */
async function simulated(shUrl) {
  const { openDb } = await import('../dist/lib/db/connect.js');
  const { runResolve } = await import('../dist/lib/apply-command/resolve-unknown/run.js');
  const db = await openDb('SH database', shUrl);
  const flow = {
    lookup: async (bizType, bizId) => {
      await new Promise((r) => setTimeout(r, latency));
      const i = Number(bizId.slice(bizId.indexOf('-') + 1));
      if (mode === 'not-found') return { kind: 'not-found' };
      return {
        kind: 'found',
        instance: {
          instanceId: `FI-${bizId}`,
          bizType,
          bizId,
          status: 30,
          applyAppKey: APP.key,
          submitterId: String(1000 + i),
          flowGuid: `guid-${bizId}`,
          round: 1,
        },
      };
    },
    apply: async (req) => {
      await new Promise((r) => setTimeout(r, latency));
      return {
        kind: 'applied',
        branch: 'CREATED',
        instance: {
          instanceId: `FI-${req.bizId}`,
          bizType: req.bizType,
          bizId: req.bizId,
          status: 10,
          applyAppKey: req.applyAppKey,
          submitterId: req.submitterId,
          flowGuid: req.flowGuid,
          round: 1,
        },
      };
    },
  };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const summary = await runResolve(
    {
      batchSize: Number(args['batch-size']),
      concurrency,
      maxRows: Number.MAX_SAFE_INTEGER,
      maxSeconds: 3600,
      leaseSeconds: 300,
      pendingGraceSeconds: 600,
      retry: { baseSeconds: 20, capSeconds: 3600, maxRetries: 6 },
      dryRun: args['dry-run'],
      requestTimeoutMs: 5000,
      maxConsecutiveErrors: 20,
    },
    { db, flow, appKey: APP.key, signal: new AbortController().signal, clock: () => performance.now() },
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  await db.close();
  if (summary.done !== rows) throw new Error(`simulated: ${JSON.stringify(summary)}`);
  return {
    seconds: Math.round(seconds * 100) / 100,
    wall: seconds,
    rowsPerSecond: rows / seconds,
    lookups: summary.lookups,
    posts: summary.posts,
    fcctlCpuMsPerRow: Math.round(((cpu.user + cpu.system) / 1000 / rows) * 100) / 100,
    standInCpuMsPerRow: 0,
  };
}
try {
  for (const t of targets) {
    const init = await run(process.execPath, ['bin/fcctl', 'db', 'init', '--side', 'sh'], t.env);
    if (init.code !== 0) throw new Error(`db init: ${init.err}`);
  }
  const h0 = performance.now();
  // one INSERT … SELECT per 100,000 rows from MariaDB's Sequence engine; biz_type 'history' keeps them out of the rounds' DELETE
  for (let from = 1; from <= history; from += 100_000) {
    await admin.query(
      `INSERT INTO \`${histName}\`.flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, remote_status, create_time, update_time) ` +
        "SELECT 'history', seq, ?, 1, CONCAT('guid-h', seq), CONCAT('tok-h', seq), 1, 'DONE', 30, NOW() - INTERVAL 30 DAY, NOW() - INTERVAL 30 DAY + INTERVAL seq SECOND " +
        `FROM \`${histName}\`.seq_${from}_to_${Math.min(history, from + 99_999)}`,
      [APP.key],
    );
  }
  if (history > 0) {
    await admin.query(`ANALYZE TABLE \`${histName}\`.flow_apply_command`);
    // A production history is old and on disk: the rounds start once the seed's dirty pages are
    // written (at most 120 s), not while the server is still flushing them.
    for (let t = Date.now(); Date.now() - t < 120_000; await new Promise((r) => setTimeout(r, 1000))) {
      const [[{ Value: dirty }]] = await admin.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'");
      if (Number(dirty) < 1000) break;
    }
    if (!args.json)
      console.error(`history: ${history} DONE rows seeded in ${((performance.now() - h0) / 1000).toFixed(1)} s`);
  }
  if (!args.simulated) {
    // Reference in the same script, same stand-in, same moment: the same number of signed lookups
    // through FlowClient at the same concurrency, nothing else (no database, no runner). What the
    // HTTP round trips alone allow on this machine now; fcctl's figure is also given against it.
    // It runs first, so the stand-in (someone else's service in production) is warm for every
    // round: its JIT warm-up on these two shared cores is not fcctl's cost.
    const { FlowClient } = await import('../dist/lib/flow/client.js');
    const pLimit = (await import('p-limit')).default;
    const client = new FlowClient({
      baseUrl: standInUrl,
      appKey: APP.key,
      secret: APP.secret,
      timeoutMs: 10_000,
      maxSockets: concurrency,
    });
    const limit = pLimit(concurrency);
    for (let pass = 0; pass < 2; pass++) {
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: rows * perRow }, (_, i) => limit(() => client.lookup('honor_apply', `ref${pass}-${i}`))),
      );
      reference = (rows * perRow) / ((performance.now() - t0) / 1000) / perRow;
    }
    client.close();
  }
  for (let round = 1; round <= rounds; round++)
    for (const { name: dbName, url, env, history: behindHistory } of targets) {
      await admin.query(
        `DELETE FROM \`${dbName}\`.flow_apply_command WHERE biz_type <> 'history'; DELETE FROM \`${dbName}\`.service_apply`,
      );
      await adminCall('POST', '/__admin/reset');
      const prefix = `r${round}-`;
      const values = [];
      const instances = [];
      for (let i = 0; i < rows; i++) {
        const bizId = `${prefix}${i}`;
        values.push(['honor_apply', bizId, APP.key, 1000 + i, `guid-${bizId}`, `tok-${bizId}`, 1, 'UNKNOWN', 0]);
        if (mode === 'found')
          instances.push({
            bizType: 'honor_apply',
            bizId,
            status: i % 2 ? 30 : 40,
            applyAppKey: APP.key,
            submitterId: 1000 + i,
            flowGuid: `guid-${bizId}`,
          });
      }
      await admin.query(
        `INSERT INTO \`${dbName}\`.flow_apply_command (biz_type, biz_id, apply_app_key, submitter_id, flow_guid, request_token, attempt, state, retry_count, create_time) VALUES ?`,
        [values.map((v) => [...v, new Date()])],
      );
      await admin.query(`INSERT INTO \`${dbName}\`.service_apply (biz_type, biz_id) VALUES ?`, [
        values.map((v) => [v[0], v[1]]),
      ]);
      for (let i = 0; i < instances.length; i += 2000)
        await adminCall('POST', '/__admin/instances', instances.slice(i, i + 2000));
      if (args.simulated) {
        results.push({
          round,
          history: behindHistory,
          ...(await simulated(url)),
          load1: Math.round(os.loadavg()[0] * 10) / 10,
        });
        continue;
      }
      const cpuBefore = await adminCall('GET', '/__admin/stats');
      const t0 = performance.now();
      // `times` after the command: the CPU time fcctl itself used (user and system), for the per-row cost.
      const nodeArgs = [
        ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []),
        'bin/fcctl',
        '--json',
        'apply-command',
        'resolve-unknown',
        '--concurrency',
        String(concurrency),
        '--batch-size',
        args['batch-size'],
        ...(args['dry-run'] ? ['--dry-run'] : []),
      ];
      const r = await run(
        'bash',
        ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bench', process.execPath, ...nodeArgs],
        env,
      );
      const wall = (performance.now() - t0) / 1000;
      const cpuAfter = await adminCall('GET', '/__admin/stats');
      const sec = (t) => {
        const m = /(\d+)m([\d.]+)s/.exec(t);
        return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
      };
      const childTimes = r.err.trim().split('\n').at(-1).trim().split(/\s+/);
      const fcctlCpuMs = (sec(childTimes[0]) + sec(childTimes[1])) * 1000;
      const standInCpuMs = cpuAfter.cpuUserMs + cpuAfter.cpuSystemMs - cpuBefore.cpuUserMs - cpuBefore.cpuSystemMs;
      const load = os.loadavg()[0];
      const summary = r.out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .find((l) => l.type === 'summary');
      if (process.env.BENCH_TIMELINE) {
        const log = await adminCall('GET', '/__admin/log');
        const t = log.map((e) => e.at);
        const start = Math.min(...t);
        const buckets = [];
        for (const x of t) buckets[Math.floor((x - start) / 250)] = (buckets[Math.floor((x - start) / 250)] ?? 0) + 1;
        console.error(`requests per 250 ms: ${[...buckets].map((b) => b ?? 0).join(' ')}`);
      }
      if (!summary || summary.done !== rows) throw new Error(`round ${round}: ${r.err || JSON.stringify(summary)}`);
      // rowsPerSecond is computed from the unrounded run time (summary.seconds is rounded to 0.1 s).
      results.push({
        round,
        history: behindHistory,
        seconds: Math.round((rows / summary.rowsPerSecond) * 100) / 100,
        wall,
        rowsPerSecond: summary.rowsPerSecond,
        lookups: summary.lookups,
        posts: summary.posts,
        fcctlCpuMsPerRow: Math.round((fcctlCpuMs / rows) * 100) / 100,
        standInCpuMsPerRow: Math.round((standInCpuMs / rows) * 100) / 100,
        load1: Math.round(load * 10) / 10,
      });
    }
} finally {
  standIn?.kill('SIGTERM');
  await admin.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
  await admin.query(`DROP DATABASE IF EXISTS \`${histName}\``);
  await admin.end();
}

const bound = concurrency / (latency / 1000) / perRow;
const medianOf = (rs) => [...rs].sort((a, b) => a.rowsPerSecond - b.rowsPerSecond)[Math.floor(rs.length / 2)];
const median = medianOf(results.filter((r) => !r.history));
const historyMedian = history > 0 ? medianOf(results.filter((r) => r.history)) : null;
const report = {
  mode,
  simulated: args.simulated,
  rows,
  history,
  latencyMs: latency,
  concurrency,
  batchSize: Number(args['batch-size']),
  requestsPerRow: perRow,
  boundRowsPerSecond: bound,
  medianRowsPerSecond: Math.round(median.rowsPerSecond),
  ratio: Math.round((median.rowsPerSecond / bound) * 100) / 100,
  referenceRowsPerSecond: reference === null ? null : Math.round(reference),
  ratioToReference: reference === null ? null : Math.round((median.rowsPerSecond / reference) * 100) / 100,
  historyMedianRowsPerSecond: historyMedian && Math.round(historyMedian.rowsPerSecond),
  historyRatio: historyMedian && Math.round((historyMedian.rowsPerSecond / median.rowsPerSecond) * 100) / 100,
  rounds: results.map((r) => ({
    ...r,
    rowsPerSecond: Math.round(r.rowsPerSecond),
    wall: Math.round(r.wall * 100) / 100,
  })),
  node: process.version,
  cpus: os.cpus().length,
  cpu: os.cpus()[0]?.model,
};
if (args.json) console.log(JSON.stringify(report));
else {
  console.log(
    `resolve-unknown${args.simulated ? ' (simulated flow center, no HTTP)' : ''}, ${mode}: ${rows} rows${history ? ` (rounds alternating with a database behind ${history} DONE rows)` : ''}, latency ${latency} ms, concurrency ${concurrency} → bound ${Math.round(bound)} rows/s`,
  );
  for (const r of report.rounds) {
    console.log(
      `  round ${r.round}${r.history ? ' (history)' : ''}: ${r.seconds} s in the command (${r.wall} s wall), ${r.rowsPerSecond} rows/s, ${r.lookups} lookups, ${r.posts} posts; CPU per row: fcctl ${r.fcctlCpuMsPerRow} ms${args.simulated ? ' (the runner in this process)' : ` (whole process, startup included), stand-in ${r.standInCpuMsPerRow} ms`}; load ${r.load1} on ${report.cpus} CPUs`,
    );
  }
  console.log(`  median ${report.medianRowsPerSecond} rows/s = ${report.ratio} × bound (goal ≥ 0.8)`);
  if (historyMedian)
    console.log(
      `  behind ${history} DONE rows: median ${report.historyMedianRowsPerSecond} rows/s = ${report.historyRatio} × the plain database's (goal ≥ 0.9)`,
    );
  if (reference !== null)
    console.log(
      `  reference, same script: FlowClient lookups alone (no database) ${report.referenceRowsPerSecond} rows/s = ${report.referenceRowsPerSecond && Math.round((report.referenceRowsPerSecond / bound) * 100) / 100} × bound; fcctl = ${report.ratioToReference} × the reference`,
    );
}
