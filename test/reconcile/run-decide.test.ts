import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/lib/reconcile/diff/decide.js';
import type { DiffSummary } from '../../src/lib/reconcile/diff/types.js';
import { reconcileRunReport, runPlan } from '../../src/lib/reconcile/run/decide.js';
import { type ReconcileRunResult, RUN_FORMAT, type RunState } from '../../src/lib/reconcile/run/types.js';

const run = (over: Partial<RunState> = {}): RunState => ({
  format: RUN_FORMAT,
  runId: 'r1',
  params: { schId: '5', formUuid: 'f', fcDatabase: 'fc:3306/fc', shDatabase: 'sh:3306/sh' },
  paramsDigest: 'd1',
  taskStart: '2026-11-30 09:00:00',
  taskStartUtc: '2026-11-30 01:00:00',
  startedAt: 't',
  state: 'scanning',
  completedAt: null,
  counts: null,
  ...over,
});

describe('reconcile run: continue, begin anew or refuse', () => {
  it.each([
    ['no run.json', null, false, 'new'],
    ['an unfinished run of these parameters', run(), false, 'resume'],
    ['an unfinished run, --restart', run(), true, 'new'],
    ['a completed run', run({ state: 'completed' }), false, 'new'],
    ['a run of other parameters, --restart', run({ paramsDigest: 'other' }), true, 'new'],
  ] as const)('%s → %s', (_name, previous, restart, kind) => {
    expect(runPlan(previous, 'd1', restart, '/runs/5').kind).toBe(kind);
  });
  it('a run of other parameters without --restart is refused, naming them', () => {
    expect(runPlan(run({ paramsDigest: 'other' }), 'd1', false, '/runs/5')).toEqual({
      kind: 'refuse',
      message:
        '/runs/5 holds a run of other parameters (school 5, form f, FC fc:3306/fc, SH sh:3306/sh); use another --out-dir or pass --restart',
    });
  });
});

describe('reconcile run: exit code, summary line, metrics', () => {
  const summary = (fcRows: number, shRows: number): DiffSummary => ({
    format: 'fcctl.reconcile.summary.v1',
    taskStart: '2026-11-30 09:00:00',
    schId: '5',
    formUuid: 'f',
    shards: [null],
    wholeKeySpace: true,
    inputs: {
      fc: { file: 'fc', bytes: 0, rows: fcRows, sha256: '', completedAt: '', checkpoints: [] },
      sh: { file: 'sh', bytes: 0, rows: shRows, sha256: '', completedAt: '', checkpoints: [] },
    },
    counts: { ...emptyCounts(), IN_SYNC: Math.min(fcRows, shRows) },
    differences: 0,
    outputs: {},
    createdAt: 't',
  });
  const done = (fcRows: number, shRows: number): ReconcileRunResult => ({
    kind: 'done',
    run: run(),
    resumed: true,
    scans: {} as never,
    summary: summary(fcRows, shRows),
    outDir: '/runs/5',
  });
  const pair = { schId: '5', formUuid: 'f', allowEmpty: false };
  it.each([
    ['rows at both sides', done(3, 3), pair, 0, false],
    ['rows at FC only', done(3, 0), pair, 0, false],
    ['no rows at all', done(0, 0), pair, 1, true],
    ['rows at SH only', done(0, 3), pair, 1, true],
    ['no rows at all, --allow-empty', done(0, 0), { ...pair, allowEmpty: true }, 0, false],
  ] as const)('%s → exit %d', (_name, result, o, exitCode, warned) => {
    const r = reconcileRunReport(o, result, 1000);
    expect(r.exitCode).toBe(exitCode);
    expect(r.warning !== null).toBe(warned);
    expect(r.fields).toMatchObject({
      command: 'reconcile run',
      exitCode,
      runId: 'r1',
      resumed: true,
      fcRows: result.kind === 'done' ? result.summary.inputs.fc.rows : -1,
      seconds: 1,
    });
    expect('empty' in r.fields).toBe(warned);
    // the series (fcctl_reconcile_empty among them) come of this in src/lib/reconcile/metrics.ts
    expect(r.outcome).toEqual({
      exitCode,
      suspect: warned,
      paused: false,
      rowsByResult: result.kind === 'done' ? result.summary.counts : undefined,
    });
  });
  it('stopped before the task start: no run id, exit 1, an interrupt for the metrics', () => {
    const r = reconcileRunReport(
      pair,
      { kind: 'stopped', run: null, resumed: false, phase: 'task-start', reason: 'signal', outDir: '/runs/5' },
      250,
    );
    expect(r).toEqual({
      warning: null,
      exitCode: 1,
      fields: {
        command: 'reconcile run',
        runId: null,
        taskStart: null,
        resumed: false,
        exitCode: 1,
        stoppedBy: 'signal',
        phase: 'task-start',
        outDir: '/runs/5',
        seconds: 0.3,
      },
      outcome: { exitCode: 1, interrupted: true },
    });
  });
});
