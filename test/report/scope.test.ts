/**
 * The report's pure choices of issue 36 §14: the night the change is against (the last one of the
 * same pairs), and the folders a run recorded for `reconcile report --run-id` alone.
 */
import { describe, expect, it } from 'vitest';
import { taskWriteOf } from '../../src/lib/reconcile/all/decide.js';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import { previousNightOf, runDirsOf, type TrendPairNight } from '../../src/lib/reconcile/report/decide.js';
import type { TrendNight } from '../../src/lib/reconcile/report/types.js';

const night = (runId: string): TrendNight => ({
  runId,
  runStartedAt: '2026-12-01 01:00:00',
  counts: emptyCounts(),
  pairs: 0,
  pairsWithDifferences: 0,
  failed: 0,
});
const pairs = (runId: string, keys: string[]): TrendPairNight[] =>
  keys.map((k) => ({ runId, schId: k.split('/')[0]!, formUuid: k.split('/')[1]!, counts: emptyCounts() }));
const ALL = ['5/a', '5/b', '6/a'];

describe('previousNightOf: the last earlier night over exactly the same pairs', () => {
  const nights = ['n1', 'adhoc', 'n2', 'wider', 'n3'].map(night);
  const pn = [
    ...pairs('n1', ALL),
    ...pairs('adhoc', ['5/a']),
    ...pairs('n2', ALL),
    ...pairs('wider', [...ALL, '7/a']),
    ...pairs('n3', ALL),
  ];
  it.each([
    ['n3', ALL, 'n2'],
    ['n2', ALL, 'n1'],
    ['n1', ALL, null],
    ['adhoc', ['5/a'], null],
    ['n3', ['5/a'], 'adhoc'],
    ['wider', [...ALL, '7/a'], null],
    ['not in the ledger yet', ALL, 'n3'],
  ] as const)('%s over %j → %s', (runId, scope, expected) => {
    expect(previousNightOf(runId, scope, nights, pn)?.runId ?? null).toBe(expected);
  });
});

describe('runDirsOf: the folders the run recorded, most pairs first', () => {
  it.each([
    [[], []],
    [[{ result_json: null }, { result_json: 'not json' }, { result_json: '{"counts":{}}' }], []],
    [
      [{ result_json: '{"runDir":"/a"}' }, { result_json: '{"runDir":"/b"}' }, { result_json: '{"runDir":"/b"}' }],
      ['/b', '/a'],
    ],
    [[{ result_json: '{"runDir":""}' }, { result_json: '{"runDir":7}' }], []],
  ])('%j → %j', (tasks, dirs) => expect(runDirsOf(tasks)).toEqual(dirs));
  it('a finished pair records the run folder it was run in (all/decide.ts taskWriteOf)', () => {
    const w = taskWriteOf({ result: 'failed', exitCode: 3, error: 'x', seconds: 1 } as never, 'p', '/var/lib/fcctl/r');
    expect(runDirsOf([{ result_json: (w as { resultJson: string }).resultJson }])).toEqual(['/var/lib/fcctl/r']);
  });
});
