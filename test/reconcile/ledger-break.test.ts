/**
 * The drift ledger under attack (a breaking review of issue 30 §2), real processes on the real
 * MariaDB: several `--all` processes on one run with one kill -9'ed mid-pair and a restart (each
 * finished pair in the ledger exactly once, as summary.json and `reconcile history` say);
 * `--keep-nights` by another run while a night still holds a live lease (never pruned); bad
 * `--last`/`--keep-nights` values; csv and JSON of errors and forms holding commas, quotes, newlines.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { CATEGORIES, emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { expectRefused, SH_TABLES_FOR_CHECKSUM } from '../helpers/bad-input.js';
import { cleanEnv, FCCTL_BIN, jsonLines, runCli } from '../helpers/cli.js';
import { parseCsv } from '../helpers/csv.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { waitFor } from '../helpers/wait.js';
import { allArgv } from '../helpers/reconcile-all.js';

const test = servicesTest({ prefix: 'ledgerbrk' });
const CONSUMER = 'svc-hall';
const SH_TABLES = [...SH_TABLES_FOR_CHECKSUM, 'fcctl_reconcile_task', 'fcctl_reconcile_ledger', 'fcctl_reconcile_join'];
let dbs: TestDatabases;
let dir: string;

type Row = Record<string, string | number | null>;
const all = (out: string, ...more: string[]) => allArgv(CONSUMER, out, ...more);

/** A real `fcctl` process in the background, its stdout collected. */
function start(argv: readonly string[]): { child: ChildProcess; out: () => string; exited: Promise<number> } {
  const child = spawn(process.execPath, [FCCTL_BIN, ...argv], {
    env: cleanEnv(dbs.env()) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', () => undefined);
  const exited = new Promise<number>((res) => child.on('close', (code, sig) => res(code ?? (sig ? 128 : -1))));
  return { child, out: () => stdout, exited };
}

async function q(sql: string, params: unknown[] = []): Promise<Row[]> {
  return (await dbs.admin.query(sql.replaceAll('SH.', `\`${dbs.shName}\`.`), params))[0] as Row[];
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env: dbs.env() })).code).toBe(0);
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '300', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env: dbs.env() },
  );
  expect(seed.code, seed.stderr).toBe(0);
});

test('three processes on one run, one kill -9ed mid-pair, a restart: every pair in the ledger once, as summary.json and history say', async () => {
  const out = join(dir, 'k9');
  const args = all(out, '--run-id', 'k9', '--concurrency', '1', '--size', '1', '--lease-seconds', '3');
  const victim = start(args);
  await waitFor(
    'the victim holding a pair',
    async () => (await q("SELECT 1 FROM SH.fcctl_reconcile_task WHERE run_id = 'k9' AND state = 'CLAIMED'")).length > 0,
    60_000,
  );
  await new Promise((r) => setTimeout(r, 300));
  victim.child.kill('SIGKILL');
  expect(await victim.exited).toBe(128);
  const others = [start(args), start(args)];
  const codes = await Promise.all(others.map((o) => o.exited));
  expect(codes).toEqual([0, 0]);
  // a restart of the finished run: nothing left to do, nothing written twice
  const again = await runCli(args, { env: dbs.env() });
  expect(again.code, again.stderr).toBe(1); // a run id reused on a complete run: warned, exit 1
  const ledger = await q(
    `SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f, result, differences, ${CATEGORIES.map((c) => c.toLowerCase()).join(', ')} FROM SH.fcctl_reconcile_ledger WHERE run_id = 'k9' ORDER BY s, f`,
  );
  const tasks = await q(
    "SELECT CAST(sch_id AS CHAR) AS s, form_uuid AS f, state, result_json FROM SH.fcctl_reconcile_task WHERE run_id = 'k9' ORDER BY s, f",
  );
  expect(tasks.length).toBe(6);
  expect(tasks.every((t) => t['state'] === 'DONE')).toBe(true);
  expect(ledger.map((r) => `${r['s']}/${r['f']}`)).toEqual(tasks.map((t) => `${t['s']}/${t['f']}`));
  for (const [i, t] of tasks.entries()) {
    const r = JSON.parse(String(t['result_json'])) as { counts: Record<string, number>; differences: number };
    const row = ledger[i]!;
    expect(Object.fromEntries(CATEGORIES.map((c) => [c, Number(row[c.toLowerCase()])]))).toEqual({
      ...emptyCounts(),
      ...r.counts,
    });
    expect(Number(row['differences'])).toBe(r.differences);
  }
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { counts: Record<string, number> };
  const h = await runCli(['--json', 'reconcile', 'history', '--last', '1'], { env: dbs.env() });
  const rows = jsonLines(h.stdout).filter((l) => l['type'] === 'row');
  expect(rows).toHaveLength(6);
  const sum = emptyCounts() as Record<string, number>;
  for (const r of rows) for (const c of CATEGORIES) sum[c]! += Number(r[c]);
  expect(sum).toEqual(summary.counts);
});

