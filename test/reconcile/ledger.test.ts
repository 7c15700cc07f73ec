/**
 * The drift ledger (issue 30 §2) against the real MariaDB: real `reconcile run --all` nights over
 * seeded drift write one ledger row per finished pair, matching the night's summary.json; `reconcile
 * history` over three nights (different drift, one with a failed pair) matches the three summaries;
 * `--keep-nights` prunes whole nights; the row is written only with the guarded finish, in its
 * transaction; bad input is refused before anything is read or written.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, expect } from 'vitest';
import { type Db, openDb } from '../../src/lib/db/connect.js';
import { CATEGORIES, emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { writeTask } from '../../src/lib/reconcile/all/store.js';
import { ledgerNights, ledgerPairs } from '../../src/lib/reconcile/ledger/store.js';
import { HISTORY_COLUMNS } from '../../src/lib/reconcile/history/decide.js';
import type { LedgerEntry } from '../../src/lib/reconcile/ledger/types.js';
import { expectRefused, SH_TABLES_FOR_CHECKSUM } from '../helpers/bad-input.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { parseCsv } from '../helpers/csv.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { testMysqlUrl } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { allArgv } from '../helpers/reconcile-all.js';

const test = servicesTest({ prefix: 'ledger' });
const CONSUMER = 'svc-hall';
const SH_TABLES = [...SH_TABLES_FOR_CHECKSUM, 'fcctl_reconcile_task', 'fcctl_reconcile_ledger'];
let dbs: TestDatabases;
let dir: string;
let shDb: Db;

type Line = Record<string, unknown>;
type Summary = {
  runId: string;
  pairs: number;
  counts: Record<string, number>;
  pairsWithDifferences: Array<{ schId: string; formUuid: string; differences: number }>;
  pairsFailed: Array<{ schId: string; formUuid: string; error: string }>;
};
/** A night's pair as history or the ledger table tells it. */
type Listed = {
  school: string;
  form: string;
  result: string;
  differences: number;
  counts: Record<string, number>;
  error: string | null;
};

const pairsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'pair');
const summaryLine = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const all = (out: string, ...more: string[]) => allArgv(CONSUMER, out, ...more);

async function ledgerRows(runId: string): Promise<Array<Record<string, string | number | null>>> {
  const [rows] = await dbs.admin.query(
    `SELECT run_id, CAST(run_started_at AS CHAR) AS run_started_at, CAST(sch_id AS CHAR) AS sch_id, form_uuid, result, ${CATEGORIES.map((c) => c.toLowerCase()).join(', ')}, ` +
      `differences, fc_rows, sh_rows, error, seconds, host FROM \`${dbs.shName}\`.fcctl_reconcile_ledger WHERE run_id = ? ORDER BY sch_id, form_uuid`,
    [runId],
  );
  return rows as Array<Record<string, string | number | null>>;
}

const listedOfRow = (r: Record<string, string | number | null>): Listed => ({
  school: String(r['sch_id']),
  form: String(r['form_uuid']),
  result: String(r['result']),
  differences: Number(r['differences']),
  counts: Object.fromEntries(CATEGORIES.map((c) => [c, Number(r[c.toLowerCase()])])),
  error: r['error'] === null ? null : String(r['error']),
});

/** A night's listed pairs say what its summary.json says: pairs, answers by category, differing and failed pairs. */
function expectMatchesSummary(listed: readonly Listed[], s: Summary): void {
  expect(listed).toHaveLength(s.pairs);
  const counts = emptyCounts() as Record<string, number>;
  for (const p of listed) if (p.result === 'DONE') for (const c of CATEGORIES) counts[c]! += p.counts[c]!;
  expect(counts).toEqual(s.counts);
  const key = (school: string, form: string) => `${school}/${form}`;
  expect(new Map(listed.filter((p) => p.differences > 0).map((p) => [key(p.school, p.form), p.differences]))).toEqual(
    new Map(s.pairsWithDifferences.map((p) => [key(p.schId, p.formUuid), p.differences])),
  );
  expect(new Map(listed.filter((p) => p.result === 'FAILED').map((p) => [key(p.school, p.form), p.error]))).toEqual(
    new Map(s.pairsFailed.map((p) => [key(p.schId, p.formUuid), p.error])),
  );
}

