/**
 * The pure exit codes and summary lines of the three apply-command verbs: what the commands print
 * and exit with, decided without a database or a flow center.
 */
import { describe, expect, it } from 'vitest';
import { EnvironmentError, ExitCode } from '../../src/lib/cli/exit.js';
import {
  countReport,
  emptySummary,
  resolveExitCode,
  resolveRowsByResult,
  resolveStopMessage,
  type ResolveSummary,
  type RowReport,
  summarizeResolve,
} from '../../src/lib/apply-command/resolve-unknown/decide.js';
import {
  requeueByCode,
  requeueExitCode,
  requeueRunError,
  type RequeueRunResult,
  summarizeRequeue,
} from '../../src/lib/apply-command/requeue/decide.js';
import {
  applyScanExitCode,
  type ApplyScanReport,
  summarizeApplyScan,
} from '../../src/lib/apply-command/scan/decide.js';

const summary = (over: Partial<ResolveSummary> = {}): ResolveSummary => ({ ...emptySummary(), ...over });

describe('resolve-unknown: exit code', () => {
  it.each<[string, Partial<ResolveSummary>, number]>([
    ['drained, nothing failed', {}, ExitCode.OK],
    ['max-rows and max-seconds are budgets, not failures', { stoppedBy: 'max-seconds', done: 3 }, ExitCode.OK],
    ['a FAILED row', { failed: 1 }, ExitCode.ITEMS_FAILED],
    ['a DEAD row', { dead: 2 }, ExitCode.ITEMS_FAILED],
    ['a signal', { stoppedBy: 'signal' }, ExitCode.ITEMS_FAILED],
    ['a signal with failed rows', { stoppedBy: 'signal', failed: 1 }, ExitCode.ITEMS_FAILED],
    ['errors in a row', { stoppedBy: 'flow-center-errors', failed: 4 }, ExitCode.ENVIRONMENT],
    ['credentials refused', { stoppedBy: 'credentials-refused' }, ExitCode.ENVIRONMENT],
  ])('%s', (_, over, code) => {
    expect(resolveExitCode(summary(over))).toBe(code);
  });
});

