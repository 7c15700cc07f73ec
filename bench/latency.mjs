#!/usr/bin/env node
// `deliveries send --follow` as a service (issue 27): commit-to-queue latency, the idle cost, the
// rate under saturation against a batch run, and memory over a long run, in one script against the
// local services.
//
//   npm run build && node bench/latency.mjs [--rate 200] [--seconds 30] [--cron-seconds 60] [--idle-seconds 60]
//                                           [--saturate 50000] [--memory-rows 1000000] [--json]
//
// 1. latency: a follow relay with default settings; rows committed one at a time (autocommit
//    INSERTs) at --rate rows/s for --seconds; a consumer on a queue bound to the consumer's routing
//    key records when each message arrives. Latency = arrival − the INSERT's return (its commit),
//    both on this process's clock. Goal p50 ≤ 150 ms, p99 ≤ 500 ms.
// 2. cron: the same rows committed at the same rate for --cron-seconds, then one batch run as cron
//    would start it at the minute: what the same rows wait without --follow (0 skips it).
// 3. idle: the follow relay on an empty outbox for --idle-seconds: CPU of the relay and of MariaDB
//    (from /proc) as a share of one core. Goal ≤ 2 %.
// 4. saturation: --saturate (50,000) rows PENDING at once; the follow relay's rows/s (from its
//    running state to the last row out) against a batch `deliveries send` over the same rows (goal
//    ≥ 1×) and against the send bench's minimal relay (bench/lib.mjs; goal ≥ 0.9×), same run.
// 5. memory: --memory-rows rows drained by one follow relay in chunks; its RSS and active handles
//    (its own /metrics: process_resident_memory_bytes, nodejs_active_handles_total) after 100,000
//    rows and at the end. Goal ≤ +10 %, no more handles (0 skips it).
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import amqp from 'amqplib';
import { benchArgs, collect, FCCTL, median, minimalRelay, scratch, str } from './lib.mjs';

const args = benchArgs({
  rate: str('200'),
  seconds: str('30'),
  'cron-seconds': str('60'),
  'idle-seconds': str('60'),
  saturate: str('50000'),
  'memory-rows': str('1000000'),
});
const RATE = Number(args.rate);
const { dbs, dir, admin, log, cleanup } = await scratch('latency', args);
const db = dbs[0];
const amqpUrl = process.env.FCCTL_TEST_AMQP_URL;
if (!amqpUrl) throw new Error('FCCTL_TEST_AMQP_URL is not set (eval "$(scripts/services.sh env)")');
const env = {
  ...process.env,
  FCCTL_FC_DATABASE_URL: db.url,
  FCCTL_AMQP_URL: amqpUrl,
  FCCTL_APP_KEY: '100021',
  FCCTL_APP_CODE: 'demo-publisher',
};
const KEY = `benchlat${process.pid}`;
const FORM = '0f0e0d0c-0000-4000-8000-00000000b001';
const { canonicalize } = await import('../dist/lib/canon/index.js');
const SNAPSHOT = JSON.stringify({
  schId: 1,
  appCode: 'demo',
  code: 'honor_apply',
  submitterId: 1001,
  subjectId: 7,
  status: 'processed',
  values: { name: '张三', score: 12.5 },
  answerNo: null,
  createTime: '2026-10-21T10:00:00',
  updateTime: null,
});
const HASH = canonicalize(SNAPSHOT).hash;

const now = () => performance.timeOrigin + performance.now();
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
};
const mariadbPid = () =>
  readFileSync(
    `${process.env.FCCTL_SERVICES_DIR ?? `${new URL('..', import.meta.url).pathname}.services`}/mariadb/mysqld.pid`,
    'utf8',
  ).trim();

