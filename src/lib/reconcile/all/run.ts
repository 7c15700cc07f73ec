/**
 * `reconcile run --all`: every (school, form) pair found on either side, each run as `reconcile
 * run` does in `DIR/<school>/<form>/`, `concurrency` pairs at once, shared with the other processes
 * of the same run id through the SH task table (./sql.ts):
 *
 * 1. find the pairs (FC grants with answers, SH projection rows) and register them (INSERT IGNORE:
 *    every process registers what it finds, so a process started later adds a pair that appeared);
 * 2. each worker claims one pair with a lease, renews the lease while the pair runs, and records
 *    DONE or FAILED under its claim; a pair stopped (pause, signal) is given back PENDING; a lease
 *    that could not be renewed (another process took the pair after it expired) stops the pair here;
 * 3. `DIR/summary.json`: the whole run as the task table tells it when this process ends.
 *
 * A killed process's pairs are claimed again once their lease expires; on the same host they resume
 * from their checkpoints (the pair directory and its lock are local files), on another host they
 * start afresh there. Start-up (connections, the task start) is paid once, not per pair. An outage
 * (a database or disk this process cannot use) gives the pairs back and ends the process (exit 3)
 * instead of marking every pair FAILED; a pair's own failure (its directory refused, bad data) is
 * recorded FAILED and the others go on.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { FcctlError, ExitCode, SafetyError, UsageError } from '../../cli/exit.js';
import type { Db } from '../../db/connect.js';
import { writeFileAtomic } from '../../files/atomic.js';
import { paramsDigest as digestOf } from '../../canon/params-digest.js';
import { readRunState } from '../run/input.js';
import { runReconcile } from '../run/run.js';
import { takeTaskStart } from '../run/store.js';
import { RUN_FILES } from '../run/types.js';
// an outage is no fault of the pair: given back for a later run, never marked FAILED
import { isOutage } from '../../db/outage.js';
import { differencesOf } from '../diff/decide.js';
import { runFinished } from '../report/decide.js';
import { writeRunReport } from '../report/run.js';
import { pruneNights } from '../ledger/store.js';
import {
  afterNoClaim,
  defaultRunId,
  ledgerEntryOf,
  notRunBy,
  pairFolderProblem,
  pairResultOf,
  pairStartOf,
  taskWriteOf,
  withThrottled,
} from './decide.js';
import { throttledSeconds } from '../../db/throttle.js';
import {
  claimPair,
  findPairs,
  joinableRun,
  joinOrBeginDefaultRun,
  openPairs,
  readTaskClaim,
  registerPairs,
  renewLease,
  hostFinishedTasks,
  runSummary,
  shUtcNow,
  writeTask,
} from './store.js';
import {
  ALL_SUMMARY_FORMAT,
  type Pair,
  type PairFilter,
  type PairOutcome,
  type PairResult,
  type RunAllDeps,
  type RunAllOptions,
  type RunAllResult,
  type RunAllSummary,
  type StopReason,
  type TaskRow,
} from './types.js';

/** A task start taken for one pair is shared by the pairs begun within this many milliseconds. */
const TASK_START_SHARE_MS = 10_000;
/** How often a process with nothing left to claim looks again at the pairs other processes hold (at most). */
const HELD_POLL_MS = 2000;
/** A claim that skipped claimable rows (locked for a moment by another transaction) is tried again after this. */
const CLAIM_RETRY_MS = 200;
/** A lease not renewed for this share of its length is given up: another process may take it soon. */
const LEASE_GIVE_UP = 0.8;

interface Shared {
  readonly runId: string;
  readonly startedUtc: string;
  readonly outDir: string;
  readonly shDb: Db;
  /** this host's name, on the ledger rows of the pairs it finishes */
  readonly host: string;
  /** this process (`deps.owner`): recorded with each pair it finishes, for the report's processes */
  readonly owner: string;
  readonly now: () => Date;
  readonly taskStart: () => Promise<{ local: string; utc: string } | null>;
  stop: StopReason | null;
}

