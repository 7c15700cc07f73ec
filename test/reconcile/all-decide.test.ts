import { describe, expect, it } from 'vitest';
import { isOutage } from '../../src/lib/db/outage.js';
import {
  CATEGORIES,
  type Category,
  differencesOf,
  emptyCounts,
  NOT_DIFFERENCES,
} from '../../src/lib/reconcile/diff/decide.js';
import {
  afterNoClaim,
  allExit,
  allReport,
  defaultRunId,
  mergePairs,
  pairLine,
  pairMetricsOf,
  pairResultOf,
  pairFolderProblem,
  pairStartOf,
  summarizeRun,
  taskWriteOf,
} from '../../src/lib/reconcile/all/decide.js';
import type { PairOutcome, RunAllResult, TaskRow } from '../../src/lib/reconcile/all/types.js';
import type { ReconcileRunResult } from '../../src/lib/reconcile/run/types.js';

const F1 = '00000000-0000-4000-8000-000000000001';
const F2 = '00000000-0000-4000-8000-000000000002';
const counts = (over: Partial<Record<Category, number>> = {}) => ({ ...emptyCounts(), ...over });
const done = (schId: string, differences: number): PairOutcome => ({
  schId,
  formUuid: F1,
  attempt: 1,
  outDir: `/d/${schId}`,
  result: 'done',
  counts: counts({ IN_SYNC: 3, MISSING_LOCAL: differences }),
  differences,
  fcRows: 3 + differences,
  shRows: 3,
  pairRunId: 'r',
  resumed: false,
  seconds: 1,
});
const failed = (schId: string, exitCode = 4): PairOutcome => ({
  schId,
  formUuid: F1,
  attempt: 1,
  outDir: `/d/${schId}`,
  result: 'failed',
  exitCode,
  error: 'refused',
  seconds: 0,
});
const result = (over: Partial<RunAllResult> = {}): RunAllResult => ({
  runId: '2026-12-01',
  found: { pairs: 2, atFc: 2, atSh: 2 },
  outcomes: [done('5', 0), done('6', 0)],
  summary: summarizeRun('2026-12-01', [], '2026-12-01T00:00:00.000Z'),
  stop: null,
  ...over,
});

describe('mergePairs: every pair on either side, once, in school (numeric) and form order', () => {
  it('keeps pairs found only locally and only at FC, and says where each was found', () => {
    const m = mergePairs(
      [
        { schId: '10', formUuid: F1 },
        { schId: '5', formUuid: F2 },
      ],
      [
        { schId: '5', formUuid: F2 },
        { schId: '9', formUuid: F1 },
      ],
    );
    expect(m).toEqual([
      { schId: '5', formUuid: F2, atFc: true, atSh: true },
      { schId: '9', formUuid: F1, atFc: false, atSh: true },
      { schId: '10', formUuid: F1, atFc: true, atSh: false },
    ]);
  });
  it('a school as 05 and 5 is one pair; a form in two cases is two (the scans compare exactly); large ids order as numbers', () => {
    expect(mergePairs([{ schId: '05', formUuid: F1 }], [{ schId: '5', formUuid: F1 }])).toHaveLength(1);
    expect(
      mergePairs(
        [{ schId: '5', formUuid: 'abcdef00-0000-4000-8000-00000000000a'.toUpperCase() }],
        [{ schId: '5', formUuid: 'abcdef00-0000-4000-8000-00000000000a' }],
      ),
    ).toHaveLength(2);
    expect(
      mergePairs(
        [
          { schId: '9223372036854775807', formUuid: F1 },
          { schId: '9223372036854775806', formUuid: F1 },
        ],
        [],
      ).map((p) => p.schId),
    ).toEqual(['9223372036854775806', '9223372036854775807']);
    expect(mergePairs([], [])).toEqual([]);
  });
});