describe('resolve-unknown: counting, summary line and stop message', () => {
  it.each<[RowReport, Partial<ResolveSummary>]>([
    [
      { kind: 'done', via: 'lookup', status: 30, branch: null, roundBehind: true },
      { done: 1, doneViaLookup: 1, roundBehind: 1 },
    ],
    [
      { kind: 'done', via: 'apply', status: 10, branch: 'CREATED', roundBehind: false, mirror: 'deleted' },
      { done: 1, doneViaApply: 1, mirrorDeleted: 1 },
    ],
    [
      { kind: 'done', via: 'lookup', status: 30, branch: null, roundBehind: false, mirror: 'missing' },
      { done: 1, doneViaLookup: 1, mirrorMissing: 1 },
    ],
    [
      { kind: 'failed', reason: 'LOOKUP_TIMEOUT', dead: false },
      { failed: 1, failedByReason: { LOOKUP_TIMEOUT: 1 } },
    ],
    [
      { kind: 'failed', reason: 'LOOKUP_TIMEOUT', dead: true },
      { dead: 1, deadByReason: { LOOKUP_TIMEOUT: 1 } },
    ],
    [
      { kind: 'dead', reason: 'OWNERSHIP_MISMATCH', branch: null },
      { dead: 1, deadByReason: { OWNERSHIP_MISMATCH: 1 } },
    ],
    [
      { kind: 'released', reason: 'STOPPED' },
      { released: 1, releasedByReason: { STOPPED: 1 } },
    ],
    [{ kind: 'stale', would: 'done' }, { stale: 1 }],
    [{ kind: 'would-post' }, { wouldPost: 1 }],
  ])('%o is counted', (report, counted) => {
    const s = emptySummary();
    countReport(s, report);
    expect(s).toEqual(summary(counted));
  });

  it('the summary line: wouldPost only in a dry run, credentialsRefused only when set, seconds rounded, rate from the unrounded time', () => {
    const s = summary({ claimed: 100, done: 99, failed: 1, branches: { CREATED: 2 } });
    const line = summarizeResolve('apply-command resolve-unknown', s, {
      exitCode: 1,
      dryRun: false,
      flowUrl: 'http://fc',
      seconds: 0.84,
    });
    expect(line).toMatchObject({
      command: 'apply-command resolve-unknown',
      exitCode: 1,
      dryRun: false,
      flowUrl: 'http://fc',
      claimed: 100,
      done: 99,
      failed: 1,
      branches: { CREATED: 2 },
      stoppedBy: 'drained',
      seconds: 0.8,
      rowsPerSecond: 119,
    });
    expect(line).not.toHaveProperty('wouldPost');
    expect(line).not.toHaveProperty('credentialsRefused');
    // the order of the fields is the order of the JSON line
    expect(Object.keys(line).slice(0, 5)).toEqual(['command', 'exitCode', 'dryRun', 'flowUrl', 'claimed']);
    const dry = summarizeResolve(
      'apply-command resolve-unknown',
      summary({ wouldPost: 3, stoppedBy: 'credentials-refused', credentialsRefused: 'HTTP 401 on GET' }),
      { exitCode: 3, dryRun: true, flowUrl: 'http://fc', seconds: 0 },
    );
    expect(dry).toMatchObject({ wouldPost: 3, credentialsRefused: 'HTTP 401 on GET', seconds: 0, rowsPerSecond: 0 });
  });

  it.each<[string, Partial<ResolveSummary>, RegExp | null]>([
    ['drained', {}, null],
    ['a signal', { stoppedBy: 'signal' }, null],
    [
      'credentials',
      { stoppedBy: 'credentials-refused', credentialsRefused: 'HTTP 401 on GET /oapi/flow/instance', released: 4 },
      /^flow center refused our credentials \(HTTP 401 on GET \/oapi\/flow\/instance\): check FCCTL_APP_KEY and FCCTL_APP_SECRET; .*\(4 released\)$/,
    ],
    [
      'errors in a row',
      { stoppedBy: 'flow-center-errors', flowCenterErrors: 'timeout: no answer' },
      /^flow center gave 20 errors in a row \(last: timeout: no answer\); stopped/,
    ],
  ])('stop message: %s', (_, over, message) => {
    const text = resolveStopMessage(summary(over), 20);
    if (message === null) expect(text).toBeNull();
    else expect(text).toMatch(message);
  });

  it('rows by result, for the run metrics, in the one vocabulary (FAILED is retry)', () => {
    expect(resolveRowsByResult(summary({ done: 5, failed: 1, dead: 2, released: 3, stale: 4, lookups: 9 }))).toEqual({
      done: 5,
      retry: 1,
      dead: 2,
      released: 3,
      stale: 4,
    });
  });
});

