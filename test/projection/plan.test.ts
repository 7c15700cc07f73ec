import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { checksumTables, FC_TABLES } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import { devSeedPlan, seedDevDatabases } from '../helpers/dev-seed.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';

const test = servicesTest({ prefix: 'projplan' });

// Seed 4 gives consumer 100100 a revoked grant on one form and a push-disabled one on another.
const SEED = 4;
const ANSWERS = 120;
const KEY = '100100';
const CODE_OF: Record<string, string> = {
  MISSING_LOCAL: 'INSERTED',
  STALE_LOCAL: 'STALE_REPAIRED',
  HASH_CONFLICT: 'HASH_CONFLICT_REPAIRED',
};
/** A dry run's words for those: never a label that reads as done. */
const DRY: Record<string, string> = {
  APPLIED: 'WOULD_APPLY',
  INSERTED: 'WOULD_INSERT',
  STALE_REPAIRED: 'WOULD_REPAIR_STALE',
  HASH_CONFLICT_REPAIRED: 'WOULD_REPAIR_HASH_CONFLICT',
};
const dryOf = (label: string) => DRY[label] ?? label;

let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let planFile: string;
let plan: Array<Record<string, unknown>>;
let revokedForms: Set<string>;
/** the answer a consumer moves ahead of FC after the diff */
let movedAhead: string;

const seedPlan = () => devSeedPlan(SEED, ANSWERS);
const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const resultsOf = (stdout: string) => jsonLines(stdout).filter((l) => l['type'] === 'result');
const repair = (...args: string[]) =>
  runCli(
    [
      '--json',
      'projection',
      'repair-authoritative',
      '--consumer',
      KEY,
      '--proof-id',
      'reconcile-seed-4',
      '--plan',
      planFile,
      ...args,
    ],
    { env },
  );
/** The columns a repair never writes, for every projection row: compared as one text. */
const untouched = async () => {
  const [rows] = await dbs.admin.query(
    `SELECT answer_uuid, link_state, intent_id, apply_id, flow_guid, biz_ext_json, create_time, retired_at, retire_proof_id FROM \`${dbs.shName}\`.fc_answer_projection ORDER BY id`,
  );
  return JSON.stringify(rows);
};
const projectionSum = () => checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection']);

/** Runs `reconcile run` for every seeded form of school 5; returns the run directories. */
async function reconcileAll(tag: string): Promise<string[]> {
  const forms = [...new Set(seedPlan().answers.map((a) => a.form_uuid))];
  const outs: string[] = [];
  for (const form of forms) {
    const out = join(dir, `${tag}-${form}`);
    const r = await runCli(['--json', 'reconcile', 'run', '--school', '5', '--form', form, '--out-dir', out], { env });
    expect(r.code, r.stderr).toBe(0);
    outs.push(out);
  }
  return outs;
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  dir = tmp;
  await seedDevDatabases(env, SEED, ANSWERS);
  revokedForms = new Set(
    seedPlan()
      .grants.filter((g) => g.consumer_app_key === KEY && g.variant === 'revoked')
      .map((g) => g.form_uuid),
  );
  expect(revokedForms.size).toBe(1);

  // One plan over every form of the school: the repair plans of three diffs, concatenated.
  const outs = await reconcileAll('before');
  mkdirSync(join(dir, 'plan'));
  planFile = join(dir, 'plan', 'repair-plan.jsonl');
  writeFileSync(planFile, outs.map((o) => readFileSync(join(o, 'repair-plan.jsonl'), 'utf8')).join(''));
  plan = jsonl(planFile);

  // The consumer links every planned row it has (intent, apply, flow, business extension): the repair must keep them.
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fc_answer_projection SET link_state = 'LINKED', intent_id = CONCAT('svchall-', LEFT(answer_uuid, 8)), apply_id = id + 5000, flow_guid = 'flow-x', biz_ext_json = '{"k":1.50,"名":"值"}' WHERE answer_uuid IN (?)`,
    [plan.map((p) => p['answerUuid'])],
  );
  // After the diff, the consumer applies a newer revision of one stale answer (of an authorized form).
  const stale = plan.find((p) => p['category'] === 'STALE_LOCAL' && !revokedForms.has(p['formUuid'] as string))!;
  movedAhead = stale['answerUuid'] as string;
  await dbs.admin.query(
    `UPDATE \`${dbs.shName}\`.fc_answer_projection SET answer_revision = ?, projection_version = projection_version + 1 WHERE answer_uuid = ?`,
    [BigInt(stale['fcRevision'] as string) + 1n, movedAhead],
  );
});

const expectedOf = (p: Record<string, unknown>): [string, string] => {
  if (revokedForms.has(p['formUuid'] as string)) return ['DEFERRED', 'GRANT_REVOKED'];
  if (p['answerUuid'] === movedAhead) return ['LOCAL_AHEAD', 'LOCAL_REVISION_AHEAD'];
  return ['APPLIED', CODE_OF[p['category'] as string]!];
};