describe("defaultRunId: a new run named after the SH clock's UTC time, to the minute", () => {
  it('takes the date, hour and minute of a DATETIME', () => {
    expect(defaultRunId('2026-12-01 23:59:59')).toBe('2026-12-01T23-59Z');
    expect(defaultRunId('2026-12-01T00:00:00')).toBe('2026-12-01T00-00Z');
    expect(defaultRunId('2026-11-30 18:30:07')).toBe('2026-11-30T18-30Z');
  });
  it('refuses anything else', () => {
    for (const bad of ['', '2026-12-01', 'now', '26-12-01 00:00:00', '2026-12-01 1:00:00'])
      expect(() => defaultRunId(bad)).toThrow(/UTC_TIMESTAMP/);
  });
});

describe('differencesOf', () => {
  it('counts every category but in sync, retired and created after the task start', () => {
    for (const c of CATEGORIES) expect(differencesOf(counts({ [c]: 2 }))).toBe(NOT_DIFFERENCES.includes(c) ? 0 : 2);
    expect(differencesOf(counts({ MISSING_LOCAL: 1, HASH_CONFLICT: 2, IN_SYNC: 100 }))).toBe(3);
  });
});

describe('pairResultOf and taskWriteOf: what a pair came to, what the task table records', () => {
  const summary = { counts: counts({ IN_SYNC: 2, STALE_LOCAL: 1 }), inputs: { fc: { rows: 3 }, sh: { rows: 3 } } };
  const runDone = {
    kind: 'done',
    run: { runId: 'pr' },
    resumed: true,
    scans: {},
    summary,
    outDir: '/d',
  } as unknown as ReconcileRunResult;
  it('done → DONE with the counts and differences', () => {
    const r = pairResultOf({ kind: 'run', result: runDone }, 2.5);
    expect(r).toMatchObject({
      result: 'done',
      differences: 1,
      fcRows: 3,
      shRows: 3,
      pairRunId: 'pr',
      resumed: true,
      seconds: 2.5,
    });
    const w = taskWriteOf(r);
    expect(w).toMatchObject({ kind: 'finish', state: 'DONE' });
    expect(JSON.parse((w as { resultJson: string }).resultJson)).toMatchObject({
      differences: 1,
      counts: { STALE_LOCAL: 1 },
    });
    expect(JSON.parse((w as { resultJson: string }).resultJson)).not.toHaveProperty('process');
    // the process that finished it, kept (the finish clears the claim owner)
    const by = taskWriteOf(r, 'host-a:42:abc') as { resultJson: string };
    expect(JSON.parse(by.resultJson)).toMatchObject({ process: 'host-a:42:abc', differences: 1 });
  });
  it('an error → FAILED with its exit code and message (cut to 2000 characters)', () => {
    const r = pairResultOf({ kind: 'error', exitCode: 4, message: 'x'.repeat(5000), outage: false }, 0);
    expect(r).toMatchObject({ result: 'failed', exitCode: 4 });
    const w = taskWriteOf(r) as { state: string; resultJson: string };
    expect(w.state).toBe('FAILED');
    expect((JSON.parse(w.resultJson) as { error: string }).error).toHaveLength(2000);
  });
  it('an outage (a database or disk this process cannot use) → stopped with the error, released, never FAILED', () => {
    const r = pairResultOf({ kind: 'error', exitCode: 3, message: 'cannot connect', outage: true }, 1);
    expect(r).toEqual({ result: 'stopped', error: 'cannot connect', seconds: 1 });
    expect(taskWriteOf(r)).toEqual({ kind: 'release' });
  });
  it('stopped by the pause or a signal → released, not finished', () => {
    const paused = { reason: 'r', pausedBy: 'p', pausedAt: 't', until: null, source: 'database' };
    const stoppedPaused = {
      kind: 'stopped',
      run: null,
      resumed: false,
      phase: 'scan-fc',
      reason: 'paused',
      outDir: '/d',
      paused,
    } as unknown as ReconcileRunResult;
    const stoppedSignal = {
      kind: 'stopped',
      run: null,
      resumed: false,
      phase: 'scan-fc',
      reason: 'signal',
      outDir: '/d',
    } as unknown as ReconcileRunResult;
    expect(pairResultOf({ kind: 'run', result: stoppedPaused }, 1)).toMatchObject({ result: 'paused', paused });
    expect(pairResultOf({ kind: 'run', result: stoppedSignal }, 1)).toEqual({ result: 'stopped', seconds: 1 });
    for (const r of ['paused', 'stopped', 'lost'] as const)
      expect(taskWriteOf({ result: r, seconds: 0 })).toEqual({ kind: 'release' });
  });
});

