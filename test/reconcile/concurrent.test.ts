import { databaseIdentity } from '../../src/lib/db/identity.js';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Db, openDb } from '../../src/lib/db/connect.js';
import { PIPELINE_PAGES, READ_AHEAD_PAGES } from '../../src/lib/manifest/scan/pipeline.js';
import { runReconcile } from '../../src/lib/reconcile/run/run.js';
import { FCCTL_BIN } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import { answerHash, insertAnswers, insertProjections, type TestAnswer, testUuid } from '../helpers/manifest.js';
import { waitFor } from '../helpers/wait.js';

const test = servicesTest({ prefix: 'concurrent', init: 'all' });

// Seed 000 §8.1: a local page is no consistent snapshot; rows created or changed while the scans
// run must never be read as "absent at FC".
const FORM = testUuid('concurrent', 'form');
const N = 800;
const SIZE = 20;
/**
 * Rows past a committed page's cursor the scan may already have read: the rest of that page's
 * commit and the pages queued behind it (READ_AHEAD_PAGES each), the planned page queries
 * (PIPELINE_PAGES), and a margin of two.
 */
const READ_AHEAD = (2 * READ_AHEAD_PAGES + PIPELINE_PAGES + 2) * SIZE;
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let dir: string;
let fcDb: Db;
let shDb: Db;
const answers: TestAnswer[] = Array.from({ length: N }, (_, i) => ({
  answerUuid: testUuid('concurrent', i),
  formUuid: FORM,
  revision: 1 + (i % 3),
}));
/** Local rows FC really does not have, created long before: the only true retire candidates. */
const trulyAbsent = Array.from({ length: 5 }, (_, i) => testUuid('concurrent', 'absent', i));

const jsonl = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, string>);
/** The key `n` rows after `after` in a table's school-5 form (past what a scan reads ahead). */
async function keyAfter(database: string, table: string, after: string, n: number): Promise<string> {
  const [rows] = await dbs.admin.query(
    `SELECT answer_uuid FROM \`${database}\`.${table} WHERE sch_id = 5 AND form_uuid = ? AND answer_uuid > ? ORDER BY answer_uuid LIMIT 1 OFFSET ${n}`,
    [FORM, after],
  );
  return (rows as Array<{ answer_uuid: string }>)[0]!.answer_uuid;
}
const reportRows = (out: string) =>
  readFileSync(join(out, 'report.csv'), 'utf8')
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => l.split(',') as [string, string]);

test.beforeAll(async ({ dbs: services, tmp }) => {
  dbs = services;
  env = dbs.env();
  await insertAnswers(dbs.admin, dbs.fcName, answers);
  await insertProjections(dbs.admin, dbs.shName, [
    ...answers.map((a) => ({
      answerUuid: a.answerUuid,
      formUuid: FORM,
      revision: a.revision ?? 1,
      contentHash: answerHash(a),
      createTime: '2026-10-01 08:00:05',
    })),
    ...trulyAbsent.map((u) => ({ answerUuid: u, formUuid: FORM, createTime: '2026-10-01 09:00:00' })),
  ]);
  fcDb = await openDb('FC database', dbs.fcUrl);
  shDb = await openDb('SH database', dbs.shUrl);
  dir = tmp;
});
afterAll(async () => {
  await fcDb?.close();
  await shDb?.close();
});