async function firstPairs(n: number): Promise<Array<{ school: string; form: string }>> {
  const [rows] = await dbs.admin.query(
    `SELECT DISTINCT CAST(sch_id AS CHAR) AS s, form_uuid AS f FROM \`${dbs.shName}\`.fc_answer_projection ORDER BY s, f LIMIT ?`,
    [n],
  );
  return (rows as Array<{ s: string; f: string }>).map((r) => ({ school: r.s, form: r.f }));
}

/** Drift for the next night: `n` projection rows of a pair gone (MISSING_LOCAL at FC's side). */
async function dropProjections(p: { school: string; form: string }, n: number): Promise<void> {
  await dbs.admin.query(
    `DELETE FROM \`${dbs.shName}\`.fc_answer_projection WHERE sch_id = ? AND form_uuid = ? ORDER BY answer_uuid LIMIT ?`,
    [p.school, p.form, n],
  );
}

/** One night: an --all run under its own run id and out dir; its summary.json and pair lines. */
async function night(runId: string, ...more: string[]): Promise<{ summary: Summary; pairs: Line[]; line: Line }> {
  const out = join(dir, runId);
  const r = await runCli(all(out, '--run-id', runId, ...more), { env: dbs.env() });
  expect([0, 4], r.stderr).toContain(r.code);
  return {
    summary: JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Summary,
    pairs: pairsOf(r.stdout),
    line: summaryLine(r.stdout),
  };
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  dir = tmp;
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env: dbs.env() })).code).toBe(0);
  // 2 schools × 3 forms = 6 pairs on both sides, with drift of every kind
  const seed = await runCli(
    ['--json', 'dev', 'seed', '--answers', '120', '--schools', '2', '--consumer-keys', CONSUMER, '--no-grant-mix'],
    { env: dbs.env() },
  );
  expect(seed.code, seed.stderr).toBe(0);
  shDb = await openDb('SH database', dbs.shUrl);
});
afterAll(async () => {
  await shDb?.close();
});

const nights: Array<{ summary: Summary; pairs: Line[] }> = [];

test('a real --all run writes one ledger row per pair, matching its summary.json and its pair lines', async () => {
  const n1 = await night('n1');
  nights.push(n1);
  const rows = await ledgerRows('n1');
  expect(rows).toHaveLength(6);
  expectMatchesSummary(rows.map(listedOfRow), n1.summary);
  for (const p of n1.pairs) {
    const row = rows.find((r) => r['sch_id'] === p['school'] && r['form_uuid'] === p['form'])!;
    expect(listedOfRow(row)).toMatchObject({ result: 'DONE', differences: p['differences'], counts: p['counts'] });
    expect({ fc: Number(row['fc_rows']), sh: Number(row['sh_rows']) }).toEqual({ fc: p['fcRows'], sh: p['shRows'] });
    // the host that finished it: this machine, as the run's summary line names it
    expect(row['host']).toBe(hostname());
  }
  // the night's start: the run's first task registered, the same on every row
  const [start] = await dbs.admin.query(
    `SELECT CAST(MIN(create_time) AS CHAR) AS t FROM \`${dbs.shName}\`.fcctl_reconcile_task WHERE run_id = 'n1'`,
  );
  expect(new Set(rows.map((r) => r['run_started_at']))).toEqual(new Set([(start as Array<{ t: string }>)[0]!.t]));
});

