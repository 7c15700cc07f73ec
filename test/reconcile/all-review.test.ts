import { databaseIdentity } from '../../src/lib/db/identity.js';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { type Db, openDb } from '../../src/lib/db/connect.js';
import { openThrottle, parseMaxLoad } from '../../src/lib/db/throttle.js';
import { runReconcileAll } from '../../src/lib/reconcile/all/run.js';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { freshDatabases, type TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';
import { allArgv } from '../helpers/reconcile-all.js';

// Issue 26 §1, §2, §9: `reconcile run --all` against the real databases.
const test = servicesTest({ prefix: 'allrev' });

const CONSUMER = 'svc-hall';
let dbs: TestDatabases;
/** a second pair of databases ("staging"), seeded alike: the same pairs, other database identities */
let staging: TestDatabases | undefined;
let dir: string;

type Line = Record<string, unknown>;
const pairsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'pair');
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const all = (out: string, ...more: string[]) => allArgv(CONSUMER, out, ...more);

async function seeded(d: TestDatabases): Promise<void> {
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env: d.env() })).code).toBe(0);
  // 2 schools × 3 forms = 6 pairs on both sides
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '120', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env: d.env() },
  );
  expect(seed.code, seed.stderr).toBe(0);
}

async function tasks(
  d: TestDatabases,
  runId: string,
): Promise<Array<{ sch_id: string; form_uuid: string; state: string; result_json: string | null }>> {
  const [rows] = await d.admin.query(
    `SELECT CAST(sch_id AS CHAR) AS sch_id, form_uuid, state, result_json FROM \`${d.shName}\`.fcctl_reconcile_task WHERE run_id = ? ORDER BY sch_id, form_uuid`,
    [runId],
  );
  return rows as Array<{ sch_id: string; form_uuid: string; state: string; result_json: string | null }>;
}

/** The first pair in claim order (school, then form). */
async function firstPair(d: TestDatabases): Promise<{ school: string; form: string }> {
  const [rows] = await d.admin.query(
    `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM \`${d.shName}\`.fc_answer_projection ORDER BY sch_id, form_uuid LIMIT 1`,
  );
  const r = (rows as Array<{ s: string; f: string }>)[0]!;
  return { school: r.s, form: r.f };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  await seeded(dbs);
});
afterAll(async () => {
  await staging?.drop();
});