/**
 * Runs this process's share of a run over every pair.
 * @example const r = await runReconcileAll({ outDir: '/var/lib/fcctl/reconcile', runId: null, filter: { schools: [], forms: [] }, consumerAppKey, concurrency: 4, leaseSeconds: 300, size: 500, restart: false, fcDatabase, shDatabase }, deps)
 */
export async function runReconcileAll(o: RunAllOptions, deps: RunAllDeps): Promise<RunAllResult> {
  const now = deps.now ?? (() => new Date());
  const outDir = resolve(o.outDir);
  const shDb = await deps.shDb();
  const startedUtc = await shUtcNow(shDb);
  const runIdGiven = o.runId !== null;
  await refusePairDir(outDir);
  const pause = await deps.paused?.();
  if (pause) {
    const runId = o.runId ?? (await joinableRun(shDb)) ?? defaultRunId(startedUtc);
    return {
      runId,
      runIdGiven,
      found: { pairs: 0, atFc: 0, atSh: 0 },
      outcomes: [],
      summary: await runSummary(shDb, runId, now),
      stop: { by: 'paused', paused: pause },
    };
  }
  await mkdir(outDir, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot create --out-dir ${outDir}: ${err.code ?? err.message}`);
  });
  const pairs = await findPairs(await deps.fcDb(), shDb, o);
  const runId = o.runId ?? (await joinOrBeginDefaultRun(shDb, pairs, startedUtc));
  if (runIdGiven) await registerPairs(shDb, runId, pairs);
  const before = await runSummary(shDb, runId, now);
  // summary.json from the start, not only at the end: it is what tells a single-pair run pointed at
  // this root, while the run is still going, that the directory is an --all root (issue 26 §9)
  await writeSummaryFile(outDir, before, o.consumerAppKey);
  const completeAtStart =
    before.pairs > 0 &&
    before.byState['PENDING'] === 0 &&
    before.byState['CLAIMED'] === 0 &&
    before.byState['FAILED'] === 0;
  const found = {
    pairs: pairs.length,
    atFc: pairs.filter((p) => p.atFc).length,
    atSh: pairs.filter((p) => p.atSh).length,
    unmatched: unmatchedFilters(o.filter, pairs),
  };
  deps.onPairs?.({
    runId,
    pairs: pairs.length,
    atFcOnly: pairs.filter((p) => !p.atSh).length,
    atShOnly: pairs.filter((p) => !p.atFc).length,
    both: pairs.filter((p) => p.atFc && p.atSh).length,
  });
  const shared: Shared = {
    runId,
    startedUtc,
    outDir,
    shDb,
    host: deps.host,
    owner: deps.owner,
    now,
    taskStart: sharedTaskStart(shDb, deps.signal, now),
    stop: null,
  };
  const outcomes = await workPairs(o, deps, shared);
  const summary = await writeSummary(runId, outDir, shDb, now, o.consumerAppKey).catch((err: Error) => {
    if (shared.stop?.by === 'error') return null; // the outage that stopped the run; its message stands
    throw err;
  });
  // --keep-nights: after the summary, by a process that finished its share (one stopped leaves it to the next)
  const keep = o.keepNights;
  const pruned =
    keep !== undefined && summary !== null && shared.stop === null ? await pruneNights(shDb, keep, runId) : null;
  const report = await lastReport(summary, { outDir, runId, consumer: o.consumerAppKey }, deps.shDb, now);
  // this host's earlier share of the run (a retry after the night's first process): kept in its metrics
  const earlier =
    summary !== null && shared.stop?.by !== 'error'
      ? notRunBy(await hostFinishedTasks(shDb, runId, deps.host), outcomes)
      : [];
  return { runId, runIdGiven, found, completeAtStart, outcomes, earlier, summary, stop: shared.stop, pruned, report };
}

/**
 * `--concurrency` workers claim and run pairs until none is left or the run stops; one of them
 * waits for pairs other processes hold, so the run is finished when its processes end.
 */
async function workPairs(o: RunAllOptions, deps: RunAllDeps, shared: Shared): Promise<PairOutcome[]> {
  const { runId, startedUtc, shDb } = shared;
  const outcomes: PairOutcome[] = [];
  let claims = 0;
  const worker = async (index: number) => {
    try {
      while ((await nextStop(shared, deps)) === null) {
        const task = await claimPair(
          shDb,
          runId,
          o.filter,
          `${deps.owner}:${++claims}`,
          deps.host,
          o.leaseSeconds,
          startedUtc,
        );
        if (task === null) {
          // nothing read is not nothing left: SKIP LOCKED passes rows held for a moment (./decide.ts)
          const next = afterNoClaim(index, await openPairs(shDb, runId, deps.owner, o.filter, startedUtc));
          if (next === 'leave') break;
          const ms = next === 'retry' ? CLAIM_RETRY_MS : Math.min((o.leaseSeconds * 1000) / 3, HELD_POLL_MS);
          if (!(await sleep(ms, deps.signal))) shared.stop ??= { by: 'signal' };
          continue;
        }
        const outcome = await runPair(task, o, deps, shared);
        outcomes.push(outcome);
        deps.onPair?.(outcome);
      }
    } catch (err) {
      shared.stop ??= {
        by: 'error',
        message: (err as Error).message,
        exitCode: err instanceof FcctlError ? err.exitCode : ExitCode.ENVIRONMENT,
      };
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, i) => worker(i)));
  return outcomes;
}

/** Why to stop before the next claim, if anything: a signal, the pause, or a stop already decided. */
async function nextStop(shared: Shared, deps: RunAllDeps): Promise<StopReason | null> {
  if (shared.stop === null && deps.signal.aborted) shared.stop = { by: 'signal' };
  if (shared.stop === null) {
    const paused = await deps.paused?.();
    if (paused) shared.stop = { by: 'paused', paused };
  }
  return shared.stop;
}

/** The filter values no pair matched (a typo in a cron line must not stay green). */
function unmatchedFilters(f: PairFilter, pairs: readonly Pair[]): string[] {
  const schools = new Set(pairs.map((p) => String(BigInt(p.schId))));
  const forms = new Set(pairs.map((p) => p.formUuid));
  return [
    ...f.schools.filter((s) => !schools.has(String(BigInt(s)))).map((s) => `--school ${s}`),
    ...f.forms.filter((x) => !forms.has(x)).map((x) => `--form ${x}`),
  ];
}

/** Waits `ms`; false when the stop signal came first. */
async function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return delay(ms, undefined, { signal }).then(
    () => true,
    () => false,
  );
}

/**
 * A task start shared by the pairs begun within {@link TASK_START_SHARE_MS} of it: the wait for the
 * clock to pass its second is paid once for them, not once per pair.
 */
function sharedTaskStart(
  shDb: Db,
  signal: AbortSignal,
  now: () => Date,
): () => Promise<{ local: string; utc: string } | null> {
  let cached: { at: number; value: { local: string; utc: string } } | null = null;
  let pending: Promise<{ local: string; utc: string } | null> | null = null;
  return () => {
    if (cached !== null && now().getTime() - cached.at < TASK_START_SHARE_MS) return Promise.resolve(cached.value);
    pending ??= takeTaskStart(shDb, signal).then(
      (value) => {
        pending = null;
        if (value !== null) cached = { at: now().getTime(), value };
        return value;
      },
      (err: unknown) => {
        pending = null;
        throw err;
      },
    );
    return pending;
  };
}

/**
 * The lease of a running pair, renewed every third of it. It is lost when a renewal finds the claim
 * gone (another process took it) or when no renewal has succeeded for {@link LEASE_GIVE_UP} of it
 * (the database unreachable: another process may take the pair once it expires); `lost` aborts then.
 */
function keepLease(
  shared: Shared,
  task: { id: string | number; token: string; generation: string },
  leaseSeconds: number,
): { lost: AbortSignal; stop: () => void } {
  const lost = new AbortController();
  let renewedAt = shared.now().getTime();
  const timer = setInterval(
    () => {
      renewLease(shared.shDb, task, leaseSeconds).then(
        (r) => (r.affectedRows === 0 ? lost.abort() : (renewedAt = shared.now().getTime())),
        () => {
          if (shared.now().getTime() - renewedAt > LEASE_GIVE_UP * leaseSeconds * 1000) lost.abort();
        },
      );
    },
    (leaseSeconds * 1000) / 3,
  );
  return { lost: lost.signal, stop: () => clearInterval(timer) };
}

/** This process's throttle wait from now on, in seconds (pairs run at once each count the same wait). */
function waitSince(deps: RunAllDeps): () => number {
  const waited = () => throttledSeconds([deps.throttle?.fc, deps.throttle?.sh]);
  const before = waited();
  return () => Math.round((waited() - before) * 10) / 10;
}

/**
 * How a pair starts (./decide.ts `pairStartOf`) from its folder's run.json; a form uuid that cannot
 * name a folder (`../..`) is refused before anything is read or written there.
 */
async function pairStart(pair: { schId: string; formUuid: string }, outDir: string, o: RunAllOptions, shared: Shared) {
  const folderProblem = pairFolderProblem(pair.formUuid);
  const previous = folderProblem
    ? null
    : await readRunState(join(outDir, RUN_FILES.run), false, shared.now).catch(() => null);
  const paramsDigest = digestOf({
    schId: pair.schId,
    formUuid: pair.formUuid,
    fcDatabase: o.fcDatabase,
    shDatabase: o.shDatabase,
  });
  const start = folderProblem
    ? { kind: 'refuse' as const, message: folderProblem }
    : pairStartOf(previous, shared.runId, paramsDigest, outDir);
  return { previous, start };
}

/** One pair under its lease: adopted, or run (afresh when its directory holds another night's run); its end recorded under the claim. */
async function runPair(
  task: TaskRow & { token: string; generation: string },
  o: RunAllOptions,
  deps: RunAllDeps,
  shared: Shared,
): Promise<PairOutcome> {
  const pair = { schId: String(task.sch_id), formUuid: task.form_uuid };
  const outDir = join(shared.outDir, pair.schId, pair.formUuid);
  const started = shared.now().getTime();
  const seconds = () => Math.round((shared.now().getTime() - started) / 100) / 10;
  const throttled = waitSince(deps);
  const { previous, start } = await pairStart(pair, outDir, o, shared);
  let result: PairResult;
  if (start.kind === 'refuse') {
    // another environment's folder (or none that can be the pair's): neither adopted nor touched
    result = { result: 'failed', exitCode: ExitCode.SAFETY, error: start.message, seconds: 0 };
  } else if (start.kind === 'adopt' && previous?.counts) {
    result = {
      result: 'adopted',
      counts: previous.counts,
      differences: differencesOf(previous.counts),
      pairRunId: previous.runId,
      seconds: 0,
    };
  } else {
    const lease = keepLease(shared, task, o.leaseSeconds);
    try {
      const run = await runReconcile(
        {
          schId: pair.schId,
          formUuid: pair.formUuid,
          outDir,
          size: o.size,
          restart: start.kind === 'restart',
          fcDatabase: o.fcDatabase,
          shDatabase: o.shDatabase,
          allRunId: shared.runId,
        },
        {
          fcDb: deps.fcDb,
          shDb: deps.shDb,
          signal: AbortSignal.any([deps.signal, lease.lost]),
          now: shared.now,
          taskStart: shared.taskStart,
          ...(deps.paused ? { paused: deps.paused } : {}),
          ...(deps.throttle ? { throttle: deps.throttle } : {}),
        },
      ).then(
        (r) => ({ kind: 'run' as const, result: r }),
        (err: unknown) => ({
          kind: 'error' as const,
          exitCode: err instanceof FcctlError ? err.exitCode : ExitCode.ENVIRONMENT,
          message: (err as Error).message,
          outage: isOutage(err),
        }),
      );
      result =
        lease.lost.aborted && !deps.signal.aborted
          ? { result: 'lost', seconds: seconds() }
          : withThrottled(pairResultOf(run, seconds()), throttled());
    } finally {
      lease.stop();
    }
  }
  if (result.result === 'stopped' && result.error !== undefined)
    shared.stop ??= { by: 'error', message: result.error, exitCode: ExitCode.ENVIRONMENT };
  if (result.result === 'paused') shared.stop ??= { by: 'paused', ...(result.paused ? { paused: result.paused } : {}) };
  if (result.result === 'stopped' && result.error === undefined) shared.stop ??= { by: 'signal' };
  if (result.result !== 'lost' && !(await recordPair(shared, task, result)))
    result = { result: 'lost', seconds: result.seconds };
  return { ...pair, attempt: task.attempts, outDir, ...result };
}

/** The pair's end (or its release) under its claim; false when the claim was lost meanwhile (nothing written). */
async function recordPair(
  shared: Shared,
  task: TaskRow & { token: string; generation: string },
  result: PairResult,
): Promise<boolean> {
  const w = taskWriteOf(result, shared.owner, shared.outDir);
  const pair = { schId: String(task.sch_id), formUuid: task.form_uuid };
  const ledger = ledgerEntryOf(shared.runId, pair, result, shared.host);
  if ((await writeTask(shared.shDb, task, w, ledger)).affectedRows === 1) return true;
  // 0 rows: lost — unless this very write was made by an attempt whose reply was lost. Only this
  // claim writes under its generation (a new claim increments it), so the row in the wanted
  // state under that generation, unowned, is this write.
  const row = await readTaskClaim(shared.shDb, task.id);
  return (
    row !== undefined &&
    row.state === (w.kind === 'finish' ? w.state : 'PENDING') &&
    row.claim_owner === null &&
    String(row.claim_generation) === task.generation
  );
}

/**
 * A pair's own directory (`reconcile run --school S --form F`: run.json, the diff's summary.json)
 * is no `--all` directory: its summary.json would be overwritten with the run over every pair (exit
 * 4, nothing changed). Checked at the start and again before summary.json is written.
 */
async function refusePairDir(outDir: string): Promise<void> {
  const refuse = (what: string) =>
    new SafetyError(
      `${outDir} is the directory of a single-pair reconcile run (${what}): give reconcile run --all a directory of its own`,
    );
  if ((await stat(join(outDir, RUN_FILES.run)).catch(() => null)) !== null) throw refuse('it holds run.json');
  const text = await readFile(join(outDir, 'summary.json'), 'utf8').catch(() => null);
  if (text === null) return;
  let format: unknown;
  try {
    format = (JSON.parse(text) as { format?: unknown }).format;
  } catch {
    format = undefined;
  }
  if (format !== ALL_SUMMARY_FORMAT)
    throw refuse(
      `its summary.json is ${typeof format === 'string' ? format : 'of no known format'}, not ${ALL_SUMMARY_FORMAT}`,
    );
}

async function writeSummary(
  runId: string,
  outDir: string,
  shDb: Db,
  now: () => Date,
  consumer: string,
): Promise<RunAllSummary> {
  const summary = await runSummary(shDb, runId, now);
  await writeSummaryFile(outDir, summary, consumer);
  return summary;
}

/** summary.json, with the consumer key (`reconcile report` prints the commands of a pair with it). */
async function writeSummaryFile(outDir: string, summary: RunAllSummary, consumer: string): Promise<void> {
  await refusePairDir(outDir);
  await writeFileAtomic(join(outDir, 'summary.json'), `${JSON.stringify({ ...summary, consumer }, null, 2)}\n`, 0o600);
}

/**
 * DIR/report.html, written by the process that finds, after its summary, no pair of the run
 * pending or held: the last one to finish (two finishing together both write it, atomically,
 * from the same task rows). A report that cannot be written is said, not the run's failure.
 */
async function lastReport(
  summary: RunAllSummary | null,
  o: { outDir: string; runId: string; consumer: string },
  shDb: () => Promise<Db>,
  now: () => Date,
): Promise<RunAllResult['report']> {
  if (summary === null || !runFinished(summary.byState)) return null;
  return writeRunReport(o, { shDb, now }).then(
    (file) => ({ file }),
    (err: Error) => ({ error: err.message }),
  );
}
