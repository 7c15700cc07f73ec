import { databaseIdentity } from '../../src/lib/db/identity.js';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/lib/db/connect.js';
import { driftCounts, planShSeed, type ShDriftEntry } from '../../src/lib/dev/sh-seed.js';
import { DEFAULT_PUBLISHER, defaultConsumerKeys, planSeed, schoolIds } from '../../src/lib/dev/seed.js';
import { processStartTicks } from '../../src/lib/files/lock.js';
import { CATEGORIES, type Category } from '../../src/lib/reconcile/diff/decide.js';
import { runReconcile } from '../../src/lib/reconcile/run/run.js';
import { checksumTables } from '../helpers/checksum.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { readProm } from '../helpers/textfile.js';

const test = servicesTest({ prefix: 'seeded' });

const SEED = 3;
const ANSWERS = 240;
const SCHOOLS = 2;
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let expected: readonly ShDriftEntry[];
let forms: string[];

const plan = () =>
  planSeed({
    seed: SEED,
    answers: ANSWERS,
    consumerKeys: defaultConsumerKeys(3, DEFAULT_PUBLISHER.appKey),
    schools: SCHOOLS,
    snapshotBytes: 0,
    publisher: DEFAULT_PUBLISHER,
    grantMix: true,
    includeFaults: false,
  });
const summaryOf = (stdout: string) => jsonLines(stdout).find((l) => l['type'] === 'summary')!;
const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const uuidsOf = (path: string) => jsonl(path).map((r) => r['answerUuid'] as string);

/** Runs `reconcile run` in this process (pages of 1) and stops it when `stopAt` says so. */
async function stoppedRun(
  schId: string,
  formUuid: string,
  outDir: string,
  stopAt: (side: 'fc' | 'sh', page: number) => boolean,
) {
  const controller = new AbortController();
  const fcDb = await openDb('FC database', dbs.fcUrl);
  const shDb = await openDb('SH database', dbs.shUrl);
  try {
    return await runReconcile(
      {
        schId,
        formUuid,
        outDir,
        size: 1,
        restart: false,
        fcDatabase: databaseIdentity(dbs.fcUrl),
        shDatabase: databaseIdentity(dbs.shUrl),
      },
      {
        fcDb: async () => fcDb,
        shDb: async () => shDb,
        signal: controller.signal,
        onPage: (side, p) => {
          if (stopAt(side, p.page)) controller.abort(new Error('stopped by test'));
        },
      },
    );
  } finally {
    await fcDb.close();
    await shDb.close();
  }
}

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  expect((await runCli(['db', 'init', '--side', 'all', '--dev'], { env })).code).toBe(0);
  dir = tmp;
  const p = plan();
  expected = planShSeed(SEED, p).drift;
  forms = [...new Set(p.answers.map((a) => a.form_uuid))];
});

/** What one reconcile run directory says about each answer: category → answer uuids. */
function categoriesIn(out: string): Map<Category, string[]> {
  const byCategory = new Map<Category, string[]>(CATEGORIES.map((c) => [c, []]));
  const report = readFileSync(join(out, 'report.csv'), 'utf8').trimEnd().split('\n').slice(1).filter(Boolean);
  const listed = new Set<string>();
  for (const line of report) {
    const [category, uuid] = line.split(',') as [Category, string];
    byCategory.get(category)!.push(uuid);
    listed.add(uuid);
  }
  // IN_SYNC and RETIRED are not differences: they are the manifests' other rows.
  const fc = new Set(uuidsOf(join(out, 'fc-manifest.jsonl')));
  for (const u of fc) if (!listed.has(u)) byCategory.get('IN_SYNC')!.push(u);
  for (const u of uuidsOf(join(out, 'sh-manifest.jsonl')))
    if (!listed.has(u) && !fc.has(u)) byCategory.get('RETIRED')!.push(u);
  return byCategory;
}