test("§1 a pause after a pair failed: the failure is not hidden (exit 4 for that safety refusal); a pause with only the run's FAILED pairs is exit 1", async () => {
  const out = join(dir, 'pause-failed');
  const pauseFile = join(dir, 'pause-failed.flag');
  const first = await firstPair(dbs);
  // the first pair's folder holds a directory named run.json: that pair is refused (exit 4 alone)
  mkdirSync(join(out, first.school, first.form, 'run.json'), { recursive: true });
  const args = all(out, '--run-id', 'pf', '--concurrency', '1', '--size', '1', '--pause-file', pauseFile);
  const child = spawn(process.execPath, [FCCTL_BIN, ...args], {
    env: cleanEnv(dbs.env()) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  const exited = new Promise<number>((res) => child.on('close', (code) => res(code ?? -1)));
  await waitFor('the first pair failed', async () => pairsOf(stdout).some((p) => p['result'] === 'failed'), 60_000);
  writeFileSync(pauseFile, 'incident 7\n');
  const code = await exited;
  const summary = summaryOf(stdout);
  expect(summary).toMatchObject({ stoppedBy: 'paused', byResult: { failed: 1 } });
  expect(pairsOf(stdout).length).toBeLessThan(6);
  expect(code).toBe(4);
  expect(summary['exitCode']).toBe(4);
  expect(String(summary['reason'])).toMatch(/^1 pair\(s\) failed/);
  expect((await tasks(dbs, 'pf')).filter((t) => t.state === 'FAILED')).toHaveLength(1);
  // Another process of the run, paused at its start: the run's FAILED pair still makes it exit 1.
  const again = await runCli(all(out, '--run-id', 'pf', '--pause-file', pauseFile), { env: dbs.env() });
  expect(summaryOf(again.stdout)).toMatchObject({ stoppedBy: 'paused', pairsRun: 0, run: { byState: { FAILED: 1 } } });
  expect(again.code).toBe(1);
  expect(String(summaryOf(again.stdout)['reason'])).toMatch(/1 pair\(s\) of run pf failed/);
});

test('§2 a pair folder of other databases under the same run id is refused (FAILED, folder untouched, exit 4), not adopted', async () => {
  staging = await freshDatabases('allrevstg');
  await seeded(staging);
  const out = join(dir, 'shared-out');
  const st = await runCli(all(out, '--run-id', 'nightly-x'), { env: staging.env() });
  expect(st.code, st.stderr).toBe(0);
  expect(pairsOf(st.stdout)).toHaveLength(6);
  const files = (p: Line) => ['run.json', 'report.csv', 'summary.json'].map((f) => join(String(p['dir']), f));
  const before = new Map(
    pairsOf(st.stdout)
      .flatMap(files)
      .map((f) => [f, { text: readFileSync(f, 'utf8'), mtime: statSync(f).mtimeMs }]),
  );
  // The same command against production, same --out-dir and --run-id.
  const prod = await runCli(all(out, '--run-id', 'nightly-x'), { env: dbs.env() });
  expect(prod.code, prod.stderr).toBe(4);
  const pairs = pairsOf(prod.stdout);
  expect(pairs).toHaveLength(6);
  for (const p of pairs) {
    expect(p).toMatchObject({ result: 'failed', exitCode: 4 });
    expect(String(p['error'])).toMatch(
      /holds a run of other parameters \(school \d+, form [0-9a-f-]+, FC .*_fc, SH .*_sh\)/,
    );
  }
  for (const [f, b] of before) {
    expect(readFileSync(f, 'utf8')).toBe(b.text);
    expect(statSync(f).mtimeMs).toBe(b.mtime);
  }
  const rows = await tasks(dbs, 'nightly-x');
  expect(rows.map((t) => t.state)).toEqual(Array(6).fill('FAILED'));
  expect(String(rows[0]!.result_json)).toMatch(/holds a run of other parameters/);
  expect(summaryOf(prod.stdout)).toMatchObject({ exitCode: 4, byResult: { failed: 6, adopted: 0 } });
});

test("§9 a single-pair run pointed at an --all directory, or --all at a pair's directory: exit 4, one line, nothing changed", async () => {
  const root = join(dir, 'mix-root');
  const first = await firstPair(dbs);
  expect((await runCli(all(root, '--run-id', 'mix', '--school', first.school), { env: dbs.env() })).code).toBe(0);
  const allSummary = readFileSync(join(root, 'summary.json'), 'utf8');
  const single = await runCli(
    ['--json', 'reconcile', 'run', '--school', first.school, '--form', first.form, '--out-dir', root],
    { env: dbs.env() },
  );
  expect(single.code).toBe(4);
  expect(single.stderr).toMatch(
    /^fcctl: .* is the directory of a reconcile run --all \(its summary\.json is fcctl\.reconcile\.all\.v1\): give a pair's directory/,
  );
  expect(single.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(readFileSync(join(root, 'summary.json'), 'utf8')).toBe(allSummary);
  // the --all run's own files (its report.html too, issue 30); the single-pair run added nothing
  expect(readdirSync(root).sort()).toEqual([first.school, 'report.html', 'summary.json'].sort());
  // A pair's own directory: --all refuses it, registers nothing.
  const pairDir = join(dir, 'mix-pair');
  expect(
    (
      await runCli(
        ['--json', 'reconcile', 'run', '--school', first.school, '--form', first.form, '--out-dir', pairDir],
        { env: dbs.env() },
      )
    ).code,
  ).toBe(0);
  const pairSummary = readFileSync(join(pairDir, 'summary.json'), 'utf8');
  const listing = readdirSync(pairDir).sort();
  const wide = await runCli(all(pairDir, '--run-id', 'mix-pair'), { env: dbs.env() });
  expect(wide.code).toBe(4);
  expect(wide.stderr).toMatch(
    /^fcctl: .* is the directory of a single-pair reconcile run \(it holds run\.json\): give reconcile run --all a directory of its own/,
  );
  expect(wide.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(readFileSync(join(pairDir, 'summary.json'), 'utf8')).toBe(pairSummary);
  expect(readdirSync(pairDir).sort()).toEqual(listing);
  expect(await tasks(dbs, 'mix-pair')).toEqual([]);
});

/**
 * Throws a lost-connection error, after the real call succeeded (its COMMIT made), once for each
 * name `when` gives a call (null: none).
 */
function replyLostOnce(
  db: Db,
  when: { transaction?: (r: unknown) => string | null; execute?: (sql: string) => string | null },
): Db & { lost: string[] } {
  const lost: string[] = [];
  const drop = (what: string) => {
    lost.push(what);
    return Object.assign(new Error('Connection lost: The server closed the connection.'), {
      code: 'PROTOCOL_CONNECTION_LOST',
    });
  };
  return {
    label: db.label,
    pool: db.pool,
    lost,
    query: (sql, params) => db.query(sql, params),
    batch: (statements) => db.batch(statements),
    close: () => db.close(),
    transaction: async (fn) => {
      const r = await db.transaction(fn);
      const what = when.transaction?.(r) ?? null;
      if (what !== null && !lost.includes(what)) throw drop(what);
      return r;
    },
    execute: async (sql, params) => {
      const r = await db.execute(sql, params);
      const what = when.execute?.(sql) ?? null;
      if (what !== null && !lost.includes(what)) throw drop(what);
      return r;
    },
  };
}

test('§6 a claim and a finish whose COMMIT reply was lost and that are retried: no pair orphaned CLAIMED, none reported lost', async () => {
  const fcDb = await openDb('FC database', dbs.fcUrl);
  const realSh = await openDb('SH database', dbs.shUrl);
  // the first claim's reply and the first finish's reply (its transaction: the task row and its
  // ledger row) are lost after their COMMIT
  const shDb = replyLostOnce(realSh, {
    transaction: (r) =>
      r === null || typeof r !== 'object' ? null : 'token' in r ? 'claim' : 'affectedRows' in r ? 'finish' : null,
  });
  try {
    const r = await runReconcileAll(
      {
        outDir: join(dir, 'lost-reply'),
        runId: 'lost-reply',
        filter: { schools: [], forms: [] },
        consumerAppKey: CONSUMER,
        concurrency: 1,
        leaseSeconds: 60,
        size: 100,
        fcDatabase: databaseIdentity(dbs.fcUrl),
        shDatabase: databaseIdentity(dbs.shUrl),
      },
      {
        fcDb: async () => fcDb,
        shDb: async () => shDb,
        signal: new AbortController().signal,
        host: 'test-host',
        owner: 'test-host:1:lost',
      },
    );
    expect(shDb.lost).toEqual(['claim', 'finish']);
    expect(r.outcomes.map((o) => o.result)).toEqual(Array(6).fill('done'));
    expect(r.summary).toMatchObject({ pairs: 6, byState: { DONE: 6, CLAIMED: 0, PENDING: 0, FAILED: 0 } });
    expect((await tasks(dbs, 'lost-reply')).every((t) => t.state === 'DONE')).toBe(true);
    // the finish retried after its lost reply wrote its ledger row once: one per pair
    const [ledger] = await dbs.admin.query(
      `SELECT COUNT(*) AS n, COUNT(DISTINCT sch_id, form_uuid) AS pairs FROM \`${dbs.shName}\`.fcctl_reconcile_ledger WHERE run_id = 'lost-reply'`,
    );
    expect((ledger as Array<{ n: unknown; pairs: unknown }>).map((l) => [Number(l.n), Number(l.pairs)])).toEqual([
      [6, 6],
    ]);
  } finally {
    await fcDb.close();
    await realSh.close();
  }
});

test('§3 without --run-id: a daytime run, a late joiner minutes later (that run\'s verdict, not "nothing to do"), then the night hours later runs every pair again', async () => {
  const out = join(dir, 'default-id');
  const day = await runCli(all(out), { env: dbs.env() });
  expect(day.code, day.stderr).toBe(0);
  const dayId = String(summaryOf(day.stdout)['runId']);
  expect(pairsOf(day.stdout)).toHaveLength(6);
  // A process of the same run started minutes later (a late pod): joins, finds it done, exits with its verdict.
  const late = await runCli(all(out), { env: dbs.env() });
  expect(summaryOf(late.stdout)).toMatchObject({ runId: dayId, pairsRun: 0, run: { byState: { DONE: 6 } } });
  expect(late.stderr).toBe('');
  expect(late.code).toBe(0);
  expect(dayId).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}Z$/);
  // …and with --fail-if-diff its verdict is the run's differences (the seed drifts).
  const strict = await runCli(all(out, '--fail-if-diff'), { env: dbs.env() });
  expect(summaryOf(strict.stdout)).toMatchObject({ runId: dayId, pairsRun: 0 });
  expect(strict.code).toBe(1);
  expect(String(summaryOf(strict.stdout)['reason'])).toMatch(/pair\(s\) with differences \(--fail-if-diff\)/);
  // Hours pass (simulated: the run's rows are moved 10 hours into the past, as the SH clock would
  // see them at night); the scheduled night begins a run of its own and runs every pair.
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET create_time = create_time - INTERVAL 10 HOUR, finished_at = finished_at - INTERVAL 10 HOUR WHERE run_id = ?`,
    [dayId],
  );
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_join SET joined_at = joined_at - INTERVAL 10 HOUR WHERE run_id = ?`,
    [dayId],
  );
  const night = await runCli(all(out, '--concurrency', '1', '--size', '1'), { env: dbs.env() });
  expect(night.code, night.stderr).toBe(0);
  const nightId = String(summaryOf(night.stdout)['runId']);
  // named after the SH clock; -2 when a run of that name exists (here: the simulated day in the same minute)
  expect(nightId).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}Z(-\d+)?$/);
  expect(nightId).not.toBe(dayId);
  expect(pairsOf(night.stdout).map((p) => p['result'])).toEqual(Array(6).fill('done'));
  // Two processes of the night started together without --run-id share one run: every pair once.
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET create_time = create_time - INTERVAL 10 HOUR, finished_at = finished_at - INTERVAL 10 HOUR WHERE run_id = ?`,
    [nightId],
  );
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_join SET joined_at = joined_at - INTERVAL 10 HOUR WHERE run_id = ?`,
    [nightId],
  );
  const [a, b] = await Promise.all([
    runCli(all(out, '--concurrency', '1', '--size', '1'), { env: dbs.env() }),
    runCli(all(out, '--concurrency', '1', '--size', '1'), { env: dbs.env() }),
  ]);
  expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
  expect(summaryOf(a.stdout)['runId']).toBe(summaryOf(b.stdout)['runId']);
  expect(summaryOf(a.stdout)['runId']).not.toBe(nightId);
  expect(pairsOf(a.stdout).length + pairsOf(b.stdout).length).toBe(6);
});

