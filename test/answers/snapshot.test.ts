import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AnswerSnapshotError,
  buildAnswerSnapshot,
  snapshotText,
  type AnswerSnapshotSource,
} from '../../src/lib/answers/snapshot.js';
import {
  type AnswerPageOptions,
  answerKeyOf,
  type AnswerRow,
  selectAnswerByUuid,
  selectAnswerPage,
} from '../../src/lib/answers/sql.js';
import { canonicalize } from '../../src/lib/canon/index.js';
import { openDb, type Db } from '../../src/lib/db/connect.js';
import { servicesTest } from '../helpers/services.js';

interface Vector {
  name: string;
  canonical?: string;
  hash?: string;
}
const test = servicesTest({ prefix: 'answers', init: 'fc' });
const vectors = (
  JSON.parse(readFileSync(new URL('../../fixtures/canon/fc-canon-v1.json', import.meta.url), 'utf8')) as {
    vectors: Vector[];
  }
).vectors;
const seedVector = vectors.find((v) => v.name === 'seed-contract-vector')!;

/** The FC row that yields the seed 000 §3 vector, exactly as mysql2 returns it. */
const SEED_ROW: AnswerSnapshotSource = {
  sch_id: '5',
  app_code: 'demo',
  code: 'honor_apply',
  submitter_id: '1001',
  subject_id: '7',
  status: 'processed',
  values_json: '{"a":{"z":1,"y":null},"b":[2,1],"n":100.0,"e":true}',
  answer_no: null,
  create_time: '2026-10-21 10:00:00',
  update_time: null,
};

describe('buildAnswerSnapshot (fc.canon.v1, seed 000 §3)', () => {
  it('reproduces the seed contract vector from an answer row', () => {
    const s = buildAnswerSnapshot(SEED_ROW);
    expect(s.snapshotJson).toBe(seedVector.canonical);
    expect(s.contentHash).toBe(seedVector.hash);
    expect(s.contentHash.startsWith('b1e53847')).toBe(true);
  });

  it('has exactly the ten members, no intent', () => {
    const members = Object.keys(JSON.parse(buildAnswerSnapshot(SEED_ROW).snapshotJson) as object);
    expect(members).toEqual([
      'answerNo',
      'appCode',
      'code',
      'createTime',
      'schId',
      'status',
      'subjectId',
      'submitterId',
      'updateTime',
      'values',
    ]);
  });

  it('formats times as yyyy-MM-ddTHH:mm:ss and keeps nulls null', () => {
    const s = JSON.parse(
      buildAnswerSnapshot({
        ...SEED_ROW,
        create_time: '2026-01-02 03:04:00',
        update_time: '2026-01-02 03:05:06.789',
        subject_id: null,
        answer_no: 'NO-1',
      }).snapshotJson,
    ) as Record<string, unknown>;
    expect(s['createTime']).toBe('2026-01-02T03:04:00'); // whole minutes keep their seconds (rule 7)
    expect(s['updateTime']).toBe('2026-01-02T03:05:06'); // a fraction is dropped, as Java's pattern does
    expect(s['subjectId']).toBeNull();
    expect(s['answerNo']).toBe('NO-1');
  });

  it('keeps big integers and decimals exact: nothing passes through a JS number', () => {
    const s = buildAnswerSnapshot({
      ...SEED_ROW,
      sch_id: '9223372036854775807',
      submitter_id: '9007199254740993',
      values_json:
        '{"amount":12.50,"p":0.1000000000000000055511151231257827,"id":9007199254740993,"e":1E+2,"neg":-0.0}',
    }).snapshotJson;
    expect(s).toContain('"schId":9223372036854775807');
    expect(s).toContain('"submitterId":9007199254740993');
    expect(s).toContain(
      '"values":{"amount":12.5,"e":100,"id":9007199254740993,"neg":0,"p":0.1000000000000000055511151231257827}',
    );
  });

  it('embeds values raw: a nested intent member stays (only the root intent is dropped)', () => {
    const s = buildAnswerSnapshot({ ...SEED_ROW, values_json: '{"intent":{"x":1}}' }).snapshotJson;
    expect(s).toContain('"values":{"intent":{"x":1}}');
  });

  it('the hash is that of the canonical text, Chinese text and escapes included', () => {
    const row = { ...SEED_ROW, status: '已处理', values_json: '{"name":"张三","memo":"a\\nb \\"q\\" \\u0001"}' };
    const s = buildAnswerSnapshot(row);
    const again = canonicalize(snapshotText(row));
    expect(again.ok && again.hash).toBe(s.contentHash);
    expect(s.snapshotJson).toContain('"memo":"a\\nb \\"q\\" \\u0001"');
    expect(s.snapshotJson).toContain('"status":"已处理"');
  });

  it.each([
    ['values that smuggle members', { values_json: '{}, "schId": 6' }, 'values_json'],
    ['values that are not JSON', { values_json: '{"a":1,}' }, 'values_json'],
    ['a duplicate member in values', { values_json: '{"a":1,"a":2}' }, 'values_json'],
    ['a time that is not a DATETIME', { create_time: '21/10/2026 10:00' }, 'create_time'],
    ['a decimal in an integer column', { sch_id: '5.0' }, 'sch_id'],
    // biome-ignore lint/correctness/noPrecisionLoss: the point of the case: a number JS cannot hold exactly
    ['an unsafe JS number in an integer column', { submitter_id: 9007199254740993 }, 'submitter_id'],
  ])('refuses %s', (_name, patch, column) => {
    let error: unknown;
    try {
      buildAnswerSnapshot({ ...SEED_ROW, ...patch } as AnswerSnapshotSource);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AnswerSnapshotError);
    expect((error as AnswerSnapshotError).column).toBe(column);
  });
});

