import { describe, expect, it } from 'vitest';
import type { ManifestSource } from '../../src/lib/manifest/reader.js';
import type { ManifestRow } from '../../src/lib/manifest/row.js';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import {
  diffExitCode,
  diffSummary,
  diffSummaryFields,
  parseTaskStart,
  planLineOf,
  reportRow,
  sameScanRefusal,
  summarizeDiff,
} from '../../src/lib/reconcile/diff/decide.js';
import { type DiffResult, SUMMARY_FORMAT } from '../../src/lib/reconcile/diff/types.js';

const fcRow: ManifestRow = {
  answerUuid: 'a1',
  revision: '3',
  contentHash: 'h3',
  isDeleted: false,
  schId: '5',
  createTime: '2026-11-01 00:00:00',
};
const shRow: ManifestRow = {
  answerUuid: 'a1',
  revision: '2',
  contentHash: 'h2',
  isDeleted: true,
  schId: '5',
  createTime: '2026-11-01 00:00:00',
  retiredAt: null,
};
const TASK_START = '2026-11-30 01:00:00';

describe('reconcile diff: --task-start', () => {
  it.each([
    ['2026-11-30 01:00:00', '2026-11-30 01:00:00'],
    ['2026-11-30T01:00:00', '2026-11-30 01:00:00'],
    [' 2026-11-30 01:00:00 ', '2026-11-30 01:00:00'],
  ])('%j → %j', (text, expected) => {
    expect(parseTaskStart(text)).toBe(expected);
  });
  it.each(['2026-13-01 00:00:00', '2026-02-30 00:00:00', '2026-11-30 01:00:00.5', '0999-01-01 00:00:00', 'yesterday'])(
    '%j is refused (exit 2)',
    (text) => {
      expect(() => parseTaskStart(text)).toThrow(/--task-start .* is not a time like 2026-11-30 01:00:00/);
    },
  );
});

describe('reconcile diff: manifests of one scan', () => {
  const scan = (schId: string, formUuid: string, shards: (string | null)[]) => ({ schId, formUuid, shards });
  it.each([
    ['the same school, form and shards', scan('5', 'f', [null]), scan('5', 'f', [null]), null],
    [
      'another school',
      scan('5', 'f', [null]),
      scan('6', 'f', [null]),
      'the manifests are of different scans: FC school 5 form f, SH school 6 form f',
    ],
    [
      'another form',
      scan('5', 'f', [null]),
      scan('5', 'g', [null]),
      'the manifests are of different scans: FC school 5 form f, SH school 5 form g',
    ],
    [
      'other shards',
      scan('5', 'f', ['1/2']),
      scan('5', 'f', ['2/2']),
      'the manifests cover different parts of the key space: FC shards 1/2, SH shards 2/2',
    ],
    [
      'no shard against one',
      scan('5', 'f', []),
      scan('5', 'f', ['1/2']),
      'the manifests cover different parts of the key space: FC shards none, SH shards 1/2',
    ],
  ] as const)('%s', (_name, fc, sh, expected) => {
    expect(sameScanRefusal(fc, sh)).toBe(expected);
  });
});