test('§7 a pair waiting on the throttle whose lease is taken by another process stops at once (lost), not when the throttle clears', async () => {
  const fcDb = await openDb('FC database', dbs.fcUrl);
  const shDb = await openDb('SH database', dbs.shUrl);
  const stop = new AbortController();
  // always over the limit (this very connection counts): every page waits on the throttle
  const sh = (await openThrottle(
    { maxLoad: parseMaxLoad('Threads_connected=0'), maxLagSeconds: null },
    { db: async () => shDb, label: 'SH database', signal: stop.signal, checkEveryMs: 0 },
  ))!;
  const first = await firstPair(dbs);
  const giveUp = setTimeout(() => stop.abort(), 20_000);
  const began = Date.now();
  try {
    const run = runReconcileAll(
      {
        outDir: join(dir, 'throttled'),
        runId: 'throttled',
        filter: { schools: [first.school], forms: [first.form] },
        consumerAppKey: CONSUMER,
        concurrency: 1,
        leaseSeconds: 3,
        size: 100,
        fcDatabase: databaseIdentity(dbs.fcUrl),
        shDatabase: databaseIdentity(dbs.shUrl),
      },
      {
        fcDb: async () => fcDb,
        shDb: async () => shDb,
        signal: stop.signal,
        host: 'test-host',
        owner: 'test-host:2:thr',
        throttle: { fc: sh, sh },
        onPair: () => stop.abort(),
      },
    );
    // the pair is claimed and waits on the throttle; another process takes it (as after an expiry)
    await waitFor(
      'the pair claimed',
      async () => (await tasks(dbs, 'throttled')).some((t) => t.state === 'CLAIMED'),
      20_000,
    );
    await dbs.admin.query(
      `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET claim_owner = 'thief:1:x', claim_generation = claim_generation + 1, claim_expires_at = UTC_TIMESTAMP() + INTERVAL 1 HOUR WHERE run_id = 'throttled'`,
    );
    const r = await run;
    expect(r.outcomes.map((o) => o.result)).toEqual(['lost']);
    expect(Date.now() - began).toBeLessThan(15_000);
  } finally {
    clearTimeout(giveUp);
    await fcDb.close();
    await shDb.close();
  }
});