describe('dev seed with the SH side, then reconcile run', () => {
  it('dev seed fills the SH projection and prints the drift counts of its plan', async () => {
    const r = await runCli(
      ['--json', 'dev', 'seed', '--answers', String(ANSWERS), '--schools', String(SCHOOLS), '--seed', String(SEED)],
      { env },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = summaryOf(r.stdout);
    const counts = driftCounts(expected);
    expect(s).toMatchObject({ sh: 'seeded', drift: counts, driftTaskStartFrom: '2026-10-31 00:00:00' });
    for (const c of [
      'MISSING_LOCAL',
      'STALE_LOCAL',
      'HASH_CONFLICT',
      'LOCAL_AHEAD',
      'ABSENT_AT_FC',
      'ABSENT_CREATED_AFTER_TASK_START',
      'ABSENT_CREATE_TIME_NULL',
      'RETIRED',
    ] as const)
      expect(counts[c], c).toBeGreaterThan(0);
    expect(counts).toEqual({
      IN_SYNC: 202,
      MISSING_LOCAL: 12,
      STALE_LOCAL: 12,
      HASH_CONFLICT: 7,
      LOCAL_AHEAD: 7,
      ABSENT_AT_FC: 4,
      ABSENT_CREATED_AFTER_TASK_START: 4,
      ABSENT_CREATE_TIME_NULL: 4,
      RETIRED: 4,
    });
    const [rows] = await dbs.admin.query(
      `SELECT COUNT(*) AS n, SUM(link_state = 'LINKED') AS linked, SUM(conflict_flag) AS conflicts FROM \`${dbs.shName}\`.fc_answer_projection`,
    );
    expect((rows as Array<Record<string, string>>)[0]).toEqual({
      n: String(ANSWERS - 12 + 16),
      linked: expect.any(String),
      conflicts: '7',
    });
  });

  it('every seeded answer comes out in its seeded category, by id, over every school and form', async () => {
    const got = new Map<Category, string[]>(CATEGORIES.map((c) => [c, []]));
    for (const school of schoolIds(SCHOOLS)) {
      for (const form of forms) {
        const out = join(dir, `run-${school}-${form}`);
        const r = await runCli(
          ['--json', 'reconcile', 'run', '--school', school, '--form', form, '--out-dir', out, '--size', '7'],
          { env },
        );
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const s = summaryOf(r.stdout);
        for (const [c, ids] of categoriesIn(out)) {
          got.get(c)!.push(...ids);
          expect((s['counts'] as Record<string, number>)[c], `${school}/${form} ${c}`).toBe(ids.length);
        }
        // the candidate and plan files hold exactly the report's rows of their categories
        const cat = categoriesIn(out);
        expect(uuidsOf(join(out, 'retire-candidates.jsonl'))).toEqual(cat.get('ABSENT_AT_FC'));
        expect(uuidsOf(join(out, 'local-ahead.jsonl'))).toEqual(cat.get('LOCAL_AHEAD'));
        expect(uuidsOf(join(out, 'repair-plan.jsonl')).sort()).toEqual(
          [...cat.get('MISSING_LOCAL')!, ...cat.get('STALE_LOCAL')!, ...cat.get('HASH_CONFLICT')!].sort(),
        );
      }
    }
    for (const c of CATEGORIES) {
      const want = expected
        .filter((d) => d.category === c)
        .map((d) => d.answerUuid)
        .sort();
      expect([...got.get(c)!].sort(), c).toEqual(want);
    }
  });

  it('retire candidates carry what retire-absent needs: expected triple, createTime, task start; repair lines the expected triple as read', async () => {
    const school = '5';
    const out = join(dir, `run-${school}-${forms[0]}`);
    const run = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as {
      taskStart: string;
      runId: string;
      state: string;
    };
    expect(run.state).toBe('completed');
    const [rows] = await dbs.admin.query(
      `SELECT answer_uuid, answer_revision, content_hash, is_deleted, create_time FROM \`${dbs.shName}\`.fc_answer_projection WHERE sch_id = 5`,
    );
    const local = new Map((rows as Array<Record<string, string | number>>).map((r) => [r['answer_uuid'], r]));
    for (const c of jsonl(join(out, 'retire-candidates.jsonl'))) {
      const l = local.get(c['answerUuid'] as string)!;
      expect(c).toEqual({
        category: 'ABSENT_AT_FC',
        answerUuid: l['answer_uuid'],
        schId: '5',
        formUuid: forms[0],
        expectedRevision: String(l['answer_revision']),
        expectedHash: l['content_hash'],
        expectedIsDeleted: l['is_deleted'] === 1,
        localCreateTime: l['create_time'],
        taskStart: run.taskStart,
      });
      expect((c['localCreateTime'] as string) <= run.taskStart).toBe(true);
    }
    for (const p of jsonl(join(out, 'repair-plan.jsonl'))) {
      const l = local.get(p['answerUuid'] as string);
      if (p['category'] === 'MISSING_LOCAL') expect(l).toBeUndefined();
      else
        expect([p['expectedRevision'], p['expectedHash'], p['expectedIsDeleted']]).toEqual([
          String(l!['answer_revision']),
          l!['content_hash'],
          l!['is_deleted'] === 1,
        ]);
    }
  });

  it('a completed run is followed by a new one (new task start, fresh scans), with the same result; metrics written', async () => {
    const out = join(dir, `run-5-${forms[0]}`);
    const before = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { runId: string; taskStart: string };
    const report = readFileSync(join(out, 'report.csv'), 'utf8');
    const metrics = join(dir, 'reconcile.prom');
    const r = await runCli(
      ['--json', 'reconcile', 'run', '--school', '5', '--form', forms[0]!, '--out-dir', out, '--metrics-file', metrics],
      { env },
    );
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ resumed: false });
    const after = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { runId: string; taskStart: string };
    expect(after.runId).not.toBe(before.runId);
    expect(after.taskStart >= before.taskStart).toBe(true);
    expect(readFileSync(join(out, 'report.csv'), 'utf8')).toBe(report);
    const prom = readProm(metrics);
    // the pair's labels on every series (issue 19 §5)
    const pair = `school="5",form="${forms[0]}"`;
    expect(prom).toContain(`fcctl_run_exit_code{command="reconcile run",${pair}} 0`);
    expect(prom).toMatch(new RegExp(`fcctl_rows\\{command="reconcile run",${pair},result="ABSENT_AT_FC"\\} \\d+`));
    expect(prom).toMatch(new RegExp(`fcctl_reconcile_rows\\{${pair},category="ABSENT_AT_FC"\\} \\d+`));
  });

  it('a stopped run resumes: same run id and task start, scans continued from their checkpoints, same result', async () => {
    const fresh = join(dir, 'fresh');
    expect(
      (await runCli(['--json', 'reconcile', 'run', '--school', '6', '--form', forms[1]!, '--out-dir', fresh], { env }))
        .code,
    ).toBe(0);
    const out = join(dir, 'stopped');
    const stopped = await stoppedRun('6', forms[1]!, out, (side, page) => side === 'sh' && page === 2);
    expect(stopped).toMatchObject({ kind: 'stopped', phase: 'scan-sh', reason: 'stopped by test' });
    const run = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as {
      runId: string;
      taskStart: string;
      state: string;
    };
    expect(run.state).toBe('scanning');
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
    const r = await runCli(['--json', 'reconcile', 'run', '--school', '6', '--form', forms[1]!, '--out-dir', out], {
      env,
    });
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ resumed: true, runId: run.runId, taskStart: run.taskStart });
    const sh = JSON.parse(readFileSync(join(out, 'sh-manifest.checkpoint.json'), 'utf8')) as { size: number };
    expect(sh.size).toBe(200); // continued (with the rerun's page size), not restarted
    expect(readFileSync(join(out, 'report.csv'), 'utf8')).toBe(readFileSync(join(fresh, 'report.csv'), 'utf8'));
    expect(readFileSync(join(out, 'sh-manifest.jsonl')).equals(readFileSync(join(fresh, 'sh-manifest.jsonl')))).toBe(
      true,
    );
  });

  it("a new run stopped before a side is scanned resumes with fresh scans of both sides, never the previous run's manifest", async () => {
    const out = join(dir, 'rerun-stopped');
    const args = ['--json', 'reconcile', 'run', '--school', '6', '--form', forms[2]!, '--out-dir', out];
    expect((await runCli(args, { env })).code).toBe(0);
    const atFc = new Set(uuidsOf(join(out, 'fc-manifest.jsonl')));
    const gone = uuidsOf(join(out, 'sh-manifest.jsonl')).find((u) => atFc.has(u))!;
    expect(gone).toBeDefined();
    expect(readFileSync(join(out, 'report.csv'), 'utf8')).not.toContain(`MISSING_LOCAL,${gone},`);
    // Changed at SH after the first run: the next run must see it gone.
    await dbs.admin.query(`DELETE FROM \`${dbs.shName}\`.fc_answer_projection WHERE answer_uuid = ?`, [gone]);
    expect(await stoppedRun('6', forms[2]!, out, (side) => side === 'fc')).toMatchObject({
      kind: 'stopped',
      phase: 'scan-fc',
    });
    const r = await runCli(args, { env });
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)).toMatchObject({ resumed: true });
    expect(uuidsOf(join(out, 'sh-manifest.jsonl'))).not.toContain(gone);
    expect(readFileSync(join(out, 'report.csv'), 'utf8')).toMatch(new RegExp(`^MISSING_LOCAL,${gone},`, 'm'));
  });

  it('on a terminal: live progress on stderr, the summary as a table with the counts', async () => {
    const out = join(dir, 'tty');
    const r = await runCli(['reconcile', 'run', '--school', '5', '--form', forms[2]!, '--out-dir', out], {
      env,
      tty: true,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/reconcile run/);
    expect(r.stdout).toMatch(/ABSENT_AT_FC\s+\d+/);
    expect(r.stdout).not.toMatch(/^\{/m);
    const page = await runCli(
      ['manifest', 'page', '--side', 'sh', '--school', '5', '--form', forms[2]!, '--size', '3'],
      { env, tty: true },
    );
    expect(page.code).toBe(0);
    expect(page.stdout).toMatch(/answer\s+rev\s+hash\s+deleted\s+school\s+created\s+retired/);
  });

  it('a run directory of other parameters → exit 4 unless --restart; one held by a live run → exit 4', async () => {
    const out = join(dir, `run-5-${forms[0]}`);
    const other = await runCli(['--json', 'reconcile', 'run', '--school', '6', '--form', forms[0]!, '--out-dir', out], {
      env,
    });
    expect(other.code).toBe(4);
    expect(other.stderr).toMatch(/^fcctl: .* holds a run of other parameters \(school 5, .*--restart\n$/);
    writeFileSync(
      join(out, 'reconcile.lock'),
      JSON.stringify({
        host: hostname(),
        pid: process.pid,
        startTicks: processStartTicks('self'),
        nonce: 'x',
        startedAt: 'now',
        command: 'reconcile run',
      }),
    );
    const locked = await runCli(
      ['--json', 'reconcile', 'run', '--school', '5', '--form', forms[0]!, '--out-dir', out],
      { env },
    );
    expect(locked.code).toBe(4);
    expect(locked.stderr).toMatch(/held by a running reconcile run/);
    rmSync(join(out, 'reconcile.lock'));
    const restarted = await runCli(
      ['--json', 'reconcile', 'run', '--school', '6', '--form', forms[0]!, '--out-dir', out, '--restart'],
      { env },
    );
    expect(restarted.code).toBe(0);
  });
});

describe('dev seed, SH side options', () => {
  const shChecksum = () => checksumTables(dbs.admin, dbs.shName, ['fc_answer_projection']);
  const fcChecksum = () =>
    checksumTables(dbs.admin, dbs.fcName, ['application_info', 'form_consumer_grant', 'answer', 'answer_delivery']);

  it('refuses a non-empty SH database without --replace: exit 4 before either side is written', async () => {
    const sh = await shChecksum();
    const fc = await fcChecksum();
    // FC empty but SH not: nothing may be written anywhere
    await dbs.admin.query(
      `CREATE TABLE \`${dbs.fcName}\`.keep AS SELECT * FROM \`${dbs.fcName}\`.answer_delivery LIMIT 0`,
    );
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.answer_delivery`);
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.answer`);
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.form_consumer_grant`);
    await dbs.admin.query(`DELETE FROM \`${dbs.fcName}\`.application_info`);
    const emptyFc = await fcChecksum();
    const r = await runCli(['--json', 'dev', 'seed', '--answers', '10'], { env });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /^fcctl: refusing to seed: the SH database already holds rows \(fc_answer_projection \d+\); pass --replace.*--no-sh\n$/,
    );
    expect(await shChecksum()).toBe(sh);
    expect(await fcChecksum()).toBe(emptyFc);
    expect(fc).not.toBe(emptyFc);
  });

  it('is deterministic: --replace with the same options gives the same SH table; --no-sh leaves it alone', async () => {
    const args = [
      '--json',
      'dev',
      'seed',
      '--answers',
      String(ANSWERS),
      '--schools',
      String(SCHOOLS),
      '--seed',
      String(SEED),
      '--replace',
    ];
    expect((await runCli(args, { env })).code).toBe(0);
    const first = await shChecksum();
    expect((await runCli(args, { env })).code).toBe(0);
    expect(await shChecksum()).toBe(first);
    const noSh = await runCli([...args.slice(0, -1), '--seed', '4', '--replace', '--no-sh'], { env });
    expect(noSh.code).toBe(0);
    expect(summaryOf(noSh.stdout)).toMatchObject({ sh: 'skipped: --no-sh' });
    expect(summaryOf(noSh.stdout)['drift']).toBeUndefined();
    expect(await shChecksum()).toBe(first);
  });

  it('skips (and says so) an SH database not marked as a development database, or none configured', async () => {
    await dbs.admin.query(`UPDATE \`${dbs.shName}\`.fcctl_schema_version SET is_dev = 0`);
    const r = await runCli(['--json', 'dev', 'seed', '--answers', '5', '--replace'], { env });
    expect(r.code).toBe(0);
    expect(summaryOf(r.stdout)['sh']).toMatch(/^skipped: the SH database is not marked as a development database/);
    const none = await runCli(['--json', 'dev', 'seed', '--answers', '5', '--replace'], {
      env: { ...env, FCCTL_SH_DATABASE_URL: undefined },
    });
    expect(none.code).toBe(0);
    expect(summaryOf(none.stdout)['sh']).toBe('skipped: FCCTL_SH_DATABASE_URL is not set');
  });
});
