import { describe, expect, it } from 'vitest';
import { CATEGORIES } from '../../src/lib/reconcile/diff/decide.js';
import { NIGHT_COLUMNS, nightRows, nightTableRow } from '../../src/lib/reconcile/history/decide.js';
import type { LedgerPair } from '../../src/lib/reconcile/ledger/types.js';
import { formatTable } from '../../src/lib/cli/table.js';

const zero = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as LedgerPair['counts'];
const pair = (runId: string, schId: string, over: Partial<LedgerPair> = {}): LedgerPair => ({
  runId,
  schId,
  formUuid: 'f',
  result: 'DONE',
  counts: zero,
  differences: 0,
  fcRows: 1,
  shRows: 1,
  error: null,
  seconds: 1.25,
  throttledSeconds: 0,
  host: 'h',
  runStartedAt: `${runId} start`,
  finishedAt: 'x',
  ...over,
});

// Issue 36 §15: `reconcile history` a night a line, with the night's totals.
describe('nightRows: the listed pairs summed by night', () => {
  const pairs = [
    pair('n2', '1', { counts: { ...zero, IN_SYNC: 10, MISSING_LOCAL: 3 }, differences: 3 }),
    pair('n2', '2', { result: 'FAILED', seconds: 2 }),
    pair('n2', '3', { counts: { ...zero, IN_SYNC: 5, LOCAL_AHEAD: 2, MISSING_LOCAL: 1 }, differences: 3 }),
    pair('n1', '1', { counts: { ...zero, IN_SYNC: 13 } }),
  ];

  it('one row a night, newest first as listed, with its totals', () => {
    const rows = nightRows(pairs);
    expect(rows.map((r) => r['runId'])).toEqual(['n2', 'n1']);
    expect(rows[0]).toMatchObject({
      runStartedAt: 'n2 start',
      pairs: 3,
      failed: 1,
      differing: 2,
      differences: 6,
      IN_SYNC: 15,
      MISSING_LOCAL: 4,
      LOCAL_AHEAD: 2,
      seconds: 4.5,
    });
    expect(rows[1]).toMatchObject({ pairs: 1, failed: 0, differing: 0, differences: 0, IN_SYNC: 13 });
  });

  it('a night line: the categories that count rows as one text; a line fits 80 columns', () => {
    const [n2, n1] = nightRows(pairs).map(nightTableRow);
    expect(n2!['byCategory']).toBe('missing 4 · ahead 2');
    expect(n1!['byCategory']).toBe('-');
    for (const line of formatTable([n2!, n1!], NIGHT_COLUMNS, 80)) expect(line.length).toBeLessThanOrEqual(80);
  });
});