describe('summarizeRun: the run from the task table', () => {
  const row = (sch: string, state: string, result: unknown): TaskRow => ({
    id: sch,
    sch_id: sch,
    form_uuid: F1,
    state,
    claim_owner: null,
    claim_generation: '1',
    attempts: 1,
    host: 'h',
    result_json: result === null ? null : typeof result === 'string' ? result : JSON.stringify(result),
  });
  it('pairs by state, answers summed over the pairs done, the pairs with differences and the failed ones', () => {
    const s = summarizeRun(
      'n',
      [
        row('5', 'DONE', { counts: { IN_SYNC: 2, MISSING_LOCAL: 1 }, differences: 1 }),
        row('6', 'DONE', { counts: { IN_SYNC: 4 }, differences: 0 }),
        row('7', 'FAILED', { error: 'boom' }),
        row('8', 'PENDING', null),
        row('9', 'CLAIMED', null),
      ],
      'at',
    );
    expect(s.byState).toEqual({ PENDING: 1, CLAIMED: 1, DONE: 2, FAILED: 1 });
    expect(s.counts).toMatchObject({ IN_SYNC: 6, MISSING_LOCAL: 1 });
    expect(s.pairsWithDifferences).toEqual([{ schId: '5', formUuid: F1, differences: 1 }]);
    expect(s.pairsFailed).toEqual([{ schId: '7', formUuid: F1, error: 'boom' }]);
    expect(s).toMatchObject({ format: 'fcctl.reconcile.all.v1', runId: 'n', pairs: 5, updatedAt: 'at' });
  });
  it('a result that is not JSON (edited by hand) counts as nothing, never throws', () => {
    const s = summarizeRun('n', [row('5', 'DONE', '{not json'), row('6', 'FAILED', 'null')], 'at');
    expect(s.counts).toEqual(emptyCounts());
    expect(s.pairsFailed).toEqual([{ schId: '6', formUuid: F1, error: 'unknown' }]);
  });
});