test('reconcile history over three nights (other drift each, one with a failed pair) matches the three summaries', async () => {
  const [a, b] = await firstPairs(2);
  await dropProjections(a!, 5);
  nights.push(await night('n2'));
  await dropProjections(b!, 3);
  // the third night's first pair is refused: its folder holds a directory named run.json (FAILED, exit 4)
  mkdirSync(join(dir, 'n3', a!.school, a!.form, 'run.json'), { recursive: true });
  nights.push(await night('n3'));
  expect(nights[2]!.summary.pairsFailed).toHaveLength(1);
  // the drift differs night by night
  expect(new Set(nights.map((n) => JSON.stringify(n.summary.counts))).size).toBe(3);

  const h = await runCli(['--json', 'reconcile', 'history', '--last', '3'], { env: dbs.env() });
  expect(h.code, h.stderr).toBe(0);
  const rows = jsonLines(h.stdout).filter((l) => l['type'] === 'row');
  // newest night first, a night's pairs together
  expect([...new Set(rows.map((r) => r['runId']))]).toEqual(['n3', 'n2', 'n1']);
  for (const n of nights) {
    const listed = rows
      .filter((r) => r['runId'] === n.summary.runId)
      .map(
        (r): Listed => ({
          school: String(r['school']),
          form: String(r['form']),
          result: String(r['result']),
          differences: Number(r['differences']),
          counts: Object.fromEntries(CATEGORIES.map((c) => [c, Number(r[c])])),
          error: r['error'] === null ? null : String(r['error']),
        }),
      );
    expectMatchesSummary(listed, n.summary);
  }
  expect(summaryLine(h.stdout)).toMatchObject({ command: 'reconcile history', exitCode: 0, nights: 3, pairs: 18 });
  // each night's totals (issue 36 §15): a `night` line per night, newest first, equal to its summary
  const nightLines = jsonLines(h.stdout).filter((l) => l['type'] === 'night');
  expect(nightLines.map((l) => l['runId'])).toEqual(['n3', 'n2', 'n1']);
  for (const [i, n] of [...nights].reverse().entries()) {
    expect(nightLines[i]).toMatchObject({
      pairs: n.summary.pairs,
      failed: n.summary.pairsFailed.length,
      differing: n.summary.pairsWithDifferences.length,
      differences: n.summary.pairsWithDifferences.reduce((t, p) => t + p.differences, 0),
      ...n.summary.counts,
    });
  }

  // --last 2 and a school: the two newest nights, that school's pairs only
  const one = await runCli(['--json', 'reconcile', 'history', '--last', '2', '--school', a!.school], {
    env: dbs.env(),
  });
  const oneRows = jsonLines(one.stdout).filter((l) => l['type'] === 'row');
  expect(oneRows.map((r) => `${String(r['runId'])}/${String(r['school'])}`)).toEqual([
    ...Array(3).fill(`n3/${a!.school}`),
    ...Array(3).fill(`n2/${a!.school}`),
  ]);
  // csv: the documented columns, one line per night × pair, the failed pair's error in its cell
  const csv = await runCli(['reconcile', 'history', '--last', '3', '--format', 'csv'], { env: dbs.env() });
  expect(csv.code).toBe(0);
  const table = parseCsv(csv.stdout);
  expect(table[0]).toEqual(HISTORY_COLUMNS.map((c) => c.key));
  expect(table).toHaveLength(19);
  const failed = table.find((r) => r[4] === 'FAILED')!;
  expect(failed.slice(0, 4).concat(failed.at(-1)!.slice(0, 60))).toEqual([
    'n3',
    expect.any(String),
    a!.school,
    a!.form,
    nights[2]!.summary.pairsFailed[0]!.error.slice(0, 60),
  ]);
});

test("the report's reads: ledgerNights oldest first (up to a night), ledgerPairs of chosen nights", async () => {
  const ns = await ledgerNights(shDb, { last: 30 });
  expect(ns.map((n) => n.runId)).toEqual(['n1', 'n2', 'n3']);
  for (const [i, n] of ns.entries()) {
    const s = nights[i]!.summary;
    expect(n).toMatchObject({
      pairs: s.pairs,
      counts: s.counts,
      pairsWithDifferences: s.pairsWithDifferences.length,
      failed: s.pairsFailed.length,
      differences: s.pairsWithDifferences.reduce((t, p) => t + p.differences, 0),
    });
  }
  expect((await ledgerNights(shDb, { last: 30, upTo: 'n2' })).map((n) => n.runId)).toEqual(['n1', 'n2']);
  expect((await ledgerNights(shDb, { last: 1, upTo: 'n2' })).map((n) => n.runId)).toEqual(['n2']);
  expect(await ledgerNights(shDb, { last: 30, upTo: 'no-such-run' })).toEqual([]);
  const pairs = await ledgerPairs(shDb, { runIds: ['n1', 'n3'] });
  expect(pairs.map((p) => p.runId)).toEqual([...Array(6).fill('n3'), ...Array(6).fill('n1')]);
  expect(pairs.find((p) => p.result === 'FAILED')).toMatchObject({ runId: 'n3', fcRows: null, shRows: null });
});

