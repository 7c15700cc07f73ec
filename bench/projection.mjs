#!/usr/bin/env node
// `fcctl projection repair-authoritative --plan` at scale, as a real child process.
//
//   npm run build && eval "$(scripts/services.sh env)" && node bench/projection.mjs [--rows 10000] [--concurrency 8,4,1] [--json] [--keep]
//
// A fresh FC/SH database pair gets --rows answers (one school, one form, one active grant) and a
// projection drifted in the three repair categories (a third each: missing, one revision behind,
// same revision with another hash), and the matching repair-plan.jsonl. For each concurrency the
// projection and the audit table are reset to that drift and the built binary runs
// `projection repair-authoritative --plan … --execute --concurrency N`; reported: wall time
// (process start-up included), rows/s, and that every line came out APPLIED with one audit row and
// one evidence line. A dry run (--concurrency 8) is timed too.
//
// Needs FCCTL_TEST_MYSQL_URL (a user that may create databases), as `scripts/services.sh env` sets.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchArgs, collect, FCCTL as fcctl, flag, str } from './lib.mjs';

const args = benchArgs({ rows: str('10000'), concurrency: str('8,4,1'), keep: flag() });
const ROWS = Number(args.rows);
const CONCURRENCY = args.concurrency.split(',').map(Number);
const FORM = '0be0c0de-0000-4000-8000-00000000f0b2';
const KEY = '100100';

const adminUrl = process.env.FCCTL_TEST_MYSQL_URL;
if (!adminUrl) {
  console.error('bench/projection: FCCTL_TEST_MYSQL_URL is not set (eval "$(scripts/services.sh env)")');
  process.exit(2);
}
const { buildAnswerSnapshot } = await import('../dist/lib/answers/snapshot.js');
const mysql = (await import('mysql2/promise')).default;
const base = adminUrl.replace(/\/$/, '');
const id = `bench_${process.pid}_${randomBytes(3).toString('hex')}`;
const fcName = `fcctl_${id}_fc`;
const shName = `fcctl_${id}_sh`;
const admin = await mysql.createConnection({
  uri: base,
  dateStrings: true,
  supportBigNumbers: true,
  bigNumberStrings: true,
  multipleStatements: true,
});
const dir = mkdtempSync(join(os.tmpdir(), 'fcctl-bench-repair-'));
const env = { ...process.env, FCCTL_FC_DATABASE_URL: `${base}/${fcName}`, FCCTL_SH_DATABASE_URL: `${base}/${shName}` };