describe('repair-authoritative --plan over a seeded drift (dev seed → reconcile run → repair)', () => {
  test('the plan holds every repair category, some on the revoked form', () => {
    const categories = new Set(plan.map((p) => p['category']));
    expect([...categories].sort()).toEqual(['HASH_CONFLICT', 'MISSING_LOCAL', 'STALE_LOCAL']);
    expect(plan.some((p) => revokedForms.has(p['formUuid'] as string))).toBe(true);
  });

  test('a dry run prints what each line would get (WOULD_APPLY, never APPLIED), writes nothing to either database, and records dryRun evidence beside the plan', async () => {
    const sums = `${await projectionSum()} ${await checksumTables(dbs.admin, dbs.shName, ['fc_reconcile_audit'])} ${await checksumTables(
      dbs.admin,
      dbs.fcName,
      FC_TABLES.filter((t) => t !== 'fcctl_replay_operation'),
    )}`;
    const r = await repair('--concurrency', '4');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const results = resultsOf(r.stdout);
    expect(results.map((x) => [x['answerUuid'], x['result'], x['code']])).toEqual(
      plan.map((p) => [p['answerUuid'], ...expectedOf(p).map(dryOf)]),
    );
    expect(results.every((x) => x['dryRun'] === true && x['written'] === false)).toBe(true);
    expect(r.stdout).not.toMatch(/"(APPLIED|INSERTED|STALE_REPAIRED|HASH_CONFLICT_REPAIRED|inserted|updated)"/);
    expect(
      `${await projectionSum()} ${await checksumTables(dbs.admin, dbs.shName, ['fc_reconcile_audit'])} ${await checksumTables(
        dbs.admin,
        dbs.fcName,
        FC_TABLES.filter((t) => t !== 'fcctl_replay_operation'),
      )}`,
    ).toBe(sums);
    const evidence = jsonl(join(dir, 'plan', 'repair-evidence.jsonl'));
    expect(evidence.map((e) => e['type'])).toEqual(['run', ...plan.map(() => 'decision'), 'end']);
    expect(evidence[0]).toMatchObject({
      format: 'fcctl.repair-evidence.v1',
      mode: 'plan',
      plan: planFile,
      planSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      execute: false,
      items: plan.length,
    });
    expect(evidence.slice(1, -1).every((e) => e['dryRun'] === true)).toBe(true);
    // decisions are appended as they settle (concurrency 4): matched by plan line
    const byLine = new Map(evidence.slice(1, -1).map((e) => [e['line'], e['result']]));
    expect(plan.map((_p, i) => byLine.get(i + 1))).toEqual(plan.map((p) => dryOf(expectedOf(p)[0])));
    const want: Record<string, number> = { WOULD_APPLY: 0, LOCAL_CHANGED: 0, LOCAL_AHEAD: 0, DEFERRED: 0 };
    for (const p of plan) want[dryOf(expectedOf(p)[0])]! += 1;
    expect(evidence.at(-1)).toMatchObject({ exitCode: 1, notRun: 0, stoppedBy: 'done', byResult: want });
    const summary = summaryOf(r.stdout);
    expect(summary).toMatchObject({
      evidence: join(dir, 'plan', 'repair-evidence.jsonl'),
      byResult: want,
      wouldInsert: plan.filter((p) => p['category'] === 'MISSING_LOCAL' && expectedOf(p)[0] === 'APPLIED').length,
      wouldUpdate: plan.filter((p) => p['category'] !== 'MISSING_LOCAL' && expectedOf(p)[0] === 'APPLIED').length,
    });
    expect(
      Object.keys(summary['byCode'] as object).filter((c) =>
        ['INSERTED', 'STALE_REPAIRED', 'HASH_CONFLICT_REPAIRED'].includes(c),
      ),
    ).toEqual([]);
    expect(summary).not.toHaveProperty('inserted');
    expect(summary).not.toHaveProperty('updated');
  });

  test("a dry run on a terminal: the table's result column says WOULD_APPLY, the summary wouldInsert/wouldUpdate — never APPLIED", async () => {
    const sum = await projectionSum();
    const r = await runCli(
      [
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'reconcile-seed-4',
        '--plan',
        planFile,
        '--evidence',
        join(dir, 'tty-evidence.jsonl'),
      ],
      { env, tty: true },
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/would answer \(dry run\)/);
    expect(r.stdout.match(/WOULD_APPLY/g)!.length).toBeGreaterThanOrEqual(
      plan.filter((p) => expectedOf(p)[0] === 'APPLIED').length,
    );
    expect(r.stdout).toMatch(/WOULD_INSERT/);
    expect(r.stdout).toMatch(/wouldInsert\s+\d+/);
    expect(r.stdout).not.toMatch(/\bAPPLIED\b|\bINSERTED\b|_REPAIRED\b|\binserted\b|\bupdated\b/);
    expect(await projectionSum()).toBe(sum);
  });

  test('stopped before it starts (SIGINT/SIGTERM): no line is run, exit 1, nothing written', async () => {
    const sum = await projectionSum();
    const stop = new AbortController();
    stop.abort(new Error('SIGTERM'));
    const r = await runCli(
      [
        '--json',
        'projection',
        'repair-authoritative',
        '--consumer',
        KEY,
        '--proof-id',
        'reconcile-seed-4',
        '--plan',
        planFile,
        '--execute',
        '--evidence',
        join(dir, 'stopped.jsonl'),
      ],
      { env, signal: stop.signal },
    );
    expect(r.code).toBe(1);
    expect(resultsOf(r.stdout)).toEqual([]);
    expect(summaryOf(r.stdout)).toMatchObject({ decided: 0, notRun: plan.length, stoppedBy: 'signal' });
    expect(await projectionSum()).toBe(sum);
  });

  test('--execute: one result line per plan line in plan order, a summary by result, evidence and audit rows; linked columns byte-identical; exit 1 for the refusals', async () => {
    const keep = await untouched();
    const r = await repair('--execute', '--concurrency', '4', '--run-id', 'plan-run-1');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const results = resultsOf(r.stdout);
    expect(results.map((x) => [x['line'], x['answerUuid'], x['category'], x['result'], x['code']])).toEqual(
      plan.map((p, i) => [i + 1, p['answerUuid'], p['category'], ...expectedOf(p)]),
    );
    const want: Record<string, number> = { APPLIED: 0, LOCAL_CHANGED: 0, LOCAL_AHEAD: 0, DEFERRED: 0 };
    for (const p of plan) want[expectedOf(p)[0]]! += 1;
    expect(summaryOf(r.stdout)).toMatchObject({
      exitCode: 1,
      dryRun: false,
      runId: 'plan-run-1',
      items: plan.length,
      decided: plan.length,
      byResult: want,
      notRun: 0,
      stoppedBy: 'done',
      inserted: plan.filter((p) => p['category'] === 'MISSING_LOCAL' && expectedOf(p)[0] === 'APPLIED').length,
      refused: want['DEFERRED']! + want['LOCAL_AHEAD']!,
    });
    // Rows the repair inserted are new (UNLINKED, no business columns); every other row's linked columns are as they were.
    const before = new Map((JSON.parse(keep) as Array<Record<string, unknown>>).map((k) => [k['answer_uuid'], k]));
    for (const row of JSON.parse(await untouched()) as Array<Record<string, unknown>>) {
      const was = before.get(row['answer_uuid']);
      if (was) expect(row).toEqual(was);
      else
        expect(row).toMatchObject({
          link_state: 'UNLINKED',
          intent_id: null,
          apply_id: null,
          flow_guid: null,
          biz_ext_json: null,
          retired_at: null,
        });
    }
    const [audit] = await dbs.admin.query(
      `SELECT outcome, COUNT(*) AS n FROM \`${dbs.shName}\`.fc_reconcile_audit WHERE run_id = 'plan-run-1' AND action = 'REPAIR_AUTHORITATIVE' AND proof_id = 'reconcile-seed-4' GROUP BY outcome`,
    );
    expect(
      Object.fromEntries((audit as Array<{ outcome: string; n: string }>).map((a) => [a.outcome, Number(a.n)])),
    ).toEqual(Object.fromEntries(Object.entries(want).filter(([, n]) => n > 0)));
    const evidence = jsonl(join(dir, 'plan', 'repair-evidence.jsonl')).filter((e) => e['runId'] === 'plan-run-1');
    expect(evidence.map((e) => e['type'])).toEqual(['run', ...plan.map(() => 'decision'), 'end']);
    expect(evidence.at(-1)).toMatchObject({ exitCode: 1, byResult: want });
    const [conflicts] = await dbs.admin.query(
      `SELECT COUNT(*) AS n FROM \`${dbs.shName}\`.fc_answer_projection WHERE conflict_flag = 1 AND answer_uuid IN (?)`,
      [plan.filter((p) => expectedOf(p)[0] === 'APPLIED').map((p) => p['answerUuid'])],
    );
    expect((conflicts as Array<{ n: string }>)[0]!.n).toBe('0');
  });

  test('a new reconcile finds only what was refused; the same plan again changes no projection row (ALREADY_CURRENT after a re-read)', async () => {
    const outs = await reconcileAll('after');
    const left = outs
      .flatMap((o) => jsonl(join(o, 'repair-plan.jsonl')))
      .map((p) => p['answerUuid'])
      .sort();
    expect(left).toEqual(
      plan
        .filter((p) => expectedOf(p)[0] === 'DEFERRED')
        .map((p) => p['answerUuid'])
        .sort(),
    );
    expect(outs.flatMap((o) => jsonl(join(o, 'local-ahead.jsonl'))).map((p) => p['answerUuid'])).toContain(movedAhead);

    const sum = await projectionSum();
    const r = await repair('--execute', '--concurrency', '8');
    expect(r.code).toBe(1);
    for (const [x, p] of resultsOf(r.stdout).map((x, i) => [x, plan[i]!] as const)) {
      const [result] = expectedOf(p);
      if (result === 'APPLIED')
        expect(x).toMatchObject({ result: 'APPLIED', code: 'ALREADY_CURRENT', rereads: 1, written: false });
      else expect(x['result']).toBe(result);
    }
    expect(await projectionSum()).toBe(sum);
  });
});
