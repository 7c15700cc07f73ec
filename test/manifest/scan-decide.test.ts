import { describe, expect, it } from 'vitest';
import { type Checkpoint, CHECKPOINT_FORMAT } from '../../src/lib/manifest/checkpoint.js';
import {
  committedCheckpoint,
  freshCheckpoint,
  outputPlan,
  pageReports,
  resumePlan,
  scanExitCode,
  summarizeScan,
} from '../../src/lib/manifest/scan/decide.js';
import type { QueuedPage, ScanResult } from '../../src/lib/manifest/scan/types.js';

const params = {
  side: 'sh',
  database: 'db:3306/sh',
  schId: '5',
  formUuid: 'f',
  shard: null,
  out: '/x/sh.jsonl',
} as const;
const base = freshCheckpoint({
  params,
  digest: 'd1',
  size: 200,
  emptySha256: 'e0',
  at: '2026-12-01T00:00:00.000Z',
  dbStarted: { local: '2026-12-01 08:00:00', utc: '2026-12-01 00:00:00' },
});
const cp = (over: Partial<Checkpoint>): Checkpoint => ({ ...base, ...over });
const page = (rows: number, last: string | null, completed = false, bytes = rows * 10): QueuedPage => ({
  rows,
  last,
  completed,
  bytes: Buffer.alloc(bytes),
});

describe('manifest scan: the resume plan', () => {
  const path = '/x/sh.checkpoint.json';
  it.each([
    ['no checkpoint', null, false, { kind: 'fresh', restarted: false }],
    ['no checkpoint, --restart', null, true, { kind: 'fresh', restarted: false }],
    ['these parameters', cp({}), false, { kind: 'resume', previous: cp({}) }],
    ['these parameters, --restart', cp({}), true, { kind: 'fresh', restarted: true }],
    ['other parameters, --restart', cp({ paramsDigest: 'other' }), true, { kind: 'fresh', restarted: true }],
  ] as const)('%s', (_name, previous, restart, expected) => {
    expect(resumePlan({ previous, digest: 'd1', restart, checkpointPath: path })).toEqual(expected);
  });
  it('other parameters without --restart: refused, naming the other scan and --restart', () => {
    const plan = resumePlan({
      previous: cp({ paramsDigest: 'other' }),
      digest: 'd1',
      restart: false,
      checkpointPath: path,
    });
    expect(plan).toEqual({
      kind: 'refuse',
      message: `checkpoint ${path} belongs to another scan (side sh, school 5, form f, shard none, out /x/sh.jsonl, database db:3306/sh); pass --restart to discard it`,
    });
  });
});

describe('manifest scan: what a resumed output allows', () => {
  const at100 = { outputBytes: 100, sha256: 'h', completed: false };
  it.each([
    ['exactly the checkpointed length', at100, 100, 'h', { kind: 'continue', truncatedBytes: 0 }],
    ['a page written after the checkpoint', at100, 130, 'h', { kind: 'continue', truncatedBytes: 30 }],
    ['a complete scan, nothing after it', { ...at100, completed: true }, 100, 'h', { kind: 'complete' }],
  ] as const)('%s', (_name, previous, size, prefix, expected) => {
    expect(outputPlan(previous, 'o.jsonl', size, prefix)).toEqual(expected);
  });
  it.each([
    ['missing', -1, null, /output o\.jsonl is missing, shorter than the 100 bytes/],
    [
      'shorter',
      60,
      null,
      /output o\.jsonl is 60 bytes, shorter than the 100 bytes its checkpoint records; pass --restart/,
    ],
    ['changed', 100, 'other', /the first 100 bytes of o\.jsonl changed since they were checkpointed/],
  ] as const)('refused: %s', (_name, size, prefix, message) => {
    const plan = outputPlan(at100, 'o.jsonl', size, prefix);
    expect(plan.kind).toBe('refuse');
    expect(plan.kind === 'refuse' && plan.message).toMatch(message);
  });
  it('refused: bytes after a complete scan', () => {
    expect(outputPlan({ ...at100, completed: true }, 'o.jsonl', 103, 'h')).toEqual({
      kind: 'refuse',
      message: 'output o.jsonl has 3 bytes after the end of its completed scan; pass --restart to scan again',
    });
  });
});

describe('manifest scan: checkpoints and page reports', () => {
  it('a fresh checkpoint has nothing written and the database start', () => {
    expect(base).toMatchObject({
      format: CHECKPOINT_FORMAT,
      cursor: null,
      pages: 0,
      rows: 0,
      outputBytes: 0,
      sha256: 'e0',
      completed: false,
      completedAt: null,
      dbStartedAt: '2026-12-01 08:00:00',
      dbStartedAtUtc: '2026-12-01 00:00:00',
    });
  });
  it('a commit of several pages moves cursor, rows, pages and bytes; an empty last page keeps the cursor', () => {
    const before = cp({ cursor: 'a', pages: 2, rows: 7, outputBytes: 70 });
    const batch = [page(3, 'c'), page(0, null, true, 0)];
    expect(committedCheckpoint(before, batch, 'h2', 't')).toMatchObject({
      cursor: 'c',
      pages: 4,
      rows: 10,
      outputBytes: 100,
      sha256: 'h2',
      completed: true,
      updatedAt: 't',
      completedAt: 't',
    });
    expect(committedCheckpoint(before, [page(1, 'd')], 'h3', 't').completedAt).toBeNull();
    expect(pageReports(before, batch)).toEqual([
      { page: 3, pageRows: 3, rows: 10, outputBytes: 100, cursor: 'c', completed: false },
      { page: 4, pageRows: 0, rows: 10, outputBytes: 100, cursor: 'c', completed: true },
    ]);
  });
});

describe('manifest scan: exit code and summary', () => {
  const result = (over: Partial<ScanResult>, c: Partial<Checkpoint>): ScanResult => ({
    checkpoint: cp(c),
    checkpointPath: '/x/cp.json',
    resumed: false,
    alreadyComplete: false,
    restarted: false,
    truncatedBytes: 0,
    rowsThisRun: 0,
    pagesThisRun: 0,
    stoppedBy: null,
    ...over,
  });
  it.each([
    ['complete', { completed: true }, 0],
    ['stopped early', { completed: false }, 1],
  ] as const)('%s → exit %d', (_name, c, code) => {
    expect(scanExitCode(result({}, c))).toBe(code);
  });
  it('the summary: sha256 only once complete, any stop reason reads "signal", seconds to a tenth', () => {
    const s = summarizeScan(
      { side: 'sh', schId: '5', formUuid: 'f', shard: { index: 2, count: 4 } },
      result({ stoppedBy: 'SIGTERM', rowsThisRun: 9 }, { completed: false, sha256: 'h', rows: 9 }),
      1234,
    );
    expect(s).toMatchObject({
      command: 'manifest scan',
      exitCode: 1,
      shard: '2/4',
      out: '/x/sh.jsonl',
      checkpoint: '/x/cp.json',
      sha256: null,
      rows: 9,
      rowsThisRun: 9,
      stoppedBy: 'signal',
      seconds: 1.2,
    });
    expect(
      summarizeScan(
        { side: 'fc', schId: '5', formUuid: 'f', shard: null },
        result({}, { completed: true, sha256: 'h' }),
        50,
      ),
    ).toMatchObject({ exitCode: 0, shard: null, sha256: 'h', stoppedBy: null, seconds: 0.1 });
  });
});
