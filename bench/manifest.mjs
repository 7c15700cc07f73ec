#!/usr/bin/env node
// `fcctl manifest scan` and `fcctl reconcile diff` at scale, as real child processes.
//
//   npm run build && node bench/manifest.mjs [--rows 500000] [--first 100000] [--size 500] [--rounds 3] [--diff-rows 1000000] [--json] [--keep]
//
// 1. A fresh SH database gets --first projection rows (one school, one form; multi-row INSERTs).
//    Against it, in the same run, two child processes read the same rows in the same order:
//    - baseline: one streaming `SELECT … ORDER BY answer_uuid` of the manifest's columns (mysql2
//      `query().stream()`), each row written as its manifest line to a file — no paging, no fsync;
//    - `fcctl manifest scan --side sh --size N`: keyset pages, every page fsynced, a checkpoint
//      (temp file, fsync, rename) after each.
//    Both outputs must be byte-identical. --rounds rounds, interleaved; reported: the median rows/s
//    of each (wall clock of the child, start-up included), the median ratio (goal ≥ 0.7), and the
//    scan's highest peak RSS (VmHWM).
// 2. The table grows to --rows and the same two runs repeat: the scan's peak RSS must not grow more
//    than 20 % from the first size to the second (the scan holds one page, never the table).
// 3. Two --diff-rows manifests (FC and SH, about 6 % drift spread over every category) with their
//    checkpoints are generated without a database, and `fcctl reconcile diff` joins them: rows/s
//    (answers joined per second) and peak RSS.
//
// Needs FCCTL_TEST_MYSQL_URL (a user that may create databases); when unset, the one
// `scripts/services.sh env` prints for the local services.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, readFileSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, collect, FCCTL as fcctl, flag, ROOT as root, scratch, str, median } from './lib.mjs';

const SCHOOL = '5';
const FORM = '0be0c0de-0000-4000-8000-00000000f0a1';

const args = benchArgs({
  rows: str('500000'),
  first: str('100000'),
  size: str('500'),
  'diff-rows': str('1000000'),
  rounds: str('3'),
  dir: str(os.tmpdir()),
  keep: flag(),
  // internal: the baseline child
  baseline: str(),
  out: str(),
});

const { shManifestRow } = await import('../dist/lib/manifest/page.js');
const { formatManifestLine } = await import('../dist/lib/manifest/row.js');
const { SH_MANIFEST_COLUMNS } = await import('../dist/lib/manifest/sql.js');

// ---------------------------------------------------------------- the baseline child
if (args.baseline) {
  const mysql = (await import('mysql2')).default;
  const u = new URL(args.baseline);
  const conn = mysql.createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    charset: 'utf8mb4_bin',
  });
  const out = createWriteStream(args.out);
  const stream = conn
    .query(
      `SELECT ${SH_MANIFEST_COLUMNS} FROM fc_answer_projection FORCE INDEX (idx_projection_manifest) WHERE sch_id = ? AND form_uuid = ? ORDER BY answer_uuid`,
      [BigInt(SCHOOL), FORM],
    )
    .stream({ highWaterMark: 1000 });
  let rows = 0;
  for await (const r of stream) {
    rows++;
    if (!out.write(formatManifestLine(shManifestRow(r)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  conn.end();
  process.stdout.write(`${rows}\n`);
  process.exit(0);
}

// ---------------------------------------------------------------- helpers
const { dbs, dir, admin, log, cleanup } = await scratch('manifest', args);
const { name: dbName, url: dbUrl } = dbs[0];

/** Runs a child to its end; samples its peak RSS (VmHWM) from /proc. */
function run(argv, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let hwmKb = 0;
    const sample = () => {
      try {
        hwmKb = Math.max(
          hwmKb,
          Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0),
        );
      } catch {
        /* exited */
      }
    };
    const timer = setInterval(sample, 20);
    const text = collect(child);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(timer);
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) reject(new Error(`${argv.slice(1).join(' ')} exited ${code}: ${text.err.trim()}`));
      else resolve({ seconds, peakRssMb: hwmKb / 1024, stdout: text.out, stderr: text.err });
    });
  });
}

const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');
const uuid = (i) => {
  const h = createHash('sha256').update(`bench-manifest-${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

async function fill(from, to) {
  for (let i = from; i < to; i += 5000) {
    const n = Math.min(5000, to - i);
    const params = [];
    const values = [];
    for (let k = 0; k < n; k++) {
      const id = uuid(i + k);
      values.push("(?, ?, ?, 1, ?, ?, ?, '{}', ?)");
      params.push(
        id,
        SCHOOL,
        FORM,
        1 + ((i + k) % 7),
        createHash('sha256').update(id).digest('hex'),
        (i + k) % 20 === 0 ? 1 : 0,
        (i + k) % 50 === 0 ? null : '2026-10-01 08:00:00',
      );
    }
    await admin.query(
      `INSERT INTO \`${dbName}\`.fc_answer_projection (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, create_time) VALUES ${values.join(', ')}`,
      params,
    );
  }
}

