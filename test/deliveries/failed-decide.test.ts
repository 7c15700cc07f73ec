import { describe, expect, it } from 'vitest';
import { LineError } from '../../src/lib/files/record-file.js';
import {
  checkAfter,
  checkOperationPrefix,
  failedFilterOf,
  failedOperationId,
  MAX_OPERATION_PREFIX_LENGTH,
  replayInputColumns,
  replayInputRow,
} from '../../src/lib/deliveries/failed/decide.js';
import { ALL_FAILED, failedSql } from '../../src/lib/deliveries/failed/sql.js';
import { parseReplayFile } from '../../src/lib/deliveries/replay/input.js';

const ROW = {
  id: '812',
  eventId: '0b1c0000-0000-4000-8000-000000000001',
  state: 'DEAD',
  answerUuid: '5f0a0000-0000-4000-8000-00000000a001',
  answerRevision: '3',
  retryCount: 8,
  nextRetryAt: null,
  lastError: 'NO_ROUTE',
  updateTime: '2026-10-22 10:49:00',
  superseded: false,
};

describe('a listed row as a replay input line', () => {
  it('the members replay reads first, the operation id only with a prefix', () => {
    expect(replayInputRow(ROW, null)).toEqual({
      answerUuid: ROW.answerUuid,
      expectedRevision: '3',
      eventId: ROW.eventId,
      state: 'DEAD',
      retryCount: 8,
      nextRetryAt: null,
      lastError: 'NO_ROUTE',
      updateTime: ROW.updateTime,
      id: '812',
    });
    expect(Object.keys(replayInputRow(ROW, 'INC-42'))).toEqual(replayInputColumns('INC-42'));
    expect(Object.keys(replayInputRow(ROW, null))).toEqual(replayInputColumns(null));
    expect(replayInputRow(ROW, 'INC-42')['operationId']).toBe(`INC-42:${ROW.eventId}`);
  });
  it("a line of it is a valid replay request, asking for the row's own revision", () => {
    expect(parseReplayFile(`${JSON.stringify(replayInputRow(ROW, 'INC-42'))}\n`)).toEqual([
      {
        line: 1,
        answerUuid: ROW.answerUuid,
        expectedRevision: '3',
        operationId: failedOperationId('INC-42', ROW.eventId),
      },
    ]);
  });
  it('the longest prefix with the longest event id is still an operation id (≤ 128)', () => {
    expect(MAX_OPERATION_PREFIX_LENGTH).toBe(91);
    expect(failedOperationId('p'.repeat(91), ROW.eventId)).toHaveLength(128);
  });
});

describe('checks of --after, --operation-prefix, --state, --reason', () => {
  const msg = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      if (e instanceof LineError) return e.message;
      throw e;
    }
    return null;
  };
  it.each([
    ['1', null],
    ['812', null],
    ['9223372036854775807', null],
    ['0', 'not a row id'],
    ['007', 'not a row id'],
    ['-3', 'not a row id'],
    ['1.5', 'not a row id'],
    ['x', 'not a row id'],
    ['1'.repeat(20), 'not a row id'],
  ])('--after %j', (value, problem) => {
    const m = msg(() => checkAfter(value));
    if (problem === null) expect(m).toBeNull();
    else expect(m).toContain(problem);
  });
  it.each([
    ['INC-42', null],
    ['p'.repeat(91), null],
    ['事故-1', null],
    ['', 'is empty'],
    ['p'.repeat(92), 'longer than 91'],
    [' INC', 'surrounding spaces'],
    ['IN\tC', 'control characters'],
  ])('--operation-prefix %j', (value, problem) => {
    const m = msg(() => checkOperationPrefix(value));
    if (problem === null) expect(m).toBeNull();
    else expect(m).toContain(problem);
  });
  it.each([
    [{}, ALL_FAILED],
    [{ state: 'FAILED' }, { state: 'FAILED', reason: null }],
    [
      { state: 'DEAD', reason: 'NO_ROUTE' },
      { state: 'DEAD', reason: 'NO_ROUTE' },
    ],
    [{ reason: 'SNAPSHOT_HASH_MISMATCH' }, { state: null, reason: 'SNAPSHOT_HASH_MISMATCH' }],
    [{ state: 'PENDING' }, '--state "PENDING" is not FAILED or DEAD'],
    [{ state: 'dead' }, 'is not FAILED or DEAD'],
    [{ reason: 'no_route' }, '--reason "no_route" is not a reason code send writes'],
    [{ reason: 'NACK: 406' }, 'is not a reason code'],
    [{ reason: 'toString' }, 'is not a reason code'],
  ])('filter %j', (flags, expected) => {
    if (typeof expected === 'string') expect(msg(() => failedFilterOf(flags))).toContain(expected);
    else expect(failedFilterOf(flags)).toEqual(expected);
  });
});

describe('failed SQL (as text)', () => {
  it('offset pages and keyset pages share one order, by row id descending, reading one extra row', () => {
    const offset = failedSql.page('k', '5', ALL_FAILED, { page: 3 }, 50);
    expect(offset.sql).toContain(
      "WHERE consumer_app_key = ? AND consumer_school_id = ? AND state IN ('FAILED', 'DEAD') ORDER BY id DESC LIMIT ? OFFSET ?",
    );
    expect(offset.params).toEqual(['k', '5', 51, 100]);
    const keyset = failedSql.page('k', '5', ALL_FAILED, { after: '812' }, 50);
    expect(keyset.sql).toMatch(/AND id < CAST\(\? AS UNSIGNED\) ORDER BY id DESC LIMIT \?$/);
    expect(keyset.params).toEqual(['k', '5', '812', 51]);
  });
  it('the filter narrows the page and the totals alike', () => {
    const f = { state: 'DEAD' as const, reason: 'NO_ROUTE' };
    const page = failedSql.page('k', '5', f, { after: '9' }, 10);
    expect(page.sql).toContain("state = ? AND SUBSTRING_INDEX(last_error, ':', 1) = ? AND id < CAST(? AS UNSIGNED)");
    expect(page.params).toEqual(['k', '5', 'DEAD', 'NO_ROUTE', '9', 11]);
    const total = failedSql.total('k', '5', f);
    expect(total.sql).toContain("state = ? AND SUBSTRING_INDEX(last_error, ':', 1) = ? GROUP BY state");
    expect(total.params).toEqual(['k', '5', 'DEAD', 'NO_ROUTE']);
  });
});