describe('requeue: answers by code, exit code, summary line, run error', () => {
  it('every code present; a dry run counts WOULD_REQUEUE instead of REQUEUED', () => {
    expect(requeueByCode([{ code: 'REQUEUED' }, { code: 'CLAIMED' }, { code: 'REQUEUED' }], true)).toEqual({
      REQUEUED: 2,
      NOT_REQUEUABLE: 0,
      CLAIMED: 1,
      NO_COMMAND: 0,
      OPERATION_CONFLICT: 0,
    });
    expect(requeueByCode([{ code: 'WOULD_REQUEUE' }], false)).toEqual({
      WOULD_REQUEUE: 1,
      NOT_REQUEUABLE: 0,
      CLAIMED: 0,
      NO_COMMAND: 0,
      OPERATION_CONFLICT: 0,
    });
    // a repeated REQUEUED in a dry run (done by an earlier run) is still counted
    expect(requeueByCode([{ code: 'REQUEUED' }], false)).toMatchObject({ WOULD_REQUEUE: 0, REQUEUED: 1 });
  });

  it.each<[string, Parameters<typeof requeueExitCode>[0], number]>([
    ['all requeued', { error: false, refused: 0, notRun: 0, interrupted: false }, ExitCode.OK],
    ['one refused', { error: false, refused: 1, notRun: 0, interrupted: false }, ExitCode.ITEMS_FAILED],
    ['one not run (max-seconds)', { error: false, refused: 0, notRun: 1, interrupted: false }, ExitCode.ITEMS_FAILED],
    ['a signal', { error: false, refused: 0, notRun: 5, interrupted: true }, ExitCode.ITEMS_FAILED],
    ['a database error', { error: true, refused: 1, notRun: 5, interrupted: true }, ExitCode.ENVIRONMENT],
  ])('exit code: %s', (_, r, code) => {
    expect(requeueExitCode(r)).toBe(code);
  });

  const run: RequeueRunResult = {
    runId: 'r',
    selector: 'dead',
    dryRun: false,
    items: 3,
    truncated: false,
    byCode: { REQUEUED: 2, NOT_REQUEUABLE: 1, CLAIMED: 0, NO_COMMAND: 0, OPERATION_CONFLICT: 0 },
    results: [],
    refused: 1,
    repeated: 0,
    notRun: 0,
    stoppedBy: 'done',
    operationConflict: null,
    exitCode: 1,
    evidencePath: '/tmp/e.jsonl',
    error: null,
  };
  it('JSON: byCode in the line, no counts; seconds from milliseconds to one decimal', () => {
    const { fields, counts } = summarizeRequeue('apply-command requeue', run, {
      operationId: 'INC-7',
      elapsedMs: 1250,
      json: true,
    });
    expect(counts).toBeUndefined();
    expect(fields).toEqual({
      command: 'apply-command requeue',
      exitCode: 1,
      dryRun: false,
      operationId: 'INC-7',
      selector: 'dead',
      items: 3,
      answered: 0,
      byCode: run.byCode,
      repeated: 0,
      refused: 1,
      notRun: 0,
      truncated: false,
      stoppedBy: 'done',
      evidence: '/tmp/e.jsonl',
      seconds: 1.3,
    });
  });
  it('terminal: the codes that occurred as counts, byCode left out of the line', () => {
    const { fields, counts } = summarizeRequeue('apply-command requeue', run, {
      operationId: 'INC-7',
      elapsedMs: 40,
      json: false,
    });
    expect(counts).toEqual({ REQUEUED: 2, NOT_REQUEUABLE: 1 });
    expect(fields).not.toHaveProperty('byCode');
    expect(fields['seconds']).toBe(0);
  });
  it('a run error: an EnvironmentError as it came, another by its first line', () => {
    const env = new EnvironmentError('SH schema missing a table');
    expect(requeueRunError(env)).toBe(env);
    const other = requeueRunError(Object.assign(new Error('read ECONNRESET\n    at x'), { code: 'ECONNRESET' }));
    expect(other).toBeInstanceOf(EnvironmentError);
    expect(other.message).toBe('requeue stopped by a database error: read ECONNRESET');
    expect(requeueRunError('gone').message).toBe('requeue stopped by a database error: gone');
  });
});

describe('scan: exit code and summary line', () => {
  const report: ApplyScanReport = {
    dbNow: '2026-12-01 10:00:00',
    states: { PENDING: 0, UNKNOWN: 1, DONE: 0, FAILED: 0, DEAD: 2 },
    due: 1,
    oldestUnknownAgeSeconds: 60,
    stuckClaims: 0,
    dead: 2,
    reasons: [{ state: 'DEAD', reason: 'OWNERSHIP_MISMATCH', lastBranch: null, count: 2 }],
    rows: [],
  };
  it.each<[string, number, boolean, number]>([
    ['DEAD rows, no --fail-if-dead', 2, false, ExitCode.OK],
    ['DEAD rows, --fail-if-dead', 2, true, ExitCode.ITEMS_FAILED],
    ['none DEAD, --fail-if-dead', 0, true, ExitCode.OK],
  ])('%s', (_, dead, failIfDead, code) => {
    expect(applyScanExitCode({ dead }, failIfDead)).toBe(code);
  });
  it('JSON carries states, reasons and the listed count; the terminal line only the counts; a failed note with exit 1', () => {
    expect(summarizeApplyScan('apply-command scan', report, 0, true)).toEqual({
      command: 'apply-command scan',
      exitCode: 0,
      dbNow: report.dbNow,
      states: report.states,
      due: 1,
      oldestUnknownAgeSeconds: 60,
      stuckClaims: 0,
      dead: 2,
      reasons: report.reasons,
      listed: 0,
    });
    expect(summarizeApplyScan('apply-command scan', report, 1, false)).toEqual({
      command: 'apply-command scan',
      exitCode: 1,
      dbNow: report.dbNow,
      due: 1,
      oldestUnknownAgeSeconds: 60,
      stuckClaims: 0,
      dead: 2,
      failed: '2 DEAD row(s) (--fail-if-dead)',
    });
  });
});
