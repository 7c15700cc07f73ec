/**
 * `reconcile run`: the nightly entry point — take the task start, scan FC, scan SH, diff — in one
 * directory that makes the run resumable:
 *
 * - `run.json` (`fcctl.reconcile.run.v1`): run id, parameters and their digest, the task start,
 *   state `scanning` or `completed`, and the counts once completed;
 * - `fc-manifest.jsonl` + `fc-manifest.checkpoint.json`, `sh-manifest.jsonl` + `sh-manifest.checkpoint.json`;
 * - the diff's files (`report.csv`, `summary.json`, …, see `../diff/run.ts`);
 * - `reconcile.lock` while a run holds the directory.
 *
 * A run that stopped (killed, interrupted) is continued by the next run with the same parameters:
 * same run id and task start, each scan resumed from its checkpoint. A completed run is followed by
 * a new one (new task start, fresh scans). Other parameters → exit 4 unless `restart`.
 */
import { databaseNow } from '../../db/clock.js';
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { EnvironmentError, SafetyError, UsageError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import type { Statement } from '../../db/statement.js';
import { removeStaleTemps, writeFileAtomic } from '../../files/atomic.js';
import { acquireLock } from '../../files/lock.js';
import type { ManifestSide } from '../../manifest/row.js';
import { runManifestScan } from '../../manifest/scan/run.js';
import type { ScanResult } from '../../manifest/scan/types.js';
import { ALL_SUMMARY_FORMAT } from '../all/types.js';
import { runDiff } from '../diff/run.js';
import { DIFF_FILES } from '../diff/types.js';
import { selectClockPassed, selectUtcClockPassed } from '../sql.js';
import { runPlan } from './decide.js';
import { paramsDigest as digestOf } from '../../canon/params-digest.js';
import { readRunState } from './input.js';
import {
  type ReconcileRunDeps,
  type ReconcileRunOptions,
  type ReconcileRunResult,
  RUN_FILES,
  RUN_FORMAT,
  RUN_MANIFESTS,
  type RunParams,
  type RunPhase,
  type RunState,
} from './types.js';

/** Polls of a database clock: every 50 ms, at most 100 times (5 s). */
const CLOCK_POLLS = 100;
const CLOCK_POLL_MS = 50;

/**
 * Waits until `statement` (one `passed` column, 0 or 1) says a database's clock is past a second:
 * 'passed', 'aborted' (the stop signal; checked between polls) or 'timeout'.
 */
async function waitForClock(
  db: Db,
  statement: Statement,
  signal: AbortSignal | undefined,
): Promise<'passed' | 'aborted' | 'timeout'> {
  for (let i = 0; i < CLOCK_POLLS; i++) {
    const [{ passed } = { passed: 0 }] = await db.query<{ passed: number | string }>(statement.sql, statement.params);
    if (Number(passed) === 1) return 'passed';
    if (signal?.aborted) return 'aborted';
    await new Promise((r) => setTimeout(r, CLOCK_POLL_MS));
  }
  return 'timeout';
}

/**
 * The task start: the SH database's NOW() and UTC_TIMESTAMP() (one instant), after waiting for its
 * clock to pass that second, so that every row the scans can see created after the start has a
 * createTime strictly after it (DATETIME has whole seconds; without the wait, a row created in the
 * same second would be "not after" the start). Null when the stop signal ended the wait: an
 * interrupt, not an error (exit 1).
 * @example const taskStart = await takeTaskStart(shDb) // { local: '2026-11-30 09:00:00', utc: '2026-11-30 01:00:00' }
 */
export async function takeTaskStart(db: Db, signal?: AbortSignal): Promise<{ local: string; utc: string } | null> {
  const t = await databaseNow(db).catch((err: Error) => {
    throw new Error(`the SH database's clock: ${err.message}`);
  });
  const waited = await waitForClock(db, selectClockPassed(t.local), signal);
  if (waited === 'passed') return t;
  if (waited === 'aborted') return null;
  throw new Error("the SH database's clock did not advance past the task start");
}

/**
 * Before the FC scan begins: waits (at most 5 s, stopped by the signal) until the FC database's
 * UTC clock has passed the task start's UTC second, so that an FC clock a little behind SH's never
 * makes the FC scan's start "not after" the task start. A clock still behind after the wait is a
 * real inversion: exit 4 before anything is scanned.
 * @example await waitForFcClock(fcDb, '2026-11-30 01:00:00', signal) // 'passed'
 */
export async function waitForFcClock(
  db: Db,
  taskStartUtc: string,
  signal?: AbortSignal,
): Promise<'passed' | 'aborted'> {
  const waited = await waitForClock(db, selectUtcClockPassed(taskStartUtc), signal);
  if (waited !== 'timeout') return waited;
  throw new SafetyError(
    `the FC database's clock (UTC) is still not past the task start ${taskStartUtc} UTC (SH database clock) after ${(CLOCK_POLLS * CLOCK_POLL_MS) / 1000} s: the FC clock is behind the SH clock by more than that; fix the clocks (NTP) before reconciling`,
  );
}

/**
 * Runs (or continues) one reconciliation in `outDir`: the run directory and its lock, the run to
 * continue or a new one (with its task start), the FC and SH scans, the diff, the completed run.
 * @example const r = await runReconcile({ schId: '5', formUuid, outDir: 'run', size: 200, restart: false, fcDatabase, shDatabase }, { fcDb, shDb, signal })
 */
export async function runReconcile(o: ReconcileRunOptions, deps: ReconcileRunDeps): Promise<ReconcileRunResult> {
  const now = deps.now ?? (() => new Date());
  const outDir = resolve(o.outDir);
  await refuseAllRoot(outDir);
  try {
    await mkdir(outDir, { recursive: true });
  } catch (err) {
    throw new UsageError(
      `cannot create --out-dir ${outDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const lock = await acquireLock(join(outDir, RUN_FILES.lock), 'reconcile run', `run directory ${outDir}`);
  try {
    // A run killed in the middle of a write left temp files; the scans sweep their checkpoints'.
    for (const f of [RUN_FILES.run, ...Object.values(DIFF_FILES)]) await removeStaleTemps(join(outDir, f));
    // Paused at start: nothing begun, the directory's run (if any) left to continue after the resume.
    const pause = await deps.paused?.();
    if (pause)
      return {
        kind: 'stopped',
        run: null,
        resumed: false,
        phase: 'task-start',
        reason: 'paused',
        outDir,
        paused: pause,
      };
    const started = await startOrResume(o, outDir, deps, now);
    if (started.kind === 'stopped') return started;
    const { run, resume } = started;
    const scans = await scanSides(o, outDir, run, resume, deps, now);
    if (scans.kind === 'stopped') return scans;
    deps.onPhase?.('diff', { runId: run.runId, taskStart: run.taskStart });
    const diff = await runDiff(
      {
        fcFile: join(outDir, RUN_MANIFESTS.fc.manifest),
        shFile: join(outDir, RUN_MANIFESTS.sh.manifest),
        fcCheckpoints: [join(outDir, RUN_MANIFESTS.fc.checkpoint)],
        shCheckpoints: [join(outDir, RUN_MANIFESTS.sh.checkpoint)],
        taskStart: run.taskStart,
        ...(run.taskStartUtc !== undefined ? { taskStartUtc: run.taskStartUtc } : {}),
        outDir,
      },
      { signal: deps.signal, now, ...(deps.onDiffProgress ? { onProgress: deps.onDiffProgress } : {}) },
    );
    if (diff.kind === 'stopped')
      return { kind: 'stopped', run, resumed: resume, phase: 'diff', reason: diff.reason, outDir };
    const completed: RunState = {
      ...run,
      state: 'completed',
      completedAt: now().toISOString(),
      counts: diff.summary.counts,
    };
    await writeFileAtomic(join(outDir, RUN_FILES.run), `${JSON.stringify(completed, null, 2)}\n`, 0o600);
    return { kind: 'done', run: completed, resumed: resume, scans: scans.scans, summary: diff.summary, outDir };
  } finally {
    await lock.release();
  }
}

/**
 * The root of a `reconcile run --all` (its summary.json is the run over every pair) is no pair's
 * directory: a pair run there would overwrite that summary with its diff's (exit 4, nothing changed).
 */
async function refuseAllRoot(outDir: string): Promise<void> {
  const text = await readFile(join(outDir, DIFF_FILES.summary), 'utf8').catch(() => null);
  let format: unknown = null;
  try {
    format = text === null ? null : (JSON.parse(text) as { format?: unknown }).format;
  } catch {
    return; // not --all's: the pair's own run decides about it
  }
  if (format === ALL_SUMMARY_FORMAT)
    throw new SafetyError(
      `${outDir} is the directory of a reconcile run --all (its summary.json is ${ALL_SUMMARY_FORMAT}): give a pair's directory ${join(outDir, '<school>', '<form>')} or another --out-dir`,
    );
}

/** The run in the directory continued, or a new one begun: the previous run's files gone, a task start taken, run.json written. */
async function startOrResume(
  o: ReconcileRunOptions,
  outDir: string,
  deps: ReconcileRunDeps,
  now: () => Date,
): Promise<{ kind: 'started'; run: RunState; resume: boolean } | Extract<ReconcileRunResult, { kind: 'stopped' }>> {
  const params: RunParams = {
    schId: o.schId,
    formUuid: o.formUuid,
    fcDatabase: o.fcDatabase,
    shDatabase: o.shDatabase,
  };
  const paramsDigest = digestOf(params);
  const runPath = join(outDir, RUN_FILES.run);
  const plan = runPlan(await readRunState(runPath, o.restart, now), paramsDigest, o.restart, outDir);
  if (plan.kind === 'refuse') throw new SafetyError(plan.message);
  if (plan.kind === 'resume') return { kind: 'started', run: plan.run, resume: true };
  await removePreviousRun(outDir);
  deps.onPhase?.('task-start', {});
  const taskStart = deps.taskStart ? await deps.taskStart() : await takeTaskStart(await deps.shDb(), deps.signal);
  if (taskStart === null)
    return { kind: 'stopped', run: null, resumed: false, phase: 'task-start', reason: 'signal', outDir };
  const run: RunState = {
    format: RUN_FORMAT,
    runId: randomUUID(),
    params,
    paramsDigest,
    taskStart: taskStart.local,
    taskStartUtc: taskStart.utc,
    startedAt: now().toISOString(),
    state: 'scanning',
    completedAt: null,
    counts: null,
    ...(o.allRunId !== undefined ? { allRunId: o.allRunId } : {}),
  };
  await writeFileAtomic(runPath, `${JSON.stringify(run, null, 2)}\n`, 0o600);
  return { kind: 'started', run, resume: false };
}

/**
 * A new run: the previous run's scans and diff files go first, checkpoints before anything, so
 * the directory never mixes two runs — a new run stopped before a side's scan began must not
 * resume onto the previous run's finished manifest of that side (it predates the new task start:
 * a row deleted since would be missed).
 */
async function removePreviousRun(outDir: string): Promise<void> {
  const { fc, sh } = RUN_MANIFESTS;
  for (const f of [fc.checkpoint, sh.checkpoint, fc.manifest, sh.manifest, ...Object.values(DIFF_FILES)]) {
    await unlink(join(outDir, f)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT')
        throw new EnvironmentError(`cannot remove the previous run's ${f} from ${outDir}: ${err.code ?? err.message}`, {
          cause: err,
        });
    });
  }
}

/** The FC scan (after the FC clock passed the task start), then the SH scan, each resumed from its checkpoint. */
async function scanSides(
  o: ReconcileRunOptions,
  outDir: string,
  run: RunState,
  resume: boolean,
  deps: ReconcileRunDeps,
  now: () => Date,
): Promise<
  { kind: 'scanned'; scans: Record<ManifestSide, ScanResult> } | Extract<ReconcileRunResult, { kind: 'stopped' }>
> {
  const scans: Partial<Record<ManifestSide, ScanResult>> = {};
  for (const side of ['fc', 'sh'] as const) {
    const phase: RunPhase = side === 'fc' ? 'scan-fc' : 'scan-sh';
    deps.onPhase?.(phase, { runId: run.runId, taskStart: run.taskStart });
    const db = side === 'fc' ? await deps.fcDb() : await deps.shDb();
    if (
      side === 'fc' &&
      run.taskStartUtc !== undefined &&
      (await waitForFcClock(db, run.taskStartUtc, deps.signal)) === 'aborted'
    ) {
      return { kind: 'stopped', run, resumed: resume, phase, reason: 'signal', outDir };
    }
    const r = await runManifestScan(
      {
        side,
        schId: o.schId,
        formUuid: o.formUuid,
        shard: null,
        size: o.size,
        out: join(outDir, RUN_MANIFESTS[side].manifest),
        checkpoint: join(outDir, RUN_MANIFESTS[side].checkpoint),
        restart: !resume,
        database: side === 'fc' ? o.fcDatabase : o.shDatabase,
      },
      {
        db,
        signal: deps.signal,
        now,
        command: 'reconcile run',
        onPage: (p) => deps.onPage?.(side, p),
        ...(deps.paused ? { paused: deps.paused } : {}),
        ...(deps.throttle?.[side] ? { throttle: deps.throttle[side] } : {}),
      },
    );
    scans[side] = r;
    if (r.stoppedBy !== null)
      return {
        kind: 'stopped',
        run,
        resumed: resume,
        phase,
        reason: r.stoppedBy,
        outDir,
        ...(r.paused ? { paused: r.paused } : {}),
      };
  }
  return { kind: 'scanned', scans: scans as Record<ManifestSide, ScanResult> };
}