test('--keep-nights 2: after the summary, the older nights go (ledger, task and join rows); the newest two stay', async () => {
  const n4 = await night('n4', '--keep-nights', '2');
  expect(n4.line['pruned']).toEqual({ nights: 2, ledgerRows: 12, taskRows: 12 });
  const [left] = await dbs.admin.query(
    `SELECT run_id, COUNT(*) AS n FROM \`${dbs.shName}\`.fcctl_reconcile_ledger GROUP BY run_id ORDER BY run_id`,
  );
  expect((left as Array<{ run_id: string; n: unknown }>).map((r) => [r.run_id, Number(r.n)])).toEqual([
    ['n3', 6],
    ['n4', 6],
  ]);
  const [tasks] = await dbs.admin.query(
    `SELECT run_id, COUNT(*) AS n FROM \`${dbs.shName}\`.fcctl_reconcile_task GROUP BY run_id ORDER BY run_id`,
  );
  expect((tasks as Array<{ run_id: string }>).map((t) => t.run_id)).toEqual(['n3', 'n4']);
  const h = await runCli(['--json', 'reconcile', 'history'], { env: dbs.env() });
  expect(summaryLine(h.stdout)).toMatchObject({ last: 30, nights: 2, pairs: 12 });
  // the default (90) prunes nothing here
  const n5 = await night('n5');
  expect(n5.line['pruned']).toEqual({ nights: 0, ledgerRows: 0, taskRows: 0 });
});

test('a pair adopted from its directory (its task row never written) is recorded too, its row counts unknown', async () => {
  const first = await night('ad');
  // the process that made the diffs "died" before recording them: tasks PENDING again, no ledger rows
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fcctl_reconcile_task SET state = 'PENDING', result_json = NULL, finished_at = NULL WHERE run_id = 'ad'`,
  );
  await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.fcctl_reconcile_ledger WHERE run_id = 'ad'`);
  const again = await night('ad');
  expect(again.pairs.map((p) => p['result'])).toEqual(Array(6).fill('adopted'));
  const rows = await ledgerRows('ad');
  expect(rows).toHaveLength(6);
  expectMatchesSummary(rows.map(listedOfRow), again.summary);
  expect(again.summary.counts).toEqual(first.summary.counts);
  expect(rows.every((r) => r['result'] === 'DONE' && r['fc_rows'] === null && r['sh_rows'] === null)).toBe(true);
});

test('the ledger row is written in the guarded finish transaction: a lost claim writes none, a failed write leaves the task claimed', async () => {
  const t = `\`${dbs.shName}\`.fcctl_reconcile_task`;
  const form = '00000000-0000-0000-0000-0000000000aa';
  await dbs.admin.query(
    `INSERT INTO ${t} (run_id, sch_id, form_uuid, state, claim_owner, claim_generation, create_time) VALUES ('tx', 77, ?, 'CLAIMED', 'own:1', 3, '2026-12-01 01:00:00')`,
    [form],
  );
  const [[task]] = (await dbs.admin.query(`SELECT id FROM ${t} WHERE run_id = 'tx'`)) as unknown as [
    Array<{ id: string }>,
  ];
  const entry: LedgerEntry = {
    runId: 'tx',
    schId: '77',
    formUuid: form,
    result: 'DONE',
    counts: { ...emptyCounts(), IN_SYNC: 4, STALE_LOCAL: 1 },
    differences: 1,
    fcRows: 5,
    shRows: 5,
    error: null,
    seconds: 0.4,
    throttledSeconds: 0.1,
    host: 'h',
  };
  const finish = { kind: 'finish', state: 'DONE', resultJson: '{}' } as const;
  // another claim's generation: nothing written, no ledger row
  expect((await writeTask(shDb, { id: task!.id, token: 'own:1', generation: '2' }, finish, entry)).affectedRows).toBe(
    0,
  );
  expect(await ledgerRows('tx')).toEqual([]);
  // the ledger write fails (its run has no tasks): the finish is rolled back with it
  await expect(
    writeTask(shDb, { id: task!.id, token: 'own:1', generation: '3' }, finish, { ...entry, runId: 'nowhere' }),
  ).rejects.toThrow(/no task rows/);
  const [[still]] = (await dbs.admin.query(`SELECT state FROM ${t} WHERE id = ?`, [task!.id])) as unknown as [
    Array<{ state: string }>,
  ];
  expect(still!.state).toBe('CLAIMED');
  // the claim's own finish: both written; the same write again (a retry) matches nothing and adds nothing
  expect((await writeTask(shDb, { id: task!.id, token: 'own:1', generation: '3' }, finish, entry)).affectedRows).toBe(
    1,
  );
  expect((await writeTask(shDb, { id: task!.id, token: 'own:1', generation: '3' }, finish, entry)).affectedRows).toBe(
    0,
  );
  const rows = await ledgerRows('tx');
  expect(rows.map(listedOfRow)).toEqual([
    { school: '77', form, result: 'DONE', differences: 1, counts: entry.counts, error: null },
  ]);
  expect(rows[0]!['run_started_at']).toBe('2026-12-01 01:00:00');
});

