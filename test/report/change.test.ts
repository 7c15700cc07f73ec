/** The headline's change: each night's counts over the pairs done on both (decide.ts `changeBasis`). */
import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { changeBasis, previousNightOf, type TrendPairNight } from '../../src/lib/reconcile/report/decide.js';

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

describe('changeBasis: pairs gone since that night are left out too', () => {
  it('a pair of that night not run tonight', () => {
    const b = changeBasis([{ key: '5/a', counts: counts(100) }], 'n1', [then('5/a', 90), then('5/b', 7)]);
    expect([b.now.IN_SYNC, b.before.IN_SYNC, b.leftOut]).toEqual([100, 90, 2 - 1]);
  });
});

describe('previousNightOf: a fleet that gained or lost a few pairs is the same scope', () => {
  const fleet = Array.from({ length: 20 }, (_, i) => `5/f${String(i).padStart(2, '0')}`);
  const night = (runId: string) => ({
    runId,
    runStartedAt: '2026-12-01 01:00:00',
    counts: emptyCounts(),
    pairs: 0,
    pairsWithDifferences: 0,
    failed: 0,
  });
  const of = (runId: string, keys: readonly string[]) => keys.map((k) => ({ ...then(k, 1), runId }));
  const nights = ['n1', 'adhoc', 'school', 'n2'].map(night);
  const pn = [...of('n1', fleet), ...of('adhoc', ['5/f00']), ...of('school', fleet.slice(0, 10)), ...of('n2', fleet)];
  it.each([
    ['the same pairs', 'n3', fleet, 'n2'],
    ['one pair more (a new form)', 'n3', [...fleet, '6/new'], 'n2'],
    ['one pair fewer', 'n3', fleet.slice(1), 'n2'],
    ['a quarter more: another scope', 'n3', [...fleet, ...fleet.slice(0, 5).map((k) => `7${k.slice(1)}`)], null],
    ['an ad-hoc run of one pair: only the ad-hoc run', 'adhoc2', ['5/f00'], 'adhoc'],
    ['half the fleet: only its own', 'school2', fleet.slice(0, 10), 'school'],
  ] as const)('%s', (_n, runId, scope, expected) => {
    expect(previousNightOf(runId, scope, nights, pn)?.runId ?? null).toBe(expected);
  });
});