describe('reconcile diff: the lines of an answer', () => {
  it('a report row: both sides, isDeleted as 0/1, empty cells for the missing side', () => {
    expect(reportRow('STALE_LOCAL', fcRow, shRow)).toEqual([
      'STALE_LOCAL',
      'a1',
      '5',
      '3',
      'h3',
      '0',
      '2',
      'h2',
      '1',
      '2026-11-01 00:00:00',
      '',
    ]);
    expect(reportRow('MISSING_LOCAL', fcRow, null)).toEqual([
      'MISSING_LOCAL',
      'a1',
      '5',
      '3',
      'h3',
      '0',
      '',
      '',
      '',
      '',
      '',
    ]);
  });
  it.each([
    [
      'MISSING_LOCAL',
      fcRow,
      null,
      'plan',
      { expectedRevision: null, expectedHash: null, expectedIsDeleted: null, fcRevision: '3' },
    ],
    [
      'STALE_LOCAL',
      fcRow,
      shRow,
      'plan',
      { expectedRevision: '2', expectedHash: 'h2', expectedIsDeleted: true, fcContentHash: 'h3' },
    ],
    ['HASH_CONFLICT', fcRow, shRow, 'plan', { category: 'HASH_CONFLICT' }],
    ['LOCAL_AHEAD', fcRow, shRow, 'ahead', { category: 'LOCAL_AHEAD', formUuid: 'f' }],
    [
      'ABSENT_AT_FC',
      null,
      shRow,
      'retire',
      { expectedRevision: '2', expectedIsDeleted: true, localCreateTime: '2026-11-01 00:00:00', taskStart: TASK_START },
    ],
  ] as const)('%s goes to the %s file', (category, f, l, file, line) => {
    const planned = planLineOf(category, f, l, 'f', TASK_START);
    expect(planned?.file).toBe(file);
    expect(planned?.line).toMatchObject(line);
  });
  it.each([
    'IN_SYNC',
    'RETIRED',
    'RETIRED_PRESENT_AT_FC',
    'ABSENT_CREATED_AFTER_TASK_START',
    'ABSENT_CREATE_TIME_NULL',
  ] as const)('%s has no plan line', (category) => {
    expect(planLineOf(category, null, shRow, 'f', TASK_START)).toBeNull();
  });
});

describe('reconcile diff: summary, exit code, summary line', () => {
  const source = (side: 'fc' | 'sh', rows: number): ManifestSource =>
    ({
      side,
      file: `/m/${side}.jsonl`,
      checkpoints: [],
      schId: '5',
      formUuid: 'f',
      shards: [null],
      wholeKeySpace: true,
      bytes: rows * 100,
      rows,
      completedAt: '2026-11-30T02:00:00.000Z',
    }) as unknown as ManifestSource;
  const counts = { ...emptyCounts(), IN_SYNC: 5, STALE_LOCAL: 2, RETIRED: 1, ABSENT_AT_FC: 1 };
  const summary = diffSummary({
    taskStart: TASK_START,
    fc: source('fc', 7),
    sh: source('sh', 9),
    sha256: { fc: 'hf', sh: 'hs' },
    counts,
    outputs: { 'repair-plan.jsonl': { rows: 2, sha256: 'p' }, 'retire-candidates.jsonl': { rows: 1, sha256: 'r' } },
    createdAt: 't',
  });
  const done: DiffResult = { kind: 'done', summary, outDir: '/out' };
  const stopped: DiffResult = { kind: 'stopped', reason: 'SIGINT', answers: 20_000 };
  it('differences count every category but IN_SYNC and RETIRED', () => {
    expect(summary).toMatchObject({
      format: SUMMARY_FORMAT,
      differences: 3,
      wholeKeySpace: true,
      inputs: { fc: { rows: 7, sha256: 'hf' }, sh: { rows: 9, sha256: 'hs' } },
    });
  });
  it.each([
    ['written', done, 0],
    ['stopped', stopped, 1],
  ] as const)('%s → exit %d', (_name, result, code) => {
    expect(diffExitCode(result)).toBe(code);
  });
  it('the summary fields: an output not written counts 0', () => {
    expect(diffSummaryFields(done as Extract<DiffResult, { kind: 'done' }>)).toEqual({
      taskStart: TASK_START,
      schId: '5',
      formUuid: 'f',
      fcRows: 7,
      shRows: 9,
      differences: 3,
      repairPlan: 2,
      localAhead: 0,
      retireCandidates: 1,
      outDir: '/out',
    });
  });
  it('the summary line, written and stopped', () => {
    expect(summarizeDiff(done, 2340)).toEqual({
      fields: {
        command: 'reconcile diff',
        exitCode: 0,
        ...diffSummaryFields(done as Extract<DiffResult, { kind: 'done' }>),
        seconds: 2.3,
      },
      counts: summary.counts,
    });
    expect(summarizeDiff(stopped, 100)).toEqual({
      fields: {
        command: 'reconcile diff',
        exitCode: 1,
        stoppedBy: 'signal',
        answers: 20_000,
        written: false,
        seconds: 0.1,
      },
    });
  });
});