/** --rounds rounds of baseline then scan, interleaved (the machine may be shared): medians, and the scan's highest peak RSS. */
async function scanRound(rows) {
  const rounds = [];
  for (let i = 0; i < Number(args.rounds); i++) {
    const baseOut = join(dir, `baseline-${rows}.jsonl`);
    const scanOut = join(dir, `scan-${rows}.jsonl`);
    const baseline = await run([join(root, 'bench/manifest.mjs'), '--baseline', dbUrl, '--out', baseOut]);
    const scan = await run(
      [
        fcctl,
        '--json',
        'manifest',
        'scan',
        '--side',
        'sh',
        '--school',
        SCHOOL,
        '--form',
        FORM,
        '--size',
        args.size,
        '--out',
        scanOut,
      ],
      { FCCTL_SH_DATABASE_URL: dbUrl },
    );
    if (sha256(baseOut) !== sha256(scanOut)) throw new Error(`scan output differs from the baseline at ${rows} rows`);
    const summary = JSON.parse(scan.stdout.trim().split('\n').at(-1));
    if (summary.rows !== rows) throw new Error(`scan wrote ${summary.rows} rows, expected ${rows}`);
    rounds.push({
      baselineSeconds: baseline.seconds,
      scanSeconds: scan.seconds,
      // the command's own time, from connected to summary (process start-up and module loading excluded)
      scanCommandSeconds: summary.seconds,
      ratio: baseline.seconds / scan.seconds,
      scanPeakRssMb: scan.peakRssMb,
      bytes: statSync(scanOut).size,
      pages: summary.pages,
    });
    rmSync(baseOut);
    rmSync(scanOut);
    rmSync(join(dir, `scan-${rows}.checkpoint.json`));
  }
  const r = {
    rows,
    bytes: rounds[0].bytes,
    pages: rounds[0].pages,
    rounds,
    baselineRowsPerSecond: rows / median(rounds.map((x) => x.baselineSeconds)),
    scanRowsPerSecond: rows / median(rounds.map((x) => x.scanSeconds)),
    ratio: median(rounds.map((x) => x.ratio)),
    scanPeakRssMb: Math.max(...rounds.map((x) => x.scanPeakRssMb)),
    identical: true,
  };
  log(
    `  ${rows} rows (${(r.bytes / 1048576).toFixed(0)} MB, ${r.pages} pages), median of ${rounds.length}: baseline ${r.baselineRowsPerSecond.toFixed(0)} rows/s, scan ${r.scanRowsPerSecond.toFixed(0)} rows/s → ${r.ratio.toFixed(2)}× (rounds ${rounds.map((x) => x.ratio.toFixed(2)).join(', ')}); scan peak RSS ${r.scanPeakRssMb.toFixed(1)} MB (rounds ${rounds.map((x) => x.scanPeakRssMb.toFixed(1)).join(', ')}); byte-identical outputs`,
  );
  return r;
}