test('--keep-nights of another run never prunes a night whose process still holds a live lease', async () => {
  const [first] = await q('SELECT DISTINCT CAST(sch_id AS CHAR) AS s FROM SH.fc_answer_projection ORDER BY s LIMIT 1');
  const school = String(first!['s']);
  // night 'live': one school's pairs finished (ledger rows: a night), the rest still to run
  const part = await runCli(all(join(dir, 'live'), '--run-id', 'live', '--school', school), { env: dbs.env() });
  expect(part.code, part.stderr).toBe(0);
  // a process of 'live' holds a pair, stopped mid-pair (a slow or descheduled process): its lease is live
  const holder = start(all(join(dir, 'live'), '--run-id', 'live', '--concurrency', '1', '--size', '1'));
  await waitFor(
    "a pair of 'live' claimed",
    async () =>
      (await q("SELECT 1 FROM SH.fcctl_reconcile_task WHERE run_id = 'live' AND state = 'CLAIMED'")).length > 0,
    30_000,
    2,
  );
  holder.child.kill('SIGSTOP');
  const held = await q(
    "SELECT 1 FROM SH.fcctl_reconcile_task WHERE run_id = 'live' AND state = 'CLAIMED' AND claim_expires_at > UTC_TIMESTAMP()",
  );
  expect(held).toHaveLength(1);
  // another run, a newer night, keeping one night
  const other = await runCli(all(join(dir, 'newer'), '--run-id', 'newer', '--keep-nights', '1'), { env: dbs.env() });
  const leftNow = await q("SELECT COUNT(*) AS n FROM SH.fcctl_reconcile_task WHERE run_id = 'live'");
  holder.child.kill('SIGCONT');
  expect(other.code, other.stderr).toBe(0);
  // the night being written was spared (older finished nights of this file may go)
  expect(Number(leftNow[0]!['n'])).toBe(6);
  expect(await holder.exited).toBe(0);
  // the night was left whole: its processes finished it, every pair recorded once
  const tasks = await q(
    "SELECT state, COUNT(*) AS n FROM SH.fcctl_reconcile_task WHERE run_id = 'live' GROUP BY state",
  );
  expect(Object.fromEntries(tasks.map((r) => [r['state'], Number(r['n'])]))).toEqual({ DONE: 6 });
  const ledgerLive = await q("SELECT COUNT(*) AS n FROM SH.fcctl_reconcile_ledger WHERE run_id = 'live'");
  expect(Number(ledgerLive[0]!['n'])).toBe(6);
});

test('bad --last and --keep-nights values: one line, exit 2, nothing read or written', async () => {
  const bad = ['0', '-1', '1.5', '', 'abc', '1e309', '99999999999999999999', '0x10', ' ', '1_000'];
  for (const v of bad)
    await expectRefused(
      dbs,
      { name: `--last '${v}'`, argv: ['reconcile', 'history', '--last', v], says: /--last/ },
      SH_TABLES,
    );
  for (const v of bad)
    await expectRefused(
      dbs,
      { name: `--keep-nights '${v}'`, argv: all(join(dir, 'bad'), '--keep-nights', v), says: /--keep-nights/ },
      SH_TABLES,
    );
});

test('history csv and json: a form and an error holding commas, quotes, newlines and a formula stay one cell each', async () => {
  const form = 'f,"q"\nx=1';
  const error = '=HYPERLINK("x"),a\r\nb "c", d';
  await q(
    "INSERT INTO SH.fcctl_reconcile_ledger (run_id, run_started_at, sch_id, form_uuid, result, error, finished_at) VALUES ('zz-newest', '2999-01-01 00:00:00', 9, ?, 'FAILED', ?, '2999-01-01 00:00:01')",
    [form, error],
  );
  const csv = await runCli(['reconcile', 'history', '--last', '1', '--format', 'csv'], { env: dbs.env() });
  expect(csv.code, csv.stderr).toBe(0);
  const table = parseCsv(csv.stdout);
  expect(table).toHaveLength(2);
  expect(table[1]!.slice(0, 5)).toEqual(['zz-newest', '2999-01-01 00:00:00', '9', form, 'FAILED']);
  expect(table[1]!.at(-1)).toBe(`'${error}`);
  const json = await runCli(['--json', 'reconcile', 'history', '--last', '1'], { env: dbs.env() });
  const lines = json.stdout.trim().split('\n');
  // the pair's row, the night's totals (issue 36 §15), the summary
  expect(lines).toHaveLength(3);
  expect(jsonLines(json.stdout)[0]).toMatchObject({ type: 'row', form, error });
  expect(jsonLines(json.stdout)[1]).toMatchObject({ type: 'night', runId: 'zz-newest', pairs: 1, failed: 1 });
  await q("DELETE FROM SH.fcctl_reconcile_ledger WHERE run_id = 'zz-newest'");
});