describe("allExit: the exit code of this process's share", () => {
  const o = { failIfDiff: false, allowEmpty: false };
  it('0 when every pair is done, with or without differences (unless --fail-if-diff)', () => {
    expect(allExit(result({ outcomes: [done('5', 3)] }), o)).toEqual({ exitCode: 0, warning: null, reason: null });
    expect(allExit(result({ outcomes: [done('5', 3)] }), { ...o, failIfDiff: true })).toMatchObject({
      exitCode: 1,
      reason: '1 pair(s) with differences (--fail-if-diff)',
    });
    expect(allExit(result({ outcomes: [done('5', 0)] }), { ...o, failIfDiff: true }).exitCode).toBe(0);
  });
  it('1 when a pair failed or a signal stopped the run; 4 when a pair was refused by a safety check; a pause alone is 0', () => {
    expect(allExit(result({ outcomes: [done('5', 0), failed('6', 1)] }), o)).toMatchObject({
      exitCode: 1,
      reason: '1 pair(s) failed',
    });
    expect(allExit(result({ outcomes: [done('5', 0), failed('6')] }), o)).toMatchObject({
      exitCode: 4,
      reason: '1 pair(s) failed (refused by a safety check: see its pair line)',
    });
    expect(allExit(result({ stop: { by: 'signal' } }), o)).toMatchObject({
      exitCode: 1,
      reason: 'stopped by a signal (run again to continue)',
    });
    expect(allExit(result({ stop: { by: 'signal' }, outcomes: [failed('6')] }), o).exitCode).toBe(4);
    expect(allExit(result({ stop: { by: 'paused' } }), o)).toEqual({ exitCode: 0, warning: null, reason: null });
    expect(allExit(result({ stop: { by: 'paused' }, outcomes: [] }), o)).toEqual({
      exitCode: 0,
      warning: null,
      reason: null,
    });
  });
  // issue 26 §1: a pause never hides a failure, this process's or the run's
  it.each([
    ['a pair of this process failed', { outcomes: [done('5', 0), failed('6', 1)] }, 1, '1 pair(s) failed'],
    [
      'a pair of this process refused (safety)',
      { outcomes: [failed('6')] },
      4,
      '1 pair(s) failed (refused by a safety check: see its pair line)',
    ],
    [
      'the run has FAILED pairs',
      {
        runId: 'r',
        outcomes: [],
        summary: summarizeRun(
          'r',
          [
            {
              id: 1,
              sch_id: '5',
              form_uuid: F1,
              state: 'FAILED',
              claim_owner: null,
              claim_generation: 1,
              attempts: 1,
              host: 'h',
              result_json: '{"error":"x"}',
            },
          ],
          'at',
        ),
      },
      1,
      '1 pair(s) of run r failed (run it again with --run-id r to retry them)',
    ],
    ['nothing failed', { outcomes: [done('5', 2)] }, 0, null],
  ] as const)('paused, %s → exit %i', (_what, over, exitCode, reason) => {
    expect(allExit(result({ ...(over as Partial<RunAllResult>), stop: { by: 'paused' } }), o)).toEqual({
      exitCode,
      warning: null,
      reason,
    });
  });
  it('an outage: its exit code (3), with the message', () => {
    expect(allExit(result({ stop: { by: 'error', message: 'ECONNREFUSED', exitCode: 3 } }), o)).toEqual({
      exitCode: 3,
      warning: null,
      reason: 'stopped by an outage, the pairs held given back: ECONNREFUSED',
    });
  });
  it('1 when the run has FAILED pairs at its end, even those another process ran', () => {
    const failedRun = summarizeRun(
      'r',
      [
        {
          id: 1,
          sch_id: '5',
          form_uuid: F1,
          state: 'FAILED',
          claim_owner: null,
          claim_generation: 1,
          attempts: 1,
          host: 'h',
          result_json: '{"error":"x"}',
        },
      ],
      'at',
    );
    expect(allExit(result({ runId: 'r', outcomes: [], summary: failedRun }), o)).toMatchObject({
      exitCode: 1,
      reason: '1 pair(s) of run r failed (run it again with --run-id r to retry them)',
    });
    // a run id a shell would read: the flag to paste quotes it (issue 34 §11)
    expect(allExit(result({ runId: "r '$(id)", outcomes: [], summary: failedRun }), o)).toMatchObject({
      reason: `1 pair(s) of run r '$(id) failed (run it again with --run-id 'r '\\''$(id)' to retry them)`,
    });
  });
  it('1 with a warning when a filter value matched nothing, or the run was complete before this process began', () => {
    expect(allExit(result({ found: { pairs: 2, atFc: 2, atSh: 2, unmatched: ['--school 66'] } }), o)).toMatchObject({
      exitCode: 1,
      warning: 'warning: --school 66 matched no pair at FC nor at SH: a typo? (--allow-empty accepts it)',
    });
    expect(allExit(result({ outcomes: [], completeAtStart: true }), o)).toMatchObject({
      exitCode: 1,
      warning: expect.stringMatching(
        /every pair of run 2026-12-01 was done before this process began: nothing was run/,
      ),
    });
    expect(allExit(result({ outcomes: [], completeAtStart: true }), { ...o, allowEmpty: true }).exitCode).toBe(0);
  });
  it('1 with a warning when no pair was found, or none at FC; --allow-empty accepts both', () => {
    const none = result({ found: { pairs: 0, atFc: 0, atSh: 0 }, outcomes: [] });
    expect(allExit(none, o)).toMatchObject({
      exitCode: 1,
      warning: expect.stringMatching(/^warning: no \(school, form\) pair found/),
    });
    const shOnly = result({ found: { pairs: 3, atFc: 0, atSh: 3 } });
    expect(allExit(shOnly, o)).toMatchObject({
      exitCode: 1,
      warning:
        'warning: no pair found at FC while SH has 3: check the FC database and --consumer (--allow-empty accepts it)',
    });
    expect(allExit(none, { ...o, allowEmpty: true })).toEqual({ exitCode: 0, warning: null, reason: null });
    expect(allExit(shOnly, { ...o, allowEmpty: true }).exitCode).toBe(0);
  });
  // issue 26 §3: a process that joined a default run already complete exits with that run's verdict
  it('a default run joined complete: 0 when clean, 1 for its differences under --fail-if-diff, never the "reused" warning', () => {
    const withDiffs = summarizeRun(
      '2026-12-01T18-30Z',
      [
        {
          id: 1,
          sch_id: '5',
          form_uuid: F1,
          state: 'DONE',
          claim_owner: null,
          claim_generation: 1,
          attempts: 1,
          host: 'h',
          result_json: '{"counts":{"MISSING_LOCAL":2},"differences":2}',
        },
      ],
      'at',
    );
    const joined = result({
      runId: '2026-12-01T18-30Z',
      outcomes: [],
      completeAtStart: true,
      runIdGiven: false,
      summary: withDiffs,
    });
    expect(allExit(joined, o)).toEqual({ exitCode: 0, warning: null, reason: null });
    expect(allExit(joined, { ...o, failIfDiff: true })).toEqual({
      exitCode: 1,
      warning: null,
      reason: '1 pair(s) with differences (--fail-if-diff)',
    });
    expect(allExit({ ...joined, runIdGiven: true }, o)).toMatchObject({
      exitCode: 1,
      warning: expect.stringMatching(/was done before this process began/),
    });
  });
  it('a default run joined complete with nothing run: joined, a note, the metrics file left as it is (issue 36 §7)', () => {
    const o2 = { failIfDiff: false, allowEmpty: false, summaryFile: '/d/summary.json' };
    const task = { sch_id: 5, form_uuid: 'f', state: 'DONE' } as unknown as TaskRow;
    const joined = allReport(
      result({ outcomes: [], completeAtStart: true, runIdGiven: false, earlier: [task] }),
      o2,
      10,
    );
    expect(joined.fields).toMatchObject({ joined: true, pairsRun: 0 });
    expect(String(joined.fields['note'])).toMatch(/was complete before this process began: joined it and ran nothing/);
    expect(joined.outcome.unchanged).toBe(true);
    // a host that ran none of the night's pairs: its file is an earlier night's, rewritten (issue 36 §17 review)
    const none = allReport(result({ outcomes: [], completeAtStart: true, runIdGiven: false, earlier: [] }), o2, 10);
    expect(none.fields).toMatchObject({ joined: true, pairsRun: 0 });
    expect(String(none.fields['note'])).toMatch(/this host ran none of its pairs/);
    expect(none.outcome.unchanged).toBeUndefined();
    for (const other of [
      result({ outcomes: [], completeAtStart: true, runIdGiven: true }),
      result({ outcomes: [], completeAtStart: false, runIdGiven: false }),
      result({ outcomes: [done('5', 1)], completeAtStart: true, runIdGiven: false }),
      result({ outcomes: [], completeAtStart: true, runIdGiven: false, stop: { by: 'signal' } }),
    ]) {
      const r = allReport(other, o2, 10);
      expect(r.fields['joined']).toBeUndefined();
      expect(r.outcome.unchanged).toBeUndefined();
    }
  });
  it('a process that found others had done every pair is 0', () => {
    expect(allExit(result({ outcomes: [] }), o).exitCode).toBe(0);
  });
});

