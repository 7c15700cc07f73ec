import { describe, expect, it } from 'vitest';
import { emptyPairWarning, taskStartRefusal } from '../../src/lib/reconcile/checks.js';

const FORM = 'f0000000-0000-4000-8000-000000000000';
const scan = (dbStartedAt: string | undefined, path = '/run/fc.checkpoint.json') => ({ path, dbStartedAt });

describe('taskStartRefusal (a task start is trusted only before the FC scan began)', () => {
  it.each([
    ['a second before the scan', '2026-11-30 01:00:00', [scan('2026-11-30 01:00:01')], null],
    ['a day before the scan', '2026-11-29 01:00:00', [scan('2026-11-30 01:00:01')], null],
    ['the scan\'s own second (a row created in it, after the scan passed its key, would be ≤ the start)', '2026-11-30 01:00:01', [scan('2026-11-30 01:00:01')], /is not before the FC scan's start 2026-11-30 01:00:01/],
    ['a second after the scan', '2026-11-30 01:00:02', [scan('2026-11-30 01:00:01')], /--task-start 2026-11-30 01:00:02 is not before the FC scan's start 2026-11-30 01:00:01/],
    ['before every shard', '2026-11-30 00:59:59', [scan('2026-11-30 01:00:05', 'a'), scan('2026-11-30 01:00:00', 'b')], null],
    ['after the earliest shard only', '2026-11-30 01:00:02', [scan('2026-11-30 01:00:05', 'a'), scan('2026-11-30 01:00:00', 'b')], /not before the FC scan's start 2026-11-30 01:00:00/],
    ['a checkpoint of an older fcctl (no start recorded)', '2000-01-01 00:00:00', [scan(undefined, '/old/fc.checkpoint.json')], /FC checkpoint \/old\/fc\.checkpoint\.json does not record when its scan began .*manifest scan --restart, or reconcile run --restart/],
    ['one shard of an older fcctl among new ones', '2000-01-01 00:00:00', [scan('2026-11-30 01:00:00', 'a'), scan(undefined, 'b')], /FC checkpoint b does not record/],
  ] as const)('%s', (_name, taskStart, scans, want) => {
    const got = taskStartRefusal(taskStart, scans);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });
});

describe('emptyPairWarning (no rows on either side is most likely a typo)', () => {
  it.each([
    ['no rows anywhere', 0, 0, false, true],
    ['no rows anywhere, --allow-empty', 0, 0, true, false],
    ['rows at FC only', 3, 0, false, false],
    ['rows at SH only (all absent at FC: a finding, not a typo)', 0, 2, false, false],
    ['rows on both sides', 1, 1, false, false],
  ] as const)('%s', (_name, fcRows, shRows, allowEmpty, warns) => {
    const w = emptyPairWarning({ schId: '99', formUuid: FORM, fcRows, shRows, allowEmpty });
    if (!warns) return expect(w).toBeNull();
    expect(w).toBe(`warning: no rows at FC or SH for school 99 form ${FORM}: a wrong --school or --form? (pass --allow-empty if the pair is empty on purpose)`);
  });
});