function run(argv) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [fcctl, ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const text = collect(child);
    child.on('error', reject);
    child.on('exit', (code) => {
      const ms = performance.now() - t0;
      resolve({ code, ms, out: text.out, err: text.err });
    });
  });
}
const uuid = (i) => {
  const h = createHash('sha256').update(`bench-answer-${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

try {
  await admin.query(
    `CREATE DATABASE \`${fcName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; CREATE DATABASE \`${shName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
  );
  const init = await run(['db', 'init', '--side', 'all']);
  if (init.code !== 0) throw new Error(`db init: ${init.err}`);
  await admin.query(
    `INSERT INTO \`${fcName}\`.form_consumer_grant (form_uuid, consumer_school_id, consumer_app_key, grant_version, create_time) VALUES (?, 5, ?, 3, NOW())`,
    [FORM, KEY],
  );

  // FC answers (revision 3) and the drifted projection, kept in a template table to reset from.
  const answers = [];
  const projection = [];
  const plan = [];
  for (let i = 0; i < ROWS; i++) {
    const a = {
      answer_uuid: uuid(i),
      sch_id: '5',
      app_code: 'demo-publisher',
      code: 'honor_apply',
      submitter_id: String(100000 + i),
      subject_id: null,
      status: 'processed',
      values_json: `{"name":"张三${i}","amount":12.50,"items":[1,2,3],"note":"${'x'.repeat(400)}"}`,
      answer_no: null,
      create_time: '2026-10-21 08:00:00',
      update_time: '2026-10-22 09:30:00',
    };
    const snap = buildAnswerSnapshot(a);
    answers.push([
      a.answer_uuid,
      FORM,
      4,
      5n,
      a.app_code,
      a.code,
      BigInt(a.submitter_id),
      a.status,
      a.values_json,
      a.create_time,
      a.update_time,
      0,
      3,
    ]);
    const kind = i % 3; // 0 missing, 1 stale, 2 hash conflict
    const localHash = createHash('sha256').update(`local-${i}`).digest('hex');
    if (kind !== 0)
      projection.push([
        a.answer_uuid,
        5n,
        FORM,
        4,
        kind === 1 ? 2 : 3,
        localHash,
        0,
        '{"local":true}',
        'LINKED',
        `svchall-${i}`,
        i,
        'flow-x',
        '{"ext":1}',
        kind === 2 ? 1 : 0,
        5,
        '2026-10-21 08:00:07',
      ]);
    plan.push(
      JSON.stringify({
        category: ['MISSING_LOCAL', 'STALE_LOCAL', 'HASH_CONFLICT'][kind],
        answerUuid: a.answer_uuid,
        schId: '5',
        formUuid: FORM,
        expectedRevision: kind === 0 ? null : String(kind === 1 ? 2 : 3),
        expectedHash: kind === 0 ? null : localHash,
        expectedIsDeleted: kind === 0 ? null : false,
        fcRevision: '3',
        fcContentHash: snap.contentHash,
        fcIsDeleted: false,
      }),
    );
  }
  for (let i = 0; i < answers.length; i += 2000) {
    await admin.query(
      `INSERT INTO \`${fcName}\`.answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, status, values_json, create_time, update_time, is_deleted, answer_revision) VALUES ?`,
      [answers.slice(i, i + 2000)],
    );
  }
  await admin.query(`CREATE TABLE \`${shName}\`.bench_template LIKE \`${shName}\`.fc_answer_projection`);
  for (let i = 0; i < projection.length; i += 2000) {
    await admin.query(
      `INSERT INTO \`${shName}\`.bench_template (answer_uuid, sch_id, form_uuid, form_version, answer_revision, content_hash, is_deleted, snapshot_json, link_state, intent_id, apply_id, flow_guid, biz_ext_json, conflict_flag, projection_version, create_time) VALUES ?`,
      [projection.slice(i, i + 2000)],
    );
  }
  const planFile = join(dir, 'repair-plan.jsonl');
  writeFileSync(planFile, `${plan.join('\n')}\n`);
  const reset = async () => {
    await admin.query(
      `TRUNCATE TABLE \`${shName}\`.fc_answer_projection; TRUNCATE TABLE \`${shName}\`.fc_reconcile_audit; INSERT INTO \`${shName}\`.fc_answer_projection SELECT * FROM \`${shName}\`.bench_template`,
    );
    rmSync(join(dir, 'repair-evidence.jsonl'), { force: true });
  };

  const results = [];
  const measure = async (label, concurrency, execute) => {
    await reset();
    const r = await run([
      '--json',
      'projection',
      'repair-authoritative',
      '--consumer',
      KEY,
      '--proof-id',
      'bench',
      '--plan',
      planFile,
      '--concurrency',
      String(concurrency),
      ...(execute ? ['--execute'] : []),
    ]);
    const summary = JSON.parse(r.out.trim().split('\n').at(-1));
    const [[audit]] = await admin.query(`SELECT COUNT(*) AS n FROM \`${shName}\`.fc_reconcile_audit`);
    const evidence = readFileSync(join(dir, 'repair-evidence.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"type":"decision"')).length;
    // a dry run reports WOULD_APPLY where an executed run reports APPLIED
    const applied = summary.byResult[execute ? 'APPLIED' : 'WOULD_APPLY'];
    const ok = r.code === 0 && applied === ROWS && Number(audit.n) === (execute ? ROWS : 0) && evidence === ROWS;
    const row = {
      label,
      concurrency,
      execute,
      rows: ROWS,
      seconds: +(r.ms / 1000).toFixed(2),
      rowsPerSecond: Math.round(ROWS / (r.ms / 1000)),
      exit: r.code,
      applied,
      audit: Number(audit.n),
      evidence,
      ok,
    };
    results.push(row);
    if (!args.json)
      console.log(
        `${label.padEnd(28)} concurrency ${String(concurrency).padStart(2)}  ${row.seconds.toFixed(2).padStart(7)} s  ${String(row.rowsPerSecond).padStart(6)} rows/s  APPLIED ${row.applied}  audit ${row.audit}  evidence decisions ${row.evidence}  ${ok ? 'ok' : `NOT OK ${r.err}`}`,
      );
  };
  if (!args.json)
    console.log(
      `repair-authoritative --plan, ${ROWS} rows (⅓ missing, ⅓ stale, ⅓ hash conflict), ${os.cpus().length} CPUs, Node ${process.version}`,
    );
  for (const c of CONCURRENCY) await measure('--execute', c, true);
  await measure('dry run', 8, false);
  if (args.json) console.log(JSON.stringify({ bench: 'projection', rows: ROWS, results }));
  if (results.some((r) => !r.ok)) process.exitCode = 1;
} finally {
  if (!args.keep) {
    await admin.query(`DROP DATABASE IF EXISTS \`${fcName}\`; DROP DATABASE IF EXISTS \`${shName}\``);
    rmSync(dir, { recursive: true, force: true });
  } else console.log(`kept: ${fcName}, ${shName}, ${dir}`);
  await admin.end();
}