describe('allReport and pairLine', () => {
  it("the summary counts this process's pairs; the run's state comes from the task table; metrics mark the pause", () => {
    const r = allReport(
      result({ outcomes: [done('5', 2), failed('6', 1)] }),
      { failIfDiff: false, allowEmpty: false, summaryFile: '/d/summary.json' },
      1234,
    );
    expect(r.fields).toMatchObject({
      command: 'reconcile run',
      all: true,
      exitCode: 1,
      pairsFound: 2,
      pairsRun: 2,
      byResult: { done: 1, failed: 1 },
      pairsWithDifferences: 1,
      summaryFile: '/d/summary.json',
      seconds: 1.2,
    });
    expect(r.outcome.rowsByResult).toMatchObject({ IN_SYNC: 3, MISSING_LOCAL: 2 });
    expect(r.outcome.paused).toBe(false);
    const p = allReport(
      result({ stop: { by: 'paused' } }),
      { failIfDiff: false, allowEmpty: false, summaryFile: 's' },
      0,
    );
    expect(p.outcome).toMatchObject({ exitCode: 0, interrupted: true, paused: true });
  });
  it('a pair line names the pair, its result and where its files are', () => {
    expect(pairLine(done('5', 1))).toMatchObject({
      school: '5',
      form: F1,
      result: 'done',
      differences: 1,
      dir: '/d/5',
      attempt: 1,
    });
    expect(pairLine(failed('6'))).toEqual({
      school: '6',
      form: F1,
      result: 'failed',
      attempt: 1,
      seconds: 0,
      dir: '/d/6',
      exitCode: 4,
      error: 'refused',
      throttledSeconds: 0,
    });
    expect(pairLine({ ...failed('6'), throttledSeconds: 2.5 } as PairOutcome)['throttledSeconds']).toBe(2.5);
    expect(pairLine({ schId: '7', formUuid: F1, attempt: 2, outDir: '/d/7', result: 'lost', seconds: 3 })).toEqual({
      school: '7',
      form: F1,
      result: 'lost',
      attempt: 2,
      seconds: 3,
      dir: '/d/7',
    });
  });
});

