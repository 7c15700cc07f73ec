import { describe, expect, it } from 'vitest';
import { emptyPairWarning, taskStartRefusal } from '../../src/lib/reconcile/decide.js';

const FORM = 'f0000000-0000-4000-8000-000000000000';
const scan = (dbStartedAt: string | undefined, path = '/run/fc.checkpoint.json') => ({ path, dbStartedAt });

describe('taskStartRefusal (a task start is trusted only before the FC scan began)', () => {
  it.each([
    ['a second before the scan', '2026-11-30 01:00:00', [scan('2026-11-30 01:00:01')], null],
    ['a day before the scan', '2026-11-29 01:00:00', [scan('2026-11-30 01:00:01')], null],
    [
      "the scan's own second (a row created in it, after the scan passed its key, would be ≤ the start)",
      '2026-11-30 01:00:01',
      [scan('2026-11-30 01:00:01')],
      /is not before the FC scan's start 2026-11-30 01:00:01/,
    ],
    [
      'a second after the scan',
      '2026-11-30 01:00:02',
      [scan('2026-11-30 01:00:01')],
      /--task-start 2026-11-30 01:00:02 is not before the FC scan's start 2026-11-30 01:00:01/,
    ],
    [
      'before every shard',
      '2026-11-30 00:59:59',
      [scan('2026-11-30 01:00:05', 'a'), scan('2026-11-30 01:00:00', 'b')],
      null,
    ],
    [
      'after the earliest shard only',
      '2026-11-30 01:00:02',
      [scan('2026-11-30 01:00:05', 'a'), scan('2026-11-30 01:00:00', 'b')],
      /not before the FC scan's start 2026-11-30 01:00:00/,
    ],
    [
      'a checkpoint of an older fcctl (no start recorded)',
      '2000-01-01 00:00:00',
      [scan(undefined, '/old/fc.checkpoint.json')],
      /FC checkpoint \/old\/fc\.checkpoint\.json does not record when its scan began .*manifest scan --restart, or reconcile run --restart/,
    ],
    [
      'one shard of an older fcctl among new ones',
      '2000-01-01 00:00:00',
      [scan('2026-11-30 01:00:00', 'a'), scan(undefined, 'b')],
      /FC checkpoint b does not record/,
    ],
  ] as const)('%s', (_name, taskStart, scans, want) => {
    const got = taskStartRefusal(taskStart, scans);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });
});

describe('taskStartRefusal in UTC (reconcile run: the SH and FC clocks may be in different zones)', () => {
  const utcScan = (dbStartedAt: string, dbStartedAtUtc: string | undefined, path = '/run/fc.checkpoint.json') => ({
    path,
    dbStartedAt,
    dbStartedAtUtc,
  });
  it.each([
    // SH at +08:00, FC at UTC: as local text the task start (09:00) is after the scan (01:00:01) — every nightly run was exit 4
    [
      'FC in a zone behind SH, scan a second after the task start',
      { local: '2026-11-30 09:00:00', utc: '2026-11-30 01:00:00' },
      [utcScan('2026-11-30 01:00:01', '2026-11-30 01:00:01')],
      null,
    ],
    // SH at UTC, FC at +08:00: as local text any task start of that day passed — here the scan began before it
    [
      'FC in a zone ahead of SH, scan before the task start (a real inversion)',
      { local: '2026-11-30 01:00:05', utc: '2026-11-30 01:00:05' },
      [utcScan('2026-11-30 09:00:01', '2026-11-30 01:00:01')],
      /the task start 2026-11-30 01:00:05 UTC \(SH database clock\) is not before the FC scan's start 2026-11-30 01:00:01 UTC \(FC database clock\)/,
    ],
    [
      'the same second in UTC',
      { local: '2026-11-30 01:00:01', utc: '2026-11-30 01:00:01' },
      [utcScan('2026-11-30 01:00:01', '2026-11-30 01:00:01')],
      /is not before the FC scan's start 2026-11-30 01:00:01 UTC/,
    ],
    [
      'earliest shard in UTC',
      { local: '2026-11-30 09:00:02', utc: '2026-11-30 01:00:02' },
      [
        utcScan('2026-11-30 01:00:05', '2026-11-30 01:00:05', 'a'),
        utcScan('2026-11-30 01:00:00', '2026-11-30 01:00:00', 'b'),
      ],
      /start 2026-11-30 01:00:00 UTC/,
    ],
    [
      'a checkpoint that records the local start only (an older fcctl)',
      { local: '2000-01-01 00:00:00', utc: '2000-01-01 00:00:00' },
      [utcScan('2026-11-30 01:00:01', undefined, '/old/fc.checkpoint.json')],
      /^FC checkpoint \/old\/fc\.checkpoint\.json does not record when its scan began in UTC .*reconcile run --restart\)$/,
    ],
    [
      'no UTC task start (typed by hand): local texts, as before',
      { local: '2026-11-30 01:00:00' },
      [utcScan('2026-11-30 01:00:01', undefined)],
      null,
    ],
  ] as const)('%s', (_name, taskStart, scans, want) => {
    const got = taskStartRefusal(taskStart, scans);
    if (want === null) expect(got).toBeNull();
    else expect(got).toMatch(want);
  });

  it('the manual form says both clocks are compared as local time', () => {
    expect(taskStartRefusal('2026-11-30 01:00:02', [scan('2026-11-30 01:00:01')])).toBe(
      "--task-start 2026-11-30 01:00:02 is not before the FC scan's start 2026-11-30 01:00:01 (FC database clock, compared as local time: SH and FC must be in the same time zone): answers created at FC after the scan began could be taken as absent at FC; take the task start (SH database NOW()) before the FC scan begins",
    );
  });
});

describe('emptyPairWarning (an empty side is most likely a typo or the wrong database)', () => {
  const PAIR = `warning: no rows at FC or SH for school 99 form ${FORM}: a wrong --school or --form? (pass --allow-empty if the pair is empty on purpose)`;
  const FC = `warning: no rows at FC but 2 at SH for school 99 form ${FORM}: the wrong FC database (FCCTL_FC_DATABASE_URL)? every local row is a retire candidate (pass --allow-empty if FC is empty on purpose)`;
  it.each([
    ['no rows anywhere', 0, 0, false, PAIR],
    ['no rows anywhere, --allow-empty', 0, 0, true, null],
    ['rows at FC only (projection not filled yet: the repair plan says so)', 3, 0, false, null],
    ['rows at SH only: the wrong FC database? (was no warning)', 0, 2, false, FC],
    ['rows at SH only, --allow-empty', 0, 2, true, null],
    ['rows on both sides', 1, 1, false, null],
  ] as const)('%s', (_name, fcRows, shRows, allowEmpty, want) => {
    expect(emptyPairWarning({ schId: '99', formUuid: FORM, fcRows, shRows, allowEmpty })).toBe(want);
  });
});