describe('answer SQL', () => {
  it('pages in (sch_id, form_uuid, answer_uuid) order with a spelled-out keyset', () => {
    expect(selectAnswerPage({ limit: 3 }).sql).toMatch(/FROM answer ORDER BY sch_id, form_uuid, answer_uuid LIMIT \?$/);
    const q = selectAnswerPage({
      schId: '5',
      formUuid: 'f',
      after: { schId: '5', formUuid: 'f', answerUuid: 'a' },
      limit: 3,
    });
    expect(q.sql).toContain('WHERE sch_id = ? AND form_uuid = ? AND answer_uuid > ? ORDER BY');
    expect(q.params).toEqual([5n, 'f', 'a', 3]);
    expect(() => selectAnswerPage({ formUuid: 'f', limit: 1 })).toThrow(TypeError);
    expect(() => selectAnswerPage({ limit: 0 })).toThrow(TypeError);
  });

  describe('against MariaDB', () => {
    let db: Db;
    // The statements run as a runner would: built by sql.ts, executed here.
    const readAnswer = async (answerUuid: string): Promise<AnswerRow | null> => {
      const { sql, params } = selectAnswerByUuid(answerUuid);
      return (await db.query<AnswerRow>(sql, params))[0] ?? null;
    };
    const readAnswerPage = (options: AnswerPageOptions): Promise<AnswerRow[]> => {
      const { sql, params } = selectAnswerPage(options);
      return db.query<AnswerRow>(sql, params);
    };
    test.beforeAll(async ({ dbs }) => {
      const rows: unknown[][] = [];
      // Two schools (one beyond 2^53), two forms, three answers each, inserted out of order.
      for (const sch of ['9007199254740993', '5']) {
        for (const form of ['f2', 'f1']) {
          for (const a of ['a3', 'a1', 'a2']) {
            rows.push([
              `${a}-${form}-${sch}`,
              form,
              1,
              BigInt(sch),
              'demo',
              'honor_apply',
              1001n,
              null,
              'processed',
              '{"n":1.50}',
              null,
              '2026-10-21 10:00:00',
              null,
              0,
              1,
            ]);
          }
        }
      }
      await dbs.admin.query(
        `INSERT INTO \`${dbs.fcName}\`.answer (answer_uuid, form_uuid, form_version, sch_id, app_code, code, submitter_id, subject_id, status, values_json, answer_no, create_time, update_time, is_deleted, answer_revision) VALUES ?`,
        [rows],
      );
      db = await openDb('FC database', dbs.fcUrl);
    });
    afterAll(async () => {
      await db?.close();
    });

    it('reads a row by uuid with BIGINTs as strings and times as text; the snapshot builds from it', async () => {
      const row = (await readAnswer('a1-f1-9007199254740993'))!;
      expect(row.sch_id).toBe('9007199254740993');
      expect(row.create_time).toBe('2026-10-21 10:00:00');
      expect(buildAnswerSnapshot(row).snapshotJson).toContain('"schId":9007199254740993');
      expect(await readAnswer('nope')).toBeNull();
    });

    it('keyset pages visit every row once, in order, across schools and forms', async () => {
      const seen: string[] = [];
      let after: ReturnType<typeof answerKeyOf> | undefined;
      for (;;) {
        const page: AnswerRow[] = await readAnswerPage({ limit: 5, ...(after ? { after } : {}) });
        seen.push(...page.map((r) => r.answer_uuid));
        if (page.length < 5) break;
        after = answerKeyOf(page.at(-1)!);
      }
      const expected = ['5', '9007199254740993'].flatMap((sch) =>
        ['f1', 'f2'].flatMap((f) => ['a1', 'a2', 'a3'].map((a) => `${a}-${f}-${sch}`)),
      );
      expect(seen).toEqual(expected);
      const oneForm = await readAnswerPage({
        schId: '5',
        formUuid: 'f2',
        after: { schId: '5', formUuid: 'f2', answerUuid: 'a1-f2-5' },
        limit: 10,
      });
      expect(oneForm.map((r) => r.answer_uuid)).toEqual(['a2-f2-5', 'a3-f2-5']);
      const oneSchool = await readAnswerPage({
        schId: '9007199254740993',
        after: { schId: '9007199254740993', formUuid: 'f1', answerUuid: 'a3-f1-9007199254740993' },
        limit: 10,
      });
      expect(oneSchool.map((r) => r.answer_uuid)).toEqual([
        'a1-f2-9007199254740993',
        'a2-f2-9007199254740993',
        'a3-f2-9007199254740993',
      ]);
    });
  });
});
