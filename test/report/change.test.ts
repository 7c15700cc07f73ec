/** The headline's change: each night's counts over the pairs done on both (decide.ts `changeBasis`). */
import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { changeBasis, type TrendPairNight } from '../../src/lib/reconcile/report/decide.js';

const counts = (inSync: number, missing = 0) => ({ ...emptyCounts(), IN_SYNC: inSync, MISSING_LOCAL: missing });
const then = (key: string, inSync: number, result?: string): TrendPairNight => ({
  runId: 'n1',
  schId: key.split('/')[0]!,
  formUuid: key.split('/')[1]!,
  counts: counts(inSync),
  ...(result === undefined ? {} : { result }),
});

describe('changeBasis', () => {
  it.each([
    // [tonight, the previous night's pairs, IN_SYNC now, before, left out]
    [
      'all done both nights',
      [
        ['5/a', 100],
        ['5/b', 96],
      ],
      [then('5/a', 100), then('5/b', 90)],
      196,
      190,
      0,
    ],
    [
      'a pair failed then',
      [
        ['5/a', 100],
        ['5/b', 96],
      ],
      [then('5/a', 100), then('5/b', 0, 'FAILED')],
      100,
      100,
      1,
    ],
    [
      'a pair failed tonight',
      [
        ['5/a', 100],
        ['5/b', null],
      ],
      [then('5/a', 100), then('5/b', 96)],
      100,
      100,
      1,
    ],
    ['no result recorded: done', [['5/a', 100]], [then('5/a', 98)], 100, 98, 0],
    ['another night’s rows are not this one’s', [['5/a', 100]], [{ ...then('5/a', 1), runId: 'n0' }], 0, 0, 1],
  ] as const)('%s', (_name, tonight, pn, now, before, leftOut) => {
    const t = tonight.map(([key, n]) => ({ key, counts: n === null ? null : counts(n) }));
    const b = changeBasis(t, 'n1', pn);
    expect([b.now.IN_SYNC, b.before.IN_SYNC, b.leftOut]).toEqual([now, before, leftOut]);
  });
});
