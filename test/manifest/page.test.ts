import { afterAll, describe, expect, it } from 'vitest';
import { buildAnswerSnapshot } from '../../src/lib/answers/snapshot.js';
import { openDb, type Db } from '../../src/lib/db/connect.js';
import { MANIFEST_INDEX, selectManifestBoundary, selectManifestPage } from '../../src/lib/manifest/sql.js';
import type { ManifestSide } from '../../src/lib/manifest/row.js';
import { jsonLines, runCli } from '../helpers/cli.js';
import type { TestDatabases } from '../helpers/db.js';
import { servicesTest } from '../helpers/services.js';
import {
  answerHash,
  answerSource,
  insertAnswers,
  insertProjections,
  type TestAnswer,
  testUuid,
} from '../helpers/manifest.js';

const test = servicesTest({ prefix: 'mpage', init: 'all' });

const FORM = testUuid('page', 'form');
const OTHER_FORM = testUuid('page', 'other-form');
let dbs: TestDatabases;
let env: Record<string, string | undefined>;
let shDb: Db;
let fcDb: Db;
const answers: TestAnswer[] = Array.from({ length: 30 }, (_, i) => ({
  answerUuid: testUuid('page', 'answer', i),
  formUuid: FORM,
  revision: 1 + (i % 4),
  isDeleted: i % 10 === 9 ? 1 : 0,
  createTime: `2026-10-0${1 + (i % 9)} 08:00:${String(i).padStart(2, '0')}`,
}));
const sorted = [...answers].sort((a, b) => (a.answerUuid < b.answerUuid ? -1 : 1));

test.beforeAll(async ({ dbs: services }) => {
  dbs = services;
  env = dbs.env();
  // Other schools and forms around the one read: never in its pages.
  await insertAnswers(dbs.admin, dbs.fcName, [
    ...answers,
    ...Array.from({ length: 5 }, (_, i) => ({ answerUuid: testUuid('page', 'other-form', i), formUuid: OTHER_FORM })),
    ...Array.from({ length: 5 }, (_, i) => ({
      answerUuid: testUuid('page', 'other-school', i),
      formUuid: FORM,
      schId: 6,
    })),
  ]);
  await insertProjections(dbs.admin, dbs.shName, [
    ...answers.map((a, i) => ({
      answerUuid: a.answerUuid,
      formUuid: FORM,
      revision: a.revision ?? 1,
      contentHash: answerHash(a),
      isDeleted: a.isDeleted ?? 0,
      createTime: i % 7 === 0 ? null : (a.createTime ?? null),
      retiredAt: i === 4 ? '2026-11-01 00:00:00' : null,
    })),
    ...Array.from({ length: 5 }, (_, i) => ({
      answerUuid: testUuid('page', 'other-school', i),
      formUuid: FORM,
      schId: 6,
    })),
  ]);
  shDb = await openDb('SH database', dbs.shUrl);
  fcDb = await openDb('FC database', dbs.fcUrl);
});
afterAll(async () => {
  await shDb?.close();
  await fcDb?.close();
});

const page = async (args: string[]) => {
  const r = await runCli(['--json', 'manifest', 'page', ...args], { env });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const lines = jsonLines(r.stdout);
  expect(lines.at(-1)).toMatchObject({ type: 'summary', command: 'manifest page', exitCode: 0 });
  return lines.find((l) => l['type'] === 'page') as {
    rows: Array<Record<string, unknown>>;
    nextCursor: string | null;
    completed: boolean;
  };
};