test('bad input: --last 0 or not a number, an unknown format, --keep-nights below 1 or not a number: one line, exit 2, nothing written', async () => {
  for (const argv of [
    ['reconcile', 'history', '--last', '0'],
    ['reconcile', 'history', '--last', 'ten'],
    ['reconcile', 'history', '--format', 'xml'],
  ])
    await expectRefused(dbs, { name: argv.join(' '), argv, says: /--last|--format/ }, SH_TABLES);
  for (const bad of ['0', '-3', 'x'])
    await expectRefused(
      dbs,
      { name: `--keep-nights ${bad}`, argv: all(join(dir, 'bad'), '--keep-nights', bad), says: /--keep-nights/ },
      SH_TABLES,
    );
  expect(existsSync(join(dir, 'bad'))).toBe(false);
});

test("--keep-nights never prunes the pruning process's own run, however old (a night retried by --run-id)", async () => {
  // n3 again: its FAILED pair is tried again (refused again: its row replaced, still one per pair)
  const again = await night('n3', '--keep-nights', '1');
  expect(again.pairs.map((p) => p['result'])).toEqual(['failed']);
  const [left] = await dbs.admin.query(
    `SELECT run_id FROM \`${dbs.shName}\`.fcctl_reconcile_ledger GROUP BY run_id ORDER BY run_id`,
  );
  // 'ad' is the newest night; n4, n5 and tx are gone; n3 is this process's own
  expect((left as Array<{ run_id: string }>).map((r) => r.run_id)).toEqual(['ad', 'n3']);
  expect(again.line['pruned']).toMatchObject({ nights: 3 });
  expect(await ledgerRows('n3')).toHaveLength(6);
});

test("the throttled time: a night run under --max-load while another query runs records each pair's wait, summed in the ledger and on the report", async () => {
  const other = await mysql.createConnection(testMysqlUrl());
  const [[{ id }]] = (await other.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
  const sleeping = other.query('SELECT SLEEP(3)').catch(() => undefined);
  await waitFor(
    'the SLEEP to run',
    async () =>
      (
        (await dbs.admin.query(
          "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP%'",
          [id],
        )) as unknown as [unknown[]]
      )[0].length > 0,
    5000,
    10,
  );
  const n = await night('thr', '--max-load', 'Threads_running=1', '--keep-nights', '1000');
  await sleeping;
  await other.end();
  const waits = n.pairs.map((p) => Number(p['throttledSeconds']));
  expect(waits.every((w) => Number.isFinite(w) && w >= 0)).toBe(true);
  expect(waits.reduce((a, b) => a + b, 0)).toBeGreaterThan(0.5);
  const [rows] = (await dbs.admin.query(
    `SELECT SUM(throttled_seconds) AS s FROM \`${dbs.shName}\`.fcctl_reconcile_ledger WHERE run_id = 'thr'`,
  )) as unknown as [Array<{ s: number }>];
  expect(Number(rows[0]!.s)).toBeCloseTo(
    waits.reduce((a, b) => a + b, 0),
    1,
  );
  const recorded = (await ledgerNights(shDb, { last: 50 })).find((x) => x.runId === 'thr')!;
  expect(recorded.throttledSeconds).toBeCloseTo(Number(rows[0]!.s), 5);
  const html = readFileSync(join(dir, 'thr', 'report.html'), 'utf8');
  expect(html).toMatch(/<dt>throttled<\/dt><dd>[^<]+ waiting on --max-load\/--max-lag \(summed over pairs\)<\/dd>/);
});
