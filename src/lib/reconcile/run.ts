/**
 * `reconcile run`: the nightly entry point — take the task start, scan FC, scan SH, diff — in one
 * directory that makes the run resumable:
 *
 * - `run.json` (`fcctl.reconcile.run.v1`): run id, parameters and their digest, the task start,
 *   state `scanning` or `completed`, and the counts once completed;
 * - `fc-manifest.jsonl` + `fc-manifest.checkpoint.json`, `sh-manifest.jsonl` + `sh-manifest.checkpoint.json`;
 * - the diff's files (`report.csv`, `summary.json`, …, see `diff.ts`);
 * - `reconcile.lock` while a run holds the directory.
 *
 * A run that stopped (killed, interrupted) is continued by the next run with the same parameters:
 * same run id and task start, each scan resumed from its checkpoint. A completed run is followed by
 * a new one (new task start, fresh scans). Other parameters → exit 4 unless `restart`.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { canonicalize } from '../canon/index.js';
import { EnvironmentError, SafetyError, UsageError } from '../cli/exit.js';
import type { Db } from '../db/connect.js';
import { removeStaleTemps, writeFileAtomic } from '../fs/atomic.js';
import { acquireLock } from '../manifest/lock.js';
import { normalizeDateTime, type ManifestSide } from '../manifest/row.js';
import { databaseNow, runManifestScan, type ScanProgress, type ScanResult } from '../manifest/scan.js';
import { type Category } from './classify.js';
import { DIFF_FILES, type DiffSummary, runDiff } from './diff.js';

export const RUN_FORMAT = 'fcctl.reconcile.run.v1';

/** File names inside a run directory. */
export const RUN_FILES = {
  run: 'run.json',
  lock: 'reconcile.lock',
  fcManifest: 'fc-manifest.jsonl',
  fcCheckpoint: 'fc-manifest.checkpoint.json',
  shManifest: 'sh-manifest.jsonl',
  shCheckpoint: 'sh-manifest.checkpoint.json',
} as const;

export interface RunParams {
  readonly schId: string;
  readonly formUuid: string;
  readonly fcDatabase: string;
  readonly shDatabase: string;
}

/** `run.json`. */
export interface RunState {
  readonly format: typeof RUN_FORMAT;
  readonly runId: string;
  readonly params: RunParams;
  readonly paramsDigest: string;
  /** `yyyy-MM-dd HH:mm:ss`, the SH database's NOW() when the run began */
  readonly taskStart: string;
  /**
   * `yyyy-MM-dd HH:mm:ss`, the SH database's UTC_TIMESTAMP() at the same instant: the task start is
   * checked against the FC scan's start in UTC (the two databases may be in different zones);
   * absent in a run.json of an older fcctl (its diff then compares local times, as it did)
   */
  readonly taskStartUtc?: string;
  readonly startedAt: string;
  readonly state: 'scanning' | 'completed';
  readonly completedAt: string | null;
  readonly counts: Readonly<Record<Category, number>> | null;
}

export interface ReconcileRunOptions {
  readonly schId: string;
  readonly formUuid: string;
  readonly outDir: string;
  readonly size: number;
  readonly restart: boolean;
  readonly fcDatabase: string;
  readonly shDatabase: string;
}

export type RunPhase = 'task-start' | 'scan-fc' | 'scan-sh' | 'diff';

export interface ReconcileRunDeps {
  readonly fcDb: () => Promise<Db>;
  readonly shDb: () => Promise<Db>;
  readonly signal: AbortSignal;
  readonly now?: () => Date;
  readonly onPhase?: (phase: RunPhase, detail: Record<string, unknown>) => void;
  readonly onPage?: (side: ManifestSide, p: ScanProgress) => void | Promise<void>;
  readonly onDiffProgress?: (answers: number) => void;
}

export type ReconcileRunResult =
  | { readonly kind: 'done'; readonly run: RunState; readonly resumed: boolean; readonly scans: Readonly<Record<ManifestSide, ScanResult>>; readonly summary: DiffSummary; readonly outDir: string }
  /** `run` is null when the run was stopped before its task start was taken (nothing recorded) */
  | { readonly kind: 'stopped'; readonly run: RunState | null; readonly resumed: boolean; readonly phase: RunPhase; readonly reason: string; readonly outDir: string };

function digestOf(params: RunParams): string {
  const r = canonicalize(JSON.stringify(params));
  if (!r.ok) throw new Error(`cannot hash run parameters: ${r.error.code}`);
  return r.hash;
}