async function diffRound(n) {
  const { paramsDigest, writeCheckpoint, CHECKPOINT_FORMAT } = await import('../dist/lib/manifest/checkpoint.js');
  // Keys in order: the i-th key is a zero-padded counter dressed as a uuid, so both files are sorted.
  const key = (i) => `${String(i).padStart(8, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const hash = (i, rev) => createHash('sha256').update(`${i}:${rev}`).digest('hex');
  const write = async (side, rowOf) => {
    const file = join(dir, `${side}.jsonl`);
    const out = createWriteStream(file);
    const digest = createHash('sha256');
    let rows = 0;
    let bytes = 0;
    let chunk = '';
    for (let i = 0; i < n; i++) {
      const r = rowOf(i);
      if (r === null) continue;
      chunk += formatManifestLine(r);
      rows++;
      if (chunk.length > 1 << 20) {
        const b = Buffer.from(chunk);
        digest.update(b);
        bytes += b.length;
        if (!out.write(b)) await once(out, 'drain');
        chunk = '';
      }
    }
    const b = Buffer.from(chunk);
    digest.update(b);
    bytes += b.length;
    out.end(b);
    await once(out, 'finish');
    const params = { side, database: 'bench:3306/none', schId: SCHOOL, formUuid: FORM, shard: null, out: file };
    const t = new Date().toISOString();
    await writeCheckpoint(join(dir, `${side}.checkpoint.json`), {
      format: CHECKPOINT_FORMAT,
      params,
      paramsDigest: paramsDigest(params),
      size: 500,
      cursor: null,
      pages: 1,
      rows,
      outputBytes: bytes,
      sha256: digest.digest('hex'),
      completed: true,
      startedAt: t,
      updatedAt: t,
      completedAt: t,
      dbStartedAt: '2026-11-30 00:00:01',
    });
    return { file, rows, bytes };
  };
  const base = (i, rev) => ({
    answerUuid: key(i),
    revision: String(rev),
    contentHash: hash(i, rev),
    isDeleted: false,
    schId: SCHOOL,
    createTime: '2026-10-01 08:00:00',
  });
  // drift by i % 100: 0 missing locally, 1 stale, 2 same revision other hash, 3 local ahead, 4 absent at FC (candidate),
  // 5 absent at FC created after the start, 6 absent at FC with null create time, 7 retired; the rest in sync.
  const fc = await write('fc', (i) => (i % 100 >= 4 && i % 100 <= 7 ? null : base(i, 2)));
  const sh = await write('sh', (i) => {
    const m = i % 100;
    if (m === 0) return null;
    const r = { ...base(i, m === 1 ? 1 : m === 3 ? 3 : 2), retiredAt: null };
    if (m === 2) r.contentHash = hash(i, 'other');
    if (m === 5) r.createTime = '2099-01-01 00:00:00';
    if (m === 6) r.createTime = null;
    if (m === 7) r.retiredAt = '2026-11-01 00:00:00';
    return r;
  });
  const outDir = join(dir, 'diff-out');
  const res = await run([
    fcctl,
    '--json',
    'reconcile',
    'diff',
    '--fc',
    fc.file,
    '--sh',
    sh.file,
    '--task-start',
    '2026-11-30 00:00:00',
    '--out-dir',
    outDir,
  ]);
  const summary = JSON.parse(readFileSync(join(outDir, 'summary.json'), 'utf8'));
  const answers = Object.values(summary.counts).reduce((a, b) => a + b, 0);
  if (answers !== n) throw new Error(`diff joined ${answers} answers, expected ${n}`);
  const r = {
    answers,
    fcRows: fc.rows,
    shRows: sh.rows,
    inputMb: (fc.bytes + sh.bytes) / 1024 / 1024,
    seconds: res.seconds,
    answersPerSecond: answers / res.seconds,
    peakRssMb: res.peakRssMb,
    differences: summary.differences,
    counts: summary.counts,
  };
  log(
    `  ${n} answers (${r.inputMb.toFixed(0)} MB of manifests, ${r.differences} differences): ${r.answersPerSecond.toFixed(0)} answers/s, ${r.seconds.toFixed(1)} s, peak RSS ${r.peakRssMb.toFixed(1)} MB`,
  );
  return r;
}

// ---------------------------------------------------------------- main
let exitCode = 0;
try {
  const first = Number(args.first);
  const total = Number(args.rows);
  await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await run([fcctl, 'db', 'init', '--side', 'sh'], { FCCTL_SH_DATABASE_URL: dbUrl });
  log(
    `manifest scan vs one streaming SELECT (page size ${args.size}; node ${process.version}, ${os.cpus().length} CPUs)`,
  );
  let t = performance.now();
  await fill(0, first);
  log(`  filled ${first} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const small = await scanRound(first);
  t = performance.now();
  await fill(first, total);
  log(`  filled up to ${total} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const large = await scanRound(total);
  const rssGrowth = large.scanPeakRssMb / small.scanPeakRssMb - 1;
  log(
    `  scan peak RSS ${small.scanPeakRssMb.toFixed(1)} MB at ${first} rows → ${large.scanPeakRssMb.toFixed(1)} MB at ${total} rows: ${(rssGrowth * 100).toFixed(1)} % (goal ≤ 20 %)`,
  );
  log(`  throughput ratio at ${total} rows: ${large.ratio.toFixed(2)}× of the streaming SELECT (goal ≥ 0.7×)`);
  log(`reconcile diff of two ${args['diff-rows']}-row manifests`);
  const diff = await diffRound(Number(args['diff-rows']));
  const result = {
    node: process.version,
    cpus: os.cpus().length,
    pageSize: Number(args.size),
    scan: [small, large],
    rssGrowth,
    ratioGoalMet: large.ratio >= 0.7,
    rssGoalMet: rssGrowth <= 0.2,
    diff,
  };
  if (args.json) console.log(JSON.stringify(result));
} catch (err) {
  console.error(`bench/manifest: ${err.message}`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