describe('manifest page', () => {
  it.each(['sh', 'fc'] as const)(
    '%s: keyset pages by answer uuid, size+1 read to know completed, nextCursor null at the end',
    async (side) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      const shapes: Array<[number, boolean]> = [];
      for (;;) {
        const p = await page([
          '--side',
          side,
          '--school',
          '5',
          '--form',
          FORM,
          '--size',
          '10',
          ...(cursor ? ['--cursor', cursor] : []),
        ]);
        shapes.push([p.rows.length, p.completed]);
        seen.push(...p.rows.map((r) => r['answerUuid'] as string));
        if (p.completed) {
          expect(p.nextCursor).toBeNull();
          break;
        }
        expect(p.nextCursor).toBe(p.rows.at(-1)!['answerUuid']);
        cursor = p.nextCursor;
      }
      // 30 rows by 10: exactly three pages, the third knows it is the last (the extra row is absent).
      expect(shapes).toEqual([
        [10, false],
        [10, false],
        [10, true],
      ]);
      expect(seen).toEqual(sorted.map((a) => a.answerUuid));
    },
  );

  it('SH rows: the seven members (retiredAt included), no database id, times as stored', async () => {
    const p = await page(['--side', 'sh', '--school', '5', '--form', FORM]);
    expect(p.completed).toBe(true);
    expect(p.rows).toHaveLength(30);
    for (const r of p.rows)
      expect(Object.keys(r)).toEqual([
        'answerUuid',
        'revision',
        'contentHash',
        'isDeleted',
        'schId',
        'createTime',
        'retiredAt',
      ]);
    const byUuid = new Map(p.rows.map((r) => [r['answerUuid'], r]));
    answers.forEach((a, i) => {
      expect(byUuid.get(a.answerUuid)).toEqual({
        answerUuid: a.answerUuid,
        revision: String(a.revision),
        contentHash: answerHash(a),
        isDeleted: a.isDeleted === 1,
        schId: '5',
        createTime: i % 7 === 0 ? null : a.createTime,
        retiredAt: i === 4 ? '2026-11-01 00:00:00' : null,
      });
    });
  });

  it("FC rows: the six members, the fc.canon.v1 hash of the answer's ten-member snapshot", async () => {
    const p = await page(['--side', 'fc', '--school', '5', '--form', FORM, '--size', '500']);
    expect(p.rows).toHaveLength(30);
    for (const r of p.rows)
      expect(Object.keys(r)).toEqual(['answerUuid', 'revision', 'contentHash', 'isDeleted', 'schId', 'createTime']);
    const byUuid = new Map(p.rows.map((r) => [r['answerUuid'], r]));
    for (const a of answers) {
      const snapshot = buildAnswerSnapshot(answerSource(a));
      expect(JSON.parse(snapshot.snapshotJson).createTime).toBe(a.createTime!.replace(' ', 'T'));
      expect(byUuid.get(a.answerUuid)).toEqual({
        answerUuid: a.answerUuid,
        revision: String(a.revision),
        contentHash: snapshot.contentHash,
        isDeleted: a.isDeleted === 1,
        schId: '5',
        createTime: a.createTime,
      });
    }
  });

  it('an empty school/form is one completed, empty page', async () => {
    const p = await page(['--side', 'sh', '--school', '77', '--form', FORM]);
    expect(p).toMatchObject({ rows: [], nextCursor: null, completed: true });
  });

  it.each([
    [['--size', '501'], /--size <n>.*from 1 to 500/],
    [['--size', '0'], /--size/],
    [['--form', 'not-a-uuid'], /--form <uuid>.*UUID/],
    [['--cursor', 'zz'], /--cursor.*UUID/],
    [['--school', '0'], /--school <id>.*positive/],
    [['--school', '-5'], /--school/],
    [['--side', 'both'], /--side.*sh or fc/],
  ])('bad input %j: exit 2, one line on stderr, nothing on stdout', async (args, message) => {
    const base: Record<string, string> = { '--side': 'sh', '--school': '5', '--form': FORM };
    for (let i = 0; i < args.length; i += 2) base[args[i]!] = args[i + 1]!;
    const r = await runCli(['--json', 'manifest', 'page', ...Object.entries(base).flat()], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^fcctl: [^\n]+\n$/);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});

describe("EXPLAIN of the scan's planning queries", () => {
  type Plan = { key: string | null; type: string; Extra: string | null };
  it.each(['sh', 'fc'] as const)(
    '%s: the page boundary is read from the index alone; a planned range page uses the index too',
    async (side) => {
      const db = () => (side === 'sh' ? shDb : fcDb);
      const boundary = selectManifestBoundary(side, {
        schId: '5',
        formUuid: FORM,
        after: sorted[2]!.answerUuid,
        limit: 10,
      });
      const range = selectManifestPage(side, {
        schId: '5',
        formUuid: FORM,
        after: sorted[2]!.answerUuid,
        upTo: sorted[12]!.answerUuid,
        limit: 11,
      });
      for (const [q, covering] of [
        [boundary, true],
        [range, false],
      ] as const) {
        const plan = await db().query<Plan>(`EXPLAIN ${q.sql}`, q.params);
        expect(plan).toHaveLength(1);
        expect(plan[0]!.key).toBe(MANIFEST_INDEX[side].index);
        expect(plan[0]!.type).toBe('range');
        expect(plan[0]!.Extra ?? '').not.toMatch(/filesort|temporary/i);
        if (covering) expect(plan[0]!.Extra ?? '').toMatch(/Using index(?! condition)/);
      }
      // and it finds the right key: the 10th after the cursor, when an 11th follows
      expect(
        (await db().query<{ answer_uuid: string }>(boundary.sql, boundary.params)).map((r) => r.answer_uuid),
      ).toEqual([sorted[12]!.answerUuid, sorted[13]!.answerUuid]);
    },
  );
});

describe('EXPLAIN of the page queries', () => {
  type Plan = { key: string | null; type: string; Extra: string | null; possible_keys: string | null };
  const explain = async (
    side: ManifestSide,
    after: string | null,
    range?: { lower: string | null; upper: string | null },
  ): Promise<Plan[]> => {
    const { sql, params } = selectManifestPage(side, {
      schId: '5',
      formUuid: FORM,
      after,
      limit: 201,
      ...(range ? { range } : {}),
    });
    return (side === 'sh' ? shDb : fcDb).query<Plan>(`EXPLAIN ${sql}`, params);
  };
  it.each(['sh', 'fc'] as const)(
    '%s: the manifest index, ref or range, no filesort, no full scan — first page, next page, a shard',
    async (side) => {
      for (const plan of [
        await explain(side, null),
        await explain(side, sorted[10]!.answerUuid),
        await explain(side, sorted[3]!.answerUuid, { lower: '40000000', upper: '80000000' }),
        await explain(side, null, { lower: null, upper: '80000000' }),
      ]) {
        expect(plan).toHaveLength(1);
        const row = plan[0]!;
        expect(row.key).toBe(MANIFEST_INDEX[side].index);
        expect(['ref', 'range']).toContain(row.type);
        expect(row.type).not.toBe('ALL');
        expect(row.type).not.toBe('index');
        expect(row.Extra ?? '').not.toMatch(/filesort/i);
        expect(row.Extra ?? '').not.toMatch(/temporary/i);
      }
    },
  );
});