/**
 * `run.json`, or null when there is none. One that cannot be read (a directory, no permission) or
 * is not a valid run file is exit 4 — unless `restart`: the refusal tells the operator to pass
 * --restart, so --restart must get past it. It is then set aside as `run.json.unreadable-<time>`
 * (kept for a look, never deleted: it may be someone's) and the run starts anew.
 */
async function readRunState(path: string, restart: boolean, now: () => Date): Promise<RunState | null> {
  const setAside = async (why: string): Promise<null> => {
    const aside = `${path}.unreadable-${now().toISOString().replace(/[:.]/g, '-')}`;
    try {
      await rename(path, aside);
    } catch (err) {
      throw new EnvironmentError(`cannot set aside ${path} (${why}) for --restart: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
    }
    return null;
  };
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    const why = code ?? (err as Error).message;
    if (restart) return setAside(why);
    throw new SafetyError(`${path} cannot be read (${why}); pass --restart to set it aside and start a new run in this directory`, { cause: err });
  }
  try {
    const v = JSON.parse(text) as RunState;
    if (v.format !== RUN_FORMAT || typeof v.runId !== 'string' || typeof v.taskStart !== 'string' || normalizeDateTime(v.taskStart) !== v.taskStart) throw new Error('bad members');
    if (v.taskStartUtc !== undefined && (typeof v.taskStartUtc !== 'string' || normalizeDateTime(v.taskStartUtc) !== v.taskStartUtc)) throw new Error('bad taskStartUtc');
    if (v.paramsDigest !== digestOf(v.params)) throw new Error('paramsDigest does not match params');
    return v;
  } catch (err) {
    if (restart) return setAside((err as Error).message);
    throw new SafetyError(`${path} is not a valid ${RUN_FORMAT} file (${(err as Error).message}); pass --restart to start a new run in this directory`);
  }
}

/** Polls of a database clock: every 50 ms, at most 100 times (5 s). */
const CLOCK_POLLS = 100;
const CLOCK_POLL_MS = 50;

/**
 * Waits until `passedSql` (one `passed` column, 0 or 1) says a database's clock is past a second:
 * 'passed', 'aborted' (the stop signal; checked between polls) or 'timeout'.
 */
async function waitForClock(db: Db, passedSql: string, t: string, signal: AbortSignal | undefined): Promise<'passed' | 'aborted' | 'timeout'> {
  for (let i = 0; i < CLOCK_POLLS; i++) {
    const [{ passed } = { passed: 0 }] = await db.query<{ passed: number | string }>(passedSql, [t]);
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
  const waited = await waitForClock(db, 'SELECT NOW() > ? AS passed', t.local, signal);
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
export async function waitForFcClock(db: Db, taskStartUtc: string, signal?: AbortSignal): Promise<'passed' | 'aborted'> {
  const waited = await waitForClock(db, 'SELECT UTC_TIMESTAMP() > ? AS passed', taskStartUtc, signal);
  if (waited !== 'timeout') return waited;
  throw new SafetyError(
    `the FC database's clock (UTC) is still not past the task start ${taskStartUtc} UTC (SH database clock) after ${(CLOCK_POLLS * CLOCK_POLL_MS) / 1000} s: the FC clock is behind the SH clock by more than that; fix the clocks (NTP) before reconciling`,
  );
}

/**
 * Runs (or continues) one reconciliation in `outDir`.
 * @example const r = await runReconcile({ schId: '5', formUuid, outDir: 'run', size: 200, restart: false, fcDatabase, shDatabase }, { fcDb, shDb, signal })
 */
export async function runReconcile(o: ReconcileRunOptions, deps: ReconcileRunDeps): Promise<ReconcileRunResult> {
  const now = deps.now ?? (() => new Date());
  const outDir = resolve(o.outDir);
  try {
    await mkdir(outDir, { recursive: true });
  } catch (err) {
    throw new UsageError(`cannot create --out-dir ${outDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const lock = await acquireLock(join(outDir, RUN_FILES.lock), 'reconcile run', `run directory ${outDir}`);
  try {
    // A run killed in the middle of a write left temp files; the scans sweep their checkpoints'.
    for (const f of [RUN_FILES.run, ...Object.values(DIFF_FILES)]) await removeStaleTemps(join(outDir, f));
    const params: RunParams = { schId: o.schId, formUuid: o.formUuid, fcDatabase: o.fcDatabase, shDatabase: o.shDatabase };
    const paramsDigest = digestOf(params);
    const runPath = join(outDir, RUN_FILES.run);
    const previous = await readRunState(runPath, o.restart, now);
    if (previous !== null && previous.paramsDigest !== paramsDigest && !o.restart) {
      const p = previous.params;
      throw new SafetyError(`${outDir} holds a run of other parameters (school ${p.schId}, form ${p.formUuid}, FC ${p.fcDatabase}, SH ${p.shDatabase}); use another --out-dir or pass --restart`);
    }
    const resume = previous !== null && previous.paramsDigest === paramsDigest && previous.state === 'scanning' && !o.restart;
    let run: RunState;
    if (resume) {
      run = previous;
    } else {
      // A new run: the previous run's scans and diff files go first, checkpoints before anything,
      // so the directory never mixes two runs — a new run stopped before a side's scan began must
      // not resume onto the previous run's finished manifest of that side (it predates the new
      // task start: a row deleted since would be missed).
      for (const f of [RUN_FILES.fcCheckpoint, RUN_FILES.shCheckpoint, RUN_FILES.fcManifest, RUN_FILES.shManifest, ...Object.values(DIFF_FILES)]) {
        await unlink(join(outDir, f)).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw new EnvironmentError(`cannot remove the previous run's ${f} from ${outDir}: ${err.code ?? err.message}`, { cause: err });
        });
      }
      deps.onPhase?.('task-start', {});
      const taskStart = await takeTaskStart(await deps.shDb(), deps.signal);
      if (taskStart === null) return { kind: 'stopped', run: null, resumed: false, phase: 'task-start', reason: 'signal', outDir };
      run = { format: RUN_FORMAT, runId: randomUUID(), params, paramsDigest, taskStart: taskStart.local, taskStartUtc: taskStart.utc, startedAt: now().toISOString(), state: 'scanning', completedAt: null, counts: null };
      await writeFileAtomic(runPath, `${JSON.stringify(run, null, 2)}\n`, 0o600);
    }

    const scans: Partial<Record<ManifestSide, ScanResult>> = {};
    for (const side of ['fc', 'sh'] as const) {
      const phase: RunPhase = side === 'fc' ? 'scan-fc' : 'scan-sh';
      deps.onPhase?.(phase, { runId: run.runId, taskStart: run.taskStart });
      const db = side === 'fc' ? await deps.fcDb() : await deps.shDb();
      if (side === 'fc' && run.taskStartUtc !== undefined && (await waitForFcClock(db, run.taskStartUtc, deps.signal)) === 'aborted') {
        return { kind: 'stopped', run, resumed: resume, phase, reason: 'signal', outDir };
      }
      const r = await runManifestScan(
        {
          side,
          schId: o.schId,
          formUuid: o.formUuid,
          shard: null,
          size: o.size,
          out: join(outDir, side === 'fc' ? RUN_FILES.fcManifest : RUN_FILES.shManifest),
          checkpoint: join(outDir, side === 'fc' ? RUN_FILES.fcCheckpoint : RUN_FILES.shCheckpoint),
          restart: !resume,
          database: side === 'fc' ? o.fcDatabase : o.shDatabase,
        },
        { db, signal: deps.signal, now, command: 'reconcile run', onPage: (p) => deps.onPage?.(side, p) },
      );
      scans[side] = r;
      if (r.stoppedBy !== null) return { kind: 'stopped', run, resumed: resume, phase, reason: r.stoppedBy, outDir };
    }

    deps.onPhase?.('diff', { runId: run.runId, taskStart: run.taskStart });
    const diff = await runDiff(
      {
        fcFile: join(outDir, RUN_FILES.fcManifest),
        shFile: join(outDir, RUN_FILES.shManifest),
        fcCheckpoints: [join(outDir, RUN_FILES.fcCheckpoint)],
        shCheckpoints: [join(outDir, RUN_FILES.shCheckpoint)],
        taskStart: run.taskStart,
        ...(run.taskStartUtc !== undefined ? { taskStartUtc: run.taskStartUtc } : {}),
        outDir,
      },
      { signal: deps.signal, now, ...(deps.onDiffProgress ? { onProgress: deps.onDiffProgress } : {}) },
    );
    if (diff.kind === 'stopped') return { kind: 'stopped', run, resumed: resume, phase: 'diff', reason: diff.reason, outDir };
    run = { ...run, state: 'completed', completedAt: now().toISOString(), counts: diff.summary.counts };
    await writeFileAtomic(runPath, `${JSON.stringify(run, null, 2)}\n`, 0o600);
    return { kind: 'done', run, resumed: resume, scans: scans as Record<ManifestSide, ScanResult>, summary: diff.summary, outDir };
  } finally {
    await lock.release();
  }
}
