import { describe, expect, it } from 'vitest';
import { EnvironmentError, UsageError } from '../../src/lib/cli/exit.js';
import {
  type RepairRunFacts,
  repairExitCode,
  resultCounts,
  type SettledRepair,
  summarizeRepair,
} from '../../src/lib/projection/repair-authoritative/decide.js';
import { outcomeNote, repairFailure } from '../../src/lib/projection/repair-authoritative/run.js';

const settled = (result: SettledRepair['result'], o: Partial<SettledRepair> = {}): SettledRepair => ({
  result,
  code: 'INSERTED',
  write: null,
  written: false,
  rereads: 0,
  ...o,
});

describe('repairExitCode', () => {
  const cases: Array<[string, Parameters<typeof repairExitCode>[0], number]> = [
    ['every answer applied', { results: [settled('APPLIED'), settled('APPLIED')], notRun: 0, error: null }, 0],
    ['a dry run that would apply all', { results: [settled('WOULD_APPLY')], notRun: 0, error: null }, 0],
    ['nothing to do', { results: [], notRun: 0, error: null }, 0],
    ['LOCAL_CHANGED', { results: [settled('APPLIED'), settled('LOCAL_CHANGED')], notRun: 0, error: null }, 1],
    ['LOCAL_AHEAD', { results: [settled('LOCAL_AHEAD')], notRun: 0, error: null }, 1],
    ['DEFERRED', { results: [settled('DEFERRED')], notRun: 0, error: null }, 1],
    ['items not run', { results: [settled('APPLIED')], notRun: 3, error: null }, 1],
    ['a database error, whatever else', { results: [settled('APPLIED')], notRun: 1, error: new Error('gone') }, 3],
  ];
  it.each(cases)('%s → %i', (_name, end, code) => {
    expect(repairExitCode(end)).toBe(code);
  });
});

describe("resultCounts: the mode's results, 0 included", () => {
  it.each([
    [true, { WOULD_APPLY: 2, LOCAL_CHANGED: 0, LOCAL_AHEAD: 1, DEFERRED: 0 }],
    [false, { APPLIED: 2, LOCAL_CHANGED: 0, LOCAL_AHEAD: 1, DEFERRED: 0 }],
  ])('dryRun %s', (dryRun, want) => {
    const applied = dryRun ? 'WOULD_APPLY' : 'APPLIED';
    expect(resultCounts([settled(applied), settled(applied), settled('LOCAL_AHEAD')], dryRun)).toEqual(want);
  });
});

describe('summarizeRepair', () => {
  // a refusal first: byCode follows REASON_CODES, not the order the answers settled in
  const results = [
    settled('DEFERRED', { code: 'GRANT_REVOKED' }),
    settled('APPLIED', { code: 'INSERTED', write: 'insert', written: true }),
    settled('APPLIED', { code: 'STALE_REPAIRED', write: 'update', written: true, rereads: 2 }),
    settled('LOCAL_CHANGED', { code: 'EXPECTED_MISMATCH', write: 'update', written: false, rereads: 3 }),
  ];
  const facts = (o: Partial<RepairRunFacts> = {}): RepairRunFacts => ({
    results,
    notRun: 1,
    error: null,
    exitCode: 1,
    dryRun: false,
    runId: 'r1',
    proofId: 'INC-7',
    consumerAppKey: '100100',
    source: 'fc',
    items: 5,
    byResult: { APPLIED: 2, LOCAL_CHANGED: 1, LOCAL_AHEAD: 0, DEFERRED: 1 },
    stoppedBy: 'signal',
    evidence: '/x/repair-evidence.jsonl',
    ...o,
  });
  it('an executed run, JSON: every field in order, codes in REASON_CODES order, only written rows counted as inserted/updated', () => {
    const { summary, counts } = summarizeRepair(facts(), 2.5, true);
    expect(counts).toBeUndefined();
    expect(Object.keys(summary)).toEqual([
      'command',
      'exitCode',
      'dryRun',
      'runId',
      'proofId',
      'consumerAppKey',
      'source',
      'items',
      'decided',
      'byResult',
      'byCode',
      'inserted',
      'updated',
      'rereads',
      'refused',
      'notRun',
      'stoppedBy',
      'evidence',
      'seconds',
    ]);
    expect(summary).toMatchObject({
      command: 'projection repair-authoritative',
      items: 5,
      decided: 4,
      inserted: 1,
      updated: 1,
      rereads: 5,
      refused: 2,
      notRun: 1,
      stoppedBy: 'signal',
      seconds: 2.5,
    });
    expect(Object.entries(summary['byCode'] as object)).toEqual([
      ['INSERTED', 1],
      ['STALE_REPAIRED', 1],
      ['EXPECTED_MISMATCH', 1],
      ['GRANT_REVOKED', 1],
    ]);
  });
  it('a dry run on a terminal: wouldInsert/wouldUpdate whether written or not, the non-zero results as counts', () => {
    const { summary, counts } = summarizeRepair(
      facts({ dryRun: true, byResult: { WOULD_APPLY: 2, LOCAL_CHANGED: 1, LOCAL_AHEAD: 0, DEFERRED: 1 } }),
      0,
      false,
    );
    expect(summary).toMatchObject({ dryRun: true, wouldInsert: 1, wouldUpdate: 2 });
    expect(summary).not.toHaveProperty('inserted');
    expect(summary).not.toHaveProperty('byResult');
    expect(counts).toEqual({ WOULD_APPLY: 2, LOCAL_CHANGED: 1, DEFERRED: 1 });
  });
  it('an envelope run with nothing decided', () => {
    const { summary } = summarizeRepair(
      facts({ results: [], notRun: 0, items: 1, source: 'envelope', byResult: {} }),
      0,
      true,
    );
    expect(summary).toMatchObject({
      source: 'envelope',
      decided: 0,
      byCode: {},
      inserted: 0,
      updated: 0,
      rereads: 0,
      refused: 0,
    });
  });
});

describe('repairFailure: the error a run stopped by ends with', () => {
  it('exit 2 and 3 errors as they are', () => {
    const usage = new UsageError('bad');
    const env = new EnvironmentError('down');
    expect(repairFailure(usage)).toBe(usage);
    expect(repairFailure(env)).toBe(env);
  });
  it('another error: exit 3, its first line, a missing table named as a missing schema', () => {
    const e = repairFailure(Object.assign(new Error("Table x doesn't exist\nmore"), { code: 'ER_NO_SUCH_TABLE' }));
    expect(e).toBeInstanceOf(EnvironmentError);
    expect(e.message).toBe(
      "repair stopped by an error: Table x doesn't exist (schema missing: run `fcctl db init --side fc` / `--side sh`)",
    );
    expect(repairFailure('boom').message).toBe('repair stopped by an error: boom');
  });
});

describe('outcomeNote', () => {
  it.each([
    [0, 'APPLIED  r'],
    [1, 'APPLIED  r (after 1 re-read)'],
    [3, 'APPLIED  r (after 3 re-reads)'],
  ])('%i re-reads', (rereads, want) => {
    expect(outcomeNote({ result: 'APPLIED', reason: 'r', rereads })).toBe(want);
  });
});