describe('pairMetricsOf: the pairs as the metrics name them', () => {
  it('done with counts, failed with its exit code, the rest interrupted (paused said so)', () => {
    const m = pairMetricsOf(
      [
        done('5', 1),
        failed('6'),
        { schId: '7', formUuid: F1, attempt: 1, outDir: '/d/7', result: 'paused', seconds: 2 },
        { schId: '8', formUuid: F1, attempt: 1, outDir: '/d/8', result: 'lost', seconds: 2 },
      ],
      1000,
    );
    expect(m[0]).toMatchObject({
      schId: '5',
      exitCode: 0,
      finishedAtSeconds: 1000,
      durationSeconds: 1,
      counts: { MISSING_LOCAL: 1 },
    });
    expect(m[1]).toEqual({ schId: '6', formUuid: F1, exitCode: 4, finishedAtSeconds: 1000, durationSeconds: 0 });
    expect(m[2]).toMatchObject({ schId: '7', exitCode: 1, interrupted: true, paused: true });
    expect(m[3]).toEqual({
      schId: '8',
      formUuid: F1,
      exitCode: 1,
      interrupted: true,
      finishedAtSeconds: 1000,
      durationSeconds: 2,
    });
  });
});

describe('afterNoClaim: a claim that found no pair', () => {
  it('tries again while pairs are claimable (SKIP LOCKED passed rows held for a moment), whichever worker', () => {
    expect(afterNoClaim(0, { claimable: 9, heldByOthers: 1 })).toBe('retry');
    expect(afterNoClaim(0, { claimable: 1, heldByOthers: 0 })).toBe('retry');
    expect(afterNoClaim(3, { claimable: 2, heldByOthers: 0 })).toBe('retry');
  });
  it('none claimable: worker 0 waits while other processes hold pairs; the others, or with none held, leave', () => {
    expect(afterNoClaim(0, { claimable: 0, heldByOthers: 2 })).toBe('wait');
    expect(afterNoClaim(1, { claimable: 0, heldByOthers: 2 })).toBe('leave');
    expect(afterNoClaim(0, { claimable: 0, heldByOthers: 0 })).toBe('leave');
  });
});

