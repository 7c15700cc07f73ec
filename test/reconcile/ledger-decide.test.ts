import { describe, expect, it } from 'vitest';
import { ledgerEntryOf, withThrottled } from '../../src/lib/reconcile/all/decide.js';
import { CATEGORIES, emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { formatTable } from '../../src/lib/cli/table.js';
import {
  HISTORY_COLUMNS,
  historyRow,
  nightsOf,
  TABLE_ERROR_CHARS,
  tableColumns,
  tableRow,
} from '../../src/lib/reconcile/history/decide.js';
import { mayPruneNight } from '../../src/lib/reconcile/ledger/decide.js';
import type { LedgerPair } from '../../src/lib/reconcile/ledger/types.js';

const FORM = '11111111-2222-3333-4444-555555555555';
const pair = { schId: '5', formUuid: FORM };
const counts = { ...emptyCounts(), IN_SYNC: 10, MISSING_LOCAL: 2 };

describe('ledgerEntryOf: what a pair end writes into the drift ledger', () => {
  it('done: DONE with its counts, differences and row counts', () => {
    const done = {
      result: 'done',
      counts,
      differences: 2,
      fcRows: 12,
      shRows: 10,
      pairRunId: 'p',
      resumed: false,
      seconds: 1.5,
      throttledSeconds: 0.5,
    } as const;
    expect(ledgerEntryOf('n1', pair, done, 'h')).toEqual({
      runId: 'n1',
      schId: '5',
      formUuid: FORM,
      result: 'DONE',
      counts,
      differences: 2,
      fcRows: 12,
      shRows: 10,
      error: null,
      seconds: 1.5,
      throttledSeconds: 0.5,
      host: 'h',
    });
    // a result recorded before the throttled time was (an older task row's): 0
    const { throttledSeconds: _t, ...older } = done;
    expect(ledgerEntryOf('n1', pair, older, 'h')?.throttledSeconds).toBe(0);
  });
  it('withThrottled: a pair done or failed records its wait; one given back is left as it is', () => {
    const failed = { result: 'failed', exitCode: 4, error: 'x', seconds: 2 } as const;
    expect(withThrottled(failed, 1.2)).toEqual({ ...failed, throttledSeconds: 1.2 });
    expect(withThrottled({ result: 'stopped', seconds: 3 }, 1.2)).toEqual({ result: 'stopped', seconds: 3 });
  });
  it('adopted: DONE, its row counts unknown (null); a category missing from an older run.json is 0', () => {
    const { MISSING_LOCAL: _, ...partial } = counts;
    const e = ledgerEntryOf(
      'n1',
      pair,
      { result: 'adopted', counts: partial as typeof counts, differences: 0, pairRunId: 'p', seconds: 0 },
      null,
    );
    expect(e).toMatchObject({ result: 'DONE', fcRows: null, shRows: null, host: null });
    expect(Object.keys(e!.counts)).toEqual([...CATEGORIES]);
    expect(e!.counts.MISSING_LOCAL).toBe(0);
  });
  it('failed: FAILED, counts 0, its error cut to the column (1024 characters, never half a character)', () => {
    const error = `${'é'.repeat(1000)}${'😀'.repeat(100)}`;
    const e = ledgerEntryOf('n1', pair, { result: 'failed', exitCode: 4, error, seconds: 0 }, 'h')!;
    expect(e).toMatchObject({ result: 'FAILED', differences: 0, counts: emptyCounts(), fcRows: null });
    expect(Array.from(e.error!)).toHaveLength(1024);
    expect(e.error!.endsWith('😀')).toBe(true);
  });
  it('a pair given back (paused, stopped, lost) writes no ledger row', () => {
    for (const result of ['paused', 'stopped', 'lost'] as const)
      expect(ledgerEntryOf('n1', pair, { result, seconds: 1 }, 'h')).toBeNull();
  });
});

describe('reconcile history rows and columns', () => {
  const p: LedgerPair = {
    runId: 'n2',
    runStartedAt: '2026-12-01 18:30:00',
    schId: '5',
    formUuid: FORM,
    result: 'DONE',
    counts,
    differences: 2,
    fcRows: 12,
    shRows: 10,
    error: null,
    seconds: 1.5,
    throttledSeconds: 0,
    host: 'h',
    finishedAt: '2026-12-01 18:31:00',
  };
  it('the terminal table: one line per pair, no control character reaches the terminal, a long error cut', () => {
    const bad: LedgerPair = {
      ...p,
      formUuid: 'f\u001b[2J',
      result: 'FAILED',
      error: `boom\nsecond line\r\u001b]0;title\u0007 ${'x'.repeat(1000)}`,
    };
    const lines = formatTable([bad, p].map(tableRow), tableColumns([bad, p]));
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(lines[1]).toContain('boom\\u000asecond line\\u000d\\u001b]0;title\\u0007 xx');
    expect(Array.from(String(tableRow(bad)['error']))).toHaveLength(TABLE_ERROR_CHARS);
    // json and csv keep it whole
    expect(historyRow(bad)['error']).toBe(bad.error);
  });
  it('a row holds every csv column, a member per category', () => {
    const row = historyRow(p);
    expect(Object.keys(row)).toEqual(HISTORY_COLUMNS.map((c) => c.key));
    expect(row).toMatchObject({ runId: 'n2', school: '5', form: FORM, IN_SYNC: 10, MISSING_LOCAL: 2, RETIRED: 0 });
  });
  it('the table shows only the categories some listed pair counts; nights are distinct run ids', () => {
    const failed: LedgerPair = { ...p, runId: 'n1', result: 'FAILED', counts: emptyCounts(), error: 'x' };
    expect(tableColumns([p, failed]).map((c) => c.key)).toEqual([
      'runId',
      'runStartedAt',
      'school',
      'form',
      'result',
      'differences',
      'IN_SYNC',
      'MISSING_LOCAL',
      'error',
    ]);
    expect(nightsOf([p, p, failed])).toBe(2);
  });
});

describe('mayPruneNight: --keep-nights never prunes a night still being written', () => {
  const quiet = { liveLeases: 0, pending: 0, recent: false };
  it('a finished night, even one finished a moment ago, may go', () => {
    expect(mayPruneNight('n1', 'n9', quiet)).toBe(true);
    expect(mayPruneNight('n1', 'n9', { ...quiet, recent: true })).toBe(true);
  });
  it("the pruner's own run never goes", () => {
    expect(mayPruneNight('n9', 'n9', quiet)).toBe(false);
  });
  it('a lease running: a process holds a pair of it', () => {
    expect(mayPruneNight('n1', 'n9', { ...quiet, liveLeases: 1 })).toBe(false);
    expect(mayPruneNight('n1', null, { ...quiet, liveLeases: 1 })).toBe(false);
  });
  it('pairs waiting with recent activity: a process may be between claims; once quiet, abandoned', () => {
    expect(mayPruneNight('n1', 'n9', { liveLeases: 0, pending: 3, recent: true })).toBe(false);
    expect(mayPruneNight('n1', 'n9', { liveLeases: 0, pending: 3, recent: false })).toBe(true);
  });
});