async function run(cmd, extra = []) {
  const child = spawn(process.execPath, [FCCTL, '--json', ...cmd, ...extra], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = collect(child);
  const code = await new Promise((r) => child.on('close', r));
  if (code !== 0) throw new Error(`fcctl ${cmd.join(' ')} exited ${code}: ${text.err}`);
  return JSON.parse(text.out.trim().split('\n').at(-1));
}

function follow(extra = []) {
  const child = spawn(process.execPath, [FCCTL, '--json', 'deliveries', 'send', '--follow', ...extra], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = collect(child);
  const running = new Promise((resolve, reject) => {
    const t = setInterval(() => {
      if (text.out.includes('"state":"running"')) resolve(clearInterval(t));
    }, 20);
    child.on('close', (code) => reject(new Error(`the follow relay exited ${code}: ${text.err}`)));
  });
  const states = () =>
    text.out
      .split('\n')
      .filter((l) => l.includes('"type":"state"'))
      .map((l) => JSON.parse(l));
  return {
    child,
    running,
    /** how many state lines match so far */
    count: (match) => states().filter(match).length,
    /** resolves once `n` state lines match */
    waitFor: async (match, n) => {
      while (states().filter(match).length < n) await new Promise((r) => setTimeout(r, 10));
    },
    stop: () =>
      new Promise((resolve) => {
        child.on('close', () => resolve(JSON.parse(text.out.trim().split('\n').at(-1))));
        child.kill('SIGTERM');
      }),
  };
}

const insertSql = `INSERT INTO answer_delivery (event_id, event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, occurred_at, snapshot_json, create_time) VALUES (UUID(), 'created', '100021', ?, 1, 1, ?, 1, ?, 1, ?, NOW(), ?, NOW())`;
let answerSeq = 0;
const answerUuid = () => `00000000-0000-4000-8000-${String(++answerSeq).padStart(12, '0')}`;

/** Rows committed one by one at `rate`/s for `seconds`; resolves their commit times by answer uuid. */
async function produce(conn, rate, seconds) {
  const commits = new Map();
  const start = now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const uuid = answerUuid();
    await conn.query(insertSql, [KEY, FORM, uuid, HASH, SNAPSHOT]);
    commits.set(uuid, now());
  }
  return commits;
}

/** A consumer recording each message's arrival by answer uuid. */
async function consumer() {
  const conn = await amqp.connect(amqpUrl);
  const ch = await conn.createChannel();
  const queue = `bench.latency.${process.pid}`;
  await ch.assertExchange('fc.answer.delivery.v2', 'topic', { durable: true });
  await ch.assertQueue(queue, { durable: false, autoDelete: true });
  await ch.bindQueue(queue, 'fc.answer.delivery.v2', `fc.snapshot.v2.${KEY}.*`);
  const arrivals = new Map();
  await ch.consume(
    queue,
    (m) => {
      if (m) arrivals.set(JSON.parse(m.content.toString('utf8')).answerUuid, now());
    },
    { noAck: true },
  );
  return { arrivals, close: () => conn.close() };
}

const mysqlp = (await import('mysql2/promise')).default;
try {
  await admin.query(`CREATE DATABASE \`${db.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await run(['db', 'init', '--side', 'fc']);
  const conn = await mysqlp.createConnection({ uri: db.url });
  await conn.query(
    "INSERT INTO application_info (id, app_code, app_key, status) VALUES (42, 'demo-publisher', '100021', 1)",
  );
  await conn.query(
    'INSERT INTO form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, grant_version, read_allowed, subscribe_allowed, push_allowed, revoked, create_time) VALUES (?, 1, ?, 1, 1, 1, 1, 0, NOW())',
    [FORM, KEY],
  );
  const sink = await consumer();
  const results = { rate: RATE };

  // 1. latency
  const port = await freePort();
  const relay = follow(['--listen', `:${port}`]);
  await relay.running;
  log(`latency: ${RATE} rows/s for ${args.seconds} s …`);
  const commits = await produce(conn, RATE, Number(args.seconds));
  const until = now() + 10_000;
  while ([...commits.keys()].some((u) => !sink.arrivals.has(u)) && now() < until)
    await new Promise((r) => setTimeout(r, 50));
  const lat = [...commits].map(([u, t]) => (sink.arrivals.get(u) ?? NaN) - t);
  results.latency = {
    rows: lat.length,
    missing: lat.filter(Number.isNaN).length,
    p50Ms: Math.round(pct(lat, 50)),
    p99Ms: Math.round(pct(lat, 99)),
    maxMs: Math.round(Math.max(...lat)),
  };
  log(`  p50 ${results.latency.p50Ms} ms, p99 ${results.latency.p99Ms} ms (goals 150 / 500)`);

  // 3. idle (the relay from step 1, the outbox drained)
  const idleSeconds = Number(args['idle-seconds']);
  if (idleSeconds > 0) {
    log(`idle: ${idleSeconds} s on an empty outbox …`);
    const pids = { relay: relay.child.pid, mariadb: mariadbPid() };
    const before = { relay: cpuOf(pids.relay), mariadb: cpuOf(pids.mariadb), at: now() };
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const wall = (now() - before.at) / 1000;
    const relayPct = ((cpuOf(pids.relay) - before.relay) / wall) * 100;
    const mariaPct = ((cpuOf(pids.mariadb) - before.mariadb) / wall) * 100;
    results.idle = {
      seconds: Math.round(wall),
      relayPctOfCore: +relayPct.toFixed(2),
      mariadbPctOfCore: +mariaPct.toFixed(2),
      totalPctOfCore: +(relayPct + mariaPct).toFixed(2),
    };
    log(
      `  relay ${results.idle.relayPctOfCore} % + MariaDB ${results.idle.mariadbPctOfCore} % of one core (goal ≤ 2 % together)`,
    );
  }
  await relay.stop();

  // 2. cron
  const cronSeconds = Number(args['cron-seconds']);
  if (cronSeconds > 0) {
    log(`cron: ${RATE} rows/s for ${cronSeconds} s, then one batch run …`);
    sink.arrivals.clear();
    const cronCommits = await produce(conn, RATE, cronSeconds);
    await run(['deliveries', 'send']);
    const until2 = now() + 10_000;
    while ([...cronCommits.keys()].some((u) => !sink.arrivals.has(u)) && now() < until2)
      await new Promise((r) => setTimeout(r, 50));
    const cl = [...cronCommits].map(([u, t]) => (sink.arrivals.get(u) ?? NaN) - t);
    results.cron = { everySeconds: cronSeconds, p50Ms: Math.round(pct(cl, 50)), p99Ms: Math.round(pct(cl, 99)) };
    log(`  p50 ${results.cron.p50Ms} ms, p99 ${results.cron.p99Ms} ms`);
  }

  // 4. saturation: the same rows drained by a batch run and by a follow relay, alternating
  const N = Number(args.saturate);
  if (N > 0) {
    const seed = async (count) => {
      await conn.query("UPDATE answer_delivery SET state = 'DEAD' WHERE state <> 'DEAD'");
      for (let i = 0; i < count; i += 5000) {
        const rows = Array.from({ length: Math.min(5000, count - i) }, () => [
          'created',
          '100021',
          KEY,
          1,
          1,
          FORM,
          1,
          answerUuid(),
          1,
          HASH,
          SNAPSHOT,
        ]);
        await conn.query(
          `INSERT INTO answer_delivery (event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, snapshot_json, event_id, occurred_at, create_time) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UUID(), NOW(), NOW())').join(', ')}`,
          rows.flat(),
        );
      }
    };
    const rates = { batch: [], follow: [], minimal: [] };
    const amqpConn = await amqp.connect(amqpUrl);
    // One follow relay for every follow round, warmed up first (a service is a warm process): held by
    // its pause file while the rows are seeded, timed from its `running` line after the file goes.
    const pauseFile = join(dir, 'pause');
    const drained = async () => {
      // one cheap indexed probe every 50 ms (a COUNT over the backlog would load the database it measures)
      for (;;) {
        const [left] = await conn.query("SELECT 1 FROM answer_delivery WHERE state = 'PENDING' LIMIT 1");
        if (left.length === 0) return;
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    const warm = follow(['--pause-file', pauseFile]);
    await warm.running;
    await seed(10_000);
    await drained();
    // paused but for its own rounds: the batch run and the minimal relay have the rows to themselves
    const pauseWarm = async () => {
      writeFileSync(pauseFile, 'bench: not its round\n');
      await warm.waitFor((l) => l.state === 'paused', warm.count((l) => l.state === 'paused') + 1);
    };
    await pauseWarm();
    for (let round = 0; round < 2; round++) {
      for (const mode of round % 2 === 0 ? ['batch', 'follow', 'minimal'] : ['minimal', 'follow', 'batch']) {
        await seed(N);
        if (mode === 'batch') rates.batch.push((await run(['deliveries', 'send'])).rowsPerSecond);
        else if (mode === 'minimal')
          rates.minimal.push(
            N / (await minimalRelay(amqpConn, db.url, { window: 256, exchange: 'fc.answer.delivery.v2' })).seconds,
          );
        else {
          const resumed = warm.count((l) => l.state === 'running') + 1;
          rmSync(pauseFile);
          await warm.waitFor((l) => l.state === 'running', resumed);
          const t0 = now();
          await drained();
          rates.follow.push(N / ((now() - t0) / 1000));
          await pauseWarm();
        }
      }
    }
    await warm.stop();
    await amqpConn.close();
    results.saturation = {
      rows: N,
      batchRowsPerSecond: Math.round(median(rates.batch)),
      followRowsPerSecond: Math.round(median(rates.follow)),
      minimalRowsPerSecond: Math.round(median(rates.minimal)),
    };
    results.saturation.ratio = +(
      results.saturation.followRowsPerSecond / results.saturation.batchRowsPerSecond
    ).toFixed(2);
    results.saturation.ratioToMinimal = +(
      results.saturation.followRowsPerSecond / results.saturation.minimalRowsPerSecond
    ).toFixed(2);
    log(
      `saturation: follow ${results.saturation.followRowsPerSecond} rows/s vs batch ${results.saturation.batchRowsPerSecond} (${results.saturation.ratio}×) and the minimal relay ${results.saturation.minimalRowsPerSecond} (${results.saturation.ratioToMinimal}×)`,
    );
  }

  // 5. memory
  const M = Number(args['memory-rows']);
  if (M > 0) {
    await conn.query("UPDATE answer_delivery SET state = 'DEAD' WHERE state <> 'DEAD'");
    const mport = await freePort();
    const r = follow(['--listen', `:${mport}`]);
    await r.running;
    const scrape = async () => {
      const text = await (await fetch(`http://127.0.0.1:${mport}/metrics`)).text();
      const value = (name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
      return {
        rssMb: +(value('process_resident_memory_bytes') / 1048576).toFixed(1),
        heapUsedMb: +(value('nodejs_heap_size_used_bytes') / 1048576).toFixed(1),
        heapTotalMb: +(value('nodejs_heap_size_total_bytes') / 1048576).toFixed(1),
        externalMb: +(value('nodejs_external_memory_bytes') / 1048576).toFixed(1),
        handles: value('nodejs_active_handles_total'),
      };
    };
    const atStart = await scrape();
    const marks = {};
    let done = 0;
    log(`memory: ${M} rows through one follow relay …`);
    while (done < M) {
      const chunk = Math.min(50_000, M - done);
      for (let i = 0; i < chunk; i += 5000) {
        const rows = Array.from({ length: Math.min(5000, chunk - i) }, () => [
          'created',
          '100021',
          KEY,
          1,
          1,
          FORM,
          1,
          answerUuid(),
          1,
          HASH,
          SNAPSHOT,
        ]);
        await conn.query(
          `INSERT INTO answer_delivery (event_type, source_app_key, consumer_app_key, consumer_school_id, grant_version, form_uuid, form_version, answer_uuid, answer_revision, content_hash, snapshot_json, event_id, occurred_at, create_time) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UUID(), NOW(), NOW())').join(', ')}`,
          rows.flat(),
        );
      }
      for (;;) {
        const [[{ n }]] = await conn.query("SELECT COUNT(*) AS n FROM answer_delivery WHERE state = 'PENDING'");
        if (Number(n) === 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      done += chunk;
      // the delivered history moves out of the way, as a retention job would
      await conn.query("DELETE FROM answer_delivery WHERE state = 'BROKER_ACCEPTED'");
      if (done % 100_000 === 0 || done === M) {
        marks[done] = await scrape();
        log(`  ${done}: ${JSON.stringify(marks[done])}`);
      }
    }
    await r.stop();
    const first = marks[100_000] ?? atStart;
    const last = marks[M];
    results.memory = {
      rows: M,
      atStart,
      at100k: first,
      atEnd: last,
      rssGrowth: +(last.rssMb / first.rssMb).toFixed(3),
    };
    log(
      `  RSS ${first.rssMb} MB after 100k → ${last.rssMb} MB after ${M} (${results.memory.rssGrowth}×); handles ${atStart.handles} at start, ${last.handles} at the end`,
    );
  }
  await sink.close();
  await conn.end();
  if (args.json) console.log(JSON.stringify(results));
} finally {
  await cleanup();
}