describe("pairStartOf: what a pair directory's run.json says to do", () => {
  const D = 'digest-prod';
  const OTHER = 'digest-staging';
  const params = { schId: '5', formUuid: 'f', fcDatabase: 'fc-staging', shDatabase: 'sh-staging' };
  const run = (state: 'scanning' | 'completed', allRunId?: string, paramsDigest = D) => ({
    runId: 'pr',
    state,
    counts: state === 'completed' ? counts({ IN_SYNC: 1 }) : null,
    params,
    paramsDigest,
    ...(allRunId !== undefined ? { allRunId } : {}),
  });
  it('adopts a completed diff of this same run; restarts an unfinished run of another; runs anything else', () => {
    const start = (prev: ReturnType<typeof run> | null) => pairStartOf(prev, 'n1', D, '/d/5').kind;
    expect(start(null)).toBe('run');
    expect(start(run('completed', 'n1'))).toBe('adopt');
    expect(start(run('completed', 'n0'))).toBe('run');
    expect(start(run('completed'))).toBe('run');
    expect(start(run('scanning', 'n1'))).toBe('run');
    expect(start(run('scanning', 'n0'))).toBe('restart');
    expect(start(run('scanning'))).toBe('restart');
  });
  // issue 26 §2: a folder of other databases is neither adopted nor restarted
  it('refuses a run of other parameters, completed of this same run or not, as reconcile run does', () => {
    for (const prev of [run('completed', 'n1', OTHER), run('scanning', 'n0', OTHER), run('scanning', 'n1', OTHER)]) {
      expect(pairStartOf(prev, 'n1', D, '/d/5')).toEqual({
        kind: 'refuse',
        message:
          '/d/5 holds a run of other parameters (school 5, form f, FC fc-staging, SH sh-staging); use another --out-dir or pass --restart',
      });
    }
  });
});

describe("pairFolderProblem: a form uuid that cannot name its pair's folder", () => {
  it("refuses ., .. and empty path segments (outside the run directory, or another pair's folder); keeps the rest", () => {
    for (const f of ['../../etc', '..', '.', 'a/../b', '/abs', 'a//b', 'a/', 'a\0b'])
      expect(pairFolderProblem(f), f).toMatch(/cannot name the pair's folder/);
    for (const f of [
      '8c1f3a52-0d6e-4b7a-9c2e-5f4d3b2a1c0e',
      '</script><img src=x onerror=alert()>',
      '..a',
      'a..b',
      '...',
    ])
      expect(pairFolderProblem(f), f).toBeNull();
  });
});

describe('isOutage: a database, network or disk this process cannot use', () => {
  it('finds the code on the error or along its causes', () => {
    for (const code of [
      'ECONNREFUSED',
      'PROTOCOL_CONNECTION_LOST',
      'ER_NO_SUCH_TABLE',
      'ENOSPC',
      'ER_LOCK_WAIT_TIMEOUT',
    ]) {
      expect(isOutage(Object.assign(new Error('x'), { code }))).toBe(true);
      expect(
        isOutage(
          new Error('wrapped', { cause: new Error('deeper', { cause: Object.assign(new Error('x'), { code }) }) }),
        ),
      ).toBe(true);
    }
  });
  it("a pair's own failure is none", () => {
    for (const e of [
      new Error('holds a run of other parameters'),
      Object.assign(new Error('x'), { code: 'ER_DUP_ENTRY' }),
      Object.assign(new Error('x'), { code: 'EACCES' }),
      null,
      undefined,
      'text',
    ])
      expect(isOutage(e)).toBe(false);
  });
});
