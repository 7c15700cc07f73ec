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
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { EnvironmentError, SafetyError, UsageError } from '../../cli/exit.js';
import { removeStaleTemps, writeFileAtomic } from '../../files/atomic.js';
import { acquireLock } from '../../files/lock.js';
import type { ManifestSide } from '../../manifest/row.js';
import { runManifestScan } from '../../manifest/scan/run.js';
import type { ScanResult } from '../../manifest/scan/types.js';
import { ALL_SUMMARY_FORMAT } from '../all/types.js';
import { runDiff } from '../diff/run.js';
import { DIFF_FILES } from '../diff/types.js';
import { runPlan } from './decide.js';
import { paramsDigest as digestOf } from '../../canon/params-digest.js';
import { readRunState } from './input.js';
import { takeTaskStart, waitForFcClock } from './store.js';
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