test('a process whose claim was lost (stopped past its lease, the pair taken and finished elsewhere) writes no ledger row', async () => {
  const args = (out: string) =>
    all(join(dir, out), '--run-id', 'lost', '--concurrency', '1', '--size', '1', '--lease-seconds', '3');
  const a = start(args('host-a'));
  await waitFor(
    "a pair of 'lost' claimed",
    async () =>
      (await q("SELECT 1 FROM SH.fcctl_reconcile_task WHERE run_id = 'lost' AND state = 'CLAIMED'")).length > 0,
    30_000,
    2,
  );
  a.child.kill('SIGSTOP');
  const [taken] = await q(
    "SELECT id, claim_generation FROM SH.fcctl_reconcile_task WHERE run_id = 'lost' AND state = 'CLAIMED'",
  );
  // another host takes the pair once the lease ran out, and finishes the whole run
  await new Promise((r) => setTimeout(r, 4000));
  const b = await runCli(args('host-b'), { env: dbs.env() });
  expect(b.code, b.stderr).toBe(0);
  const ledger = () =>
    q(
      "SELECT l.form_uuid, CAST(l.finished_at AS CHAR) AS f, l.in_sync, l.differences FROM SH.fcctl_reconcile_ledger l WHERE l.run_id = 'lost' ORDER BY l.sch_id, l.form_uuid",
    );
  const before = await ledger();
  expect(before).toHaveLength(6);
  a.child.kill('SIGCONT');
  expect(await a.exited).toBe(0);
  const lines = jsonLines(a.out()).filter((l) => l['type'] === 'pair');
  expect(lines.map((l) => l['result'])).toEqual(['lost']);
  expect(await ledger()).toEqual(before);
  const [task] = await q('SELECT state, claim_generation FROM SH.fcctl_reconcile_task WHERE id = ?', [taken!['id']]);
  expect(task).toMatchObject({ state: 'DONE' });
  expect(Number(task!['claim_generation'])).toBe(Number(taken!['claim_generation']) + 1);
});

test('a pair FAILED, then retried DONE in the same run: one ledger row, DONE, its error gone, its counts those of the retry', async () => {
  const [p] = await q(
    'SELECT DISTINCT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM SH.fc_answer_projection ORDER BY s, f LIMIT 1',
  );
  const blocker = join(dir, 'retry', String(p!['s']), String(p!['f']), 'run.json');
  mkdirSync(blocker, { recursive: true });
  const first = await runCli(all(join(dir, 'retry'), '--run-id', 'retry'), { env: dbs.env() });
  expect(first.code).toBe(4);
  const row = async () =>
    (
      await q(
        "SELECT result, error, in_sync, differences, fc_rows FROM SH.fcctl_reconcile_ledger WHERE run_id = 'retry' AND sch_id = ? AND form_uuid = ?",
        [p!['s'], p!['f']],
      )
    )[0];
  expect(await row()).toMatchObject({ result: 'FAILED', in_sync: '0' });
  rmSync(blocker, { recursive: true });
  const again = await runCli(all(join(dir, 'retry'), '--run-id', 'retry'), { env: dbs.env() });
  expect(again.code, again.stderr).toBe(0);
  const done = jsonLines(again.stdout).find((l) => l['type'] === 'pair')!;
  expect(done['result']).toBe('done');
  const counts = done['counts'] as Record<string, number>;
  const r = (await row())!;
  expect({
    ...r,
    in_sync: Number(r['in_sync']),
    differences: Number(r['differences']),
    fc_rows: Number(r['fc_rows']),
  }).toEqual({
    result: 'DONE',
    error: null,
    in_sync: counts['IN_SYNC'] ?? 0,
    differences: done['differences'],
    fc_rows: done['fcRows'],
  });
  const n = await q("SELECT COUNT(*) AS n FROM SH.fcctl_reconcile_ledger WHERE run_id = 'retry'");
  expect(Number(n[0]!['n'])).toBe(6);
});