describe('rows inserted and changed while the scans run', () => {
  it("are never retire candidates: new answers FC's scan had passed, local-only inserts, local updates", async () => {
    const touched = new Set<string>();
    let behindFcCursor: string[] = [];
    const localOnly: string[] = [];
    const out = join(dir, 'hooked');
    const fresh = (label: string, n: number, accept: (u: string) => boolean) => {
      const found: string[] = [];
      for (let k = 0; found.length < n; k++) {
        const u = testUuid('concurrent', label, k);
        if (accept(u)) found.push(u);
      }
      return found;
    };
    const result = await runReconcile(
      {
        schId: '5',
        formUuid: FORM,
        outDir: out,
        size: SIZE,
        restart: false,
        fcDatabase: databaseIdentity(dbs.fcUrl),
        shDatabase: databaseIdentity(dbs.shUrl),
      },
      {
        fcDb: async () => fcDb,
        shDb: async () => shDb,
        signal: new AbortController().signal,
        onPage: async (side, p) => {
          if (side === 'fc' && p.page === 3) {
            // New answers created now, at FC and (delivered) locally, with keys the FC scan has
            // already passed: the FC manifest will not have them, the SH scan (later) will.
            behindFcCursor = fresh('behind', 10, (u) => u < p.cursor!);
            // The scan reads ahead of what it has committed: "ahead" starts past what it may have read.
            const far = await keyAfter(dbs.fcName, 'answer', p.cursor!, READ_AHEAD);
            const ahead = fresh('ahead', 10, (u) => u > far);
            const created = [...behindFcCursor, ...ahead].map((u) => ({ answerUuid: u, formUuid: FORM }));
            await insertAnswers(dbs.admin, dbs.fcName, created);
            await insertProjections(
              dbs.admin,
              dbs.shName,
              created.map((a) => ({
                answerUuid: a.answerUuid,
                formUuid: FORM,
                contentHash: answerHash(a),
                createTime: 'NOW()',
              })),
            );
            for (const u of [...behindFcCursor, ...ahead]) touched.add(u);
          }
          if (side === 'sh' && p.page === 5) {
            // Local-only rows created now, ahead of the SH cursor (the SH scan will see them, FC never has them) …
            const far = await keyAfter(dbs.shName, 'fc_answer_projection', p.cursor!, READ_AHEAD);
            localOnly.push(...fresh('local-only', 10, (u) => u > far));
            await insertProjections(
              dbs.admin,
              dbs.shName,
              localOnly.map((u) => ({ answerUuid: u, formUuid: FORM, createTime: 'NOW()' })),
            );
            // … and existing rows changed ahead of the cursor: a newer revision, a tombstone.
            const [rows] = await dbs.admin.query(
              `SELECT answer_uuid FROM \`${dbs.shName}\`.fc_answer_projection WHERE sch_id = 5 AND form_uuid = ? AND answer_uuid > ? AND answer_uuid NOT IN (?) ORDER BY answer_uuid LIMIT 10`,
              [FORM, far, [...trulyAbsent, ...localOnly, ...touched]],
            );
            const changed = (rows as Array<{ answer_uuid: string }>).map((r) => r.answer_uuid);
            await dbs.admin.query(
              `UPDATE \`${dbs.shName}\`.fc_answer_projection SET answer_revision = answer_revision + 1, is_deleted = answer_uuid < ?, content_hash = SHA2(CONCAT(answer_uuid, 'changed'), 256), update_time = NOW() WHERE answer_uuid IN (?)`,
              [changed[5], changed],
            );
            for (const u of [...localOnly, ...changed]) touched.add(u);
          }
        },
      },
    );
    expect(result.kind).toBe('done');
    if (result.kind !== 'done') return;
    const candidates = jsonl(join(out, 'retire-candidates.jsonl')).map((c) => c['answerUuid']);
    expect(candidates.sort()).toEqual([...trulyAbsent].sort());
    for (const u of touched) expect(candidates).not.toContain(u);
    // What they are instead: created after the task start (absent from the FC manifest, present locally) …
    const byCategory = new Map<string, string[]>();
    for (const [c, u] of reportRows(out)) byCategory.set(c, [...(byCategory.get(c) ?? []), u]);
    expect((byCategory.get('ABSENT_CREATED_AFTER_TASK_START') ?? []).sort()).toEqual(
      [...behindFcCursor, ...localOnly].sort(),
    );
    // … or local-ahead for the changed ones.
    expect(byCategory.get('LOCAL_AHEAD')).toHaveLength(10);
    expect(result.summary.counts.ABSENT_AT_FC).toBe(trulyAbsent.length);
  });

  it('a real `reconcile run` process with a writer inserting local rows all along: no inserted row is a candidate', async () => {
    const out = join(dir, 'process');
    const child = spawn(
      process.execPath,
      [FCCTL_BIN, '--json', 'reconcile', 'run', '--school', '5', '--form', FORM, '--out-dir', out, '--size', '5'],
      { env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    let running = true;
    const exited = new Promise<number | null>((resolve) =>
      child.on('close', (code) => {
        running = false;
        resolve(code);
      }),
    );
    // Writes begin once the run has taken its task start (run.json exists): rows created before
    // it are, rightly, candidates when FC does not have them.
    await waitFor(
      'the run to take its task start',
      async () => existsSync(join(out, 'run.json')) || !running,
      30_000,
      2,
    );
    const inserted: string[] = [];
    for (let k = 0; running; k++) {
      const u = testUuid('concurrent', 'writer', k);
      await insertProjections(dbs.admin, dbs.shName, [{ answerUuid: u, formUuid: FORM, createTime: 'NOW()' }]);
      inserted.push(u);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await exited, stderr).toBe(0);
    expect(inserted.length).toBeGreaterThan(5);
    const candidates = new Set(jsonl(join(out, 'retire-candidates.jsonl')).map((c) => c['answerUuid']));
    for (const u of inserted) expect(candidates.has(u)).toBe(false);
    // The candidates are exactly the local rows FC does not have that existed at the task start.
    const { taskStart } = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { taskStart: string };
    const [rows] = await dbs.admin.query(
      `SELECT p.answer_uuid FROM \`${dbs.shName}\`.fc_answer_projection p LEFT JOIN \`${dbs.fcName}\`.answer a ON a.answer_uuid = p.answer_uuid
       WHERE p.sch_id = 5 AND p.form_uuid = ? AND a.id IS NULL AND p.create_time <= ? AND p.retired_at IS NULL ORDER BY p.answer_uuid`,
      [FORM, taskStart],
    );
    expect([...candidates].sort()).toEqual((rows as Array<{ answer_uuid: string }>).map((r) => r.answer_uuid));
    for (const u of trulyAbsent) expect(candidates.has(u)).toBe(true);
  });
});
