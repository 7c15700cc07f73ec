import { describe, expect, it } from 'vitest';
import { EnvironmentError } from '../../src/lib/cli/exit.js';
import {
  type ReplayEnd,
  type ReplayResult,
  replayExitCode,
  replayStopError,
  summarizeReplay,
} from '../../src/lib/deliveries/replay/decide.js';
import { replaySource } from '../../src/lib/deliveries/replay/input.js';

const UUID = '5f0a0000-0000-4000-8000-00000000a001';
const result = (code: ReplayResult['code'], repeated = false, stillFailed = false): ReplayResult => ({
  line: 2,
  answerUuid: UUID,
  expectedRevision: '3',
  operationId: 'op',
  code,
  reason: 'r',
  eventId: null,
  repeated,
  stillFailed,
});
const end = (over: Partial<ReplayEnd> = {}): ReplayEnd => ({
  results: [],
  notRun: 0,
  stoppedBy: 'done',
  error: null,
  ...over,
});

describe('replayExitCode', () => {
  const table: Array<[string, Partial<ReplayEnd>, number]> = [
    ['nothing asked', {}, 0],
    ['queued and already delivered', { results: [result('QUEUED'), result('ALREADY_DELIVERED')] }, 0],
    ['a refused item', { results: [result('QUEUED'), result('REVISION_MISMATCH')] }, 1],
    ['an operation conflict', { results: [result('OPERATION_CONFLICT')] }, 1],
    ['a repeated QUEUED answer whose row failed again since', { results: [result('QUEUED', true, true)] }, 1],
    ['a repeated QUEUED answer whose row did not fail again', { results: [result('QUEUED', true)] }, 0],
    ['an item not run', { results: [result('QUEUED')], notRun: 1, stoppedBy: 'signal' }, 1],
    ['a database error', { results: [result('QUEUED')], notRun: 3, stoppedBy: 'error', error: new Error('gone') }, 3],
  ];
  it.each(table)('%s → %i', (_, over, code) => expect(replayExitCode(end(over))).toBe(code));
});

describe('summarizeReplay', () => {
  it.each([
    ['all selected, all done', false, [result('QUEUED')], 0],
    ['more rows matched than one run takes: not all done', true, [result('QUEUED')], 1],
    ['more matched and a refusal: still 1', true, [result('REVISION_MISMATCH')], 1],
  ] as const)('replay --failed: %s → exit %i', (_, more, results, code) => {
    expect(
      summarizeReplay(end({ results: [...results] }), { items: 1, dryRun: false, elapsedMs: 1, json: true, more })
        .summary.exitCode,
    ).toBe(code);
  });
  const e = end({
    results: [result('QUEUED'), result('QUEUED', true), result('NO_DELIVERY_ROW')],
    notRun: 1,
    stoppedBy: 'max-seconds',
  });
  it('JSON: every code with its count, inside the summary, in this key order', () => {
    const { summary, counts } = summarizeReplay(e, { items: 4, dryRun: false, elapsedMs: 1_260, json: true });
    expect(counts).toBeUndefined();
    expect(summary).toEqual({
      command: 'deliveries replay',
      exitCode: 1,
      dryRun: false,
      items: 4,
      answered: 3,
      byCode: {
        QUEUED: 2,
        ALREADY_DELIVERED: 0,
        GRANT_REVOKED: 0,
        REVISION_MISMATCH: 0,
        NO_DELIVERY_ROW: 1,
        OPERATION_CONFLICT: 0,
      },
      repeated: 1,
      repeatedStillFailed: 0,
      refused: 1,
      notRun: 1,
      stoppedBy: 'max-seconds',
      seconds: 1.3,
    });
    expect(Object.keys(summary)).toEqual([
      'command',
      'exitCode',
      'dryRun',
      'items',
      'answered',
      'byCode',
      'repeated',
      'repeatedStillFailed',
      'refused',
      'notRun',
      'stoppedBy',
      'seconds',
    ]);
  });
  it('a terminal: only the codes that occurred, beside the summary', () => {
    const { summary, counts } = summarizeReplay(e, { items: 4, dryRun: true, elapsedMs: 40, json: false });
    expect(counts).toEqual({ QUEUED: 2, NO_DELIVERY_ROW: 1 });
    expect(summary).not.toHaveProperty('byCode');
    expect(summary).toMatchObject({ dryRun: true, seconds: 0 });
  });
});

describe('replayStopError', () => {
  it('none without an error', () => expect(replayStopError(null)).toBeNull());
  it('an environment error is raised as it is', () => {
    const e = new EnvironmentError('cannot connect');
    expect(replayStopError(e)).toBe(e);
  });
  it('a database error: its first line, a hint for a missing schema, exit 3', () => {
    const missing = replayStopError(
      Object.assign(new Error("Table 'x.fcctl_replay_operation' doesn't exist\nmore"), { code: 'ER_NO_SUCH_TABLE' }),
    )!;
    expect(missing).toBeInstanceOf(EnvironmentError);
    expect(missing.message).toBe(
      "replay stopped by a database error: Table 'x.fcctl_replay_operation' doesn't exist (schema missing: run `fcctl db init --side fc`)",
    );
    expect(replayStopError('boom')!.message).toBe('replay stopped by a database error: boom');
  });
});

describe('replaySource: --from or the three single-request flags', () => {
  it('a file', () => expect(replaySource({ from: '-' })).toEqual({ from: '-' }));
  it('one request, checked and canonical', () => {
    expect(replaySource({ answer: UUID, expectedRevision: '007', operationId: 'inc-1' })).toEqual({
      single: { answerUuid: UUID, expectedRevision: '7', operationId: 'inc-1' },
    });
  });
  it.each([
    [{ from: 'x.csv', answer: UUID }, '--from cannot be combined with --answer, --expected-revision or --operation-id'],
    [
      { answer: UUID, operationId: 'x' },
      'give --answer, --expected-revision and --operation-id for one replay, --from FILE for a batch, or --failed --operation-prefix P for every FAILED/DEAD row',
    ],
    [{ answer: 'nope', expectedRevision: '1', operationId: 'x' }, '--answer "nope" is not a UUID'],
    [{ answer: UUID, expectedRevision: '-1', operationId: 'x' }, '--expected-revision "-1" is not a whole number ≥ 0'],
  ])('%j is refused (exit 2)', (flags, message) => {
    expect(() => replaySource(flags)).toThrow(message);
  });
});
