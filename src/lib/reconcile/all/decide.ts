/**
 * The decisions of `reconcile run --all`, pure: which pairs there are, the default run id, what a
 * pair's run came to and what the task table records of it, the run's summary and exit code.
 */
import { shellWord } from '../../cli/shell.js';
import { ExitCode } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import type { RunOutcome } from '../../metrics/run-metrics.js';
import { pauseFields } from '../../pause/decide.js';
import type { ReconcilePairResult } from '../metrics.js';
import { runPlan } from '../run/decide.js';
import type { ReconcileRunResult, RunState } from '../run/types.js';
import { CATEGORIES, type Category, differencesOf, emptyCounts } from '../diff/decide.js';
import type { LedgerEntry } from '../ledger/types.js';

import {
  ALL_SUMMARY_FORMAT,
  type Pair,
  type PairFound,
  type PairOutcome,
  type PairResult,
  type RunAllResult,
  type RunAllSummary,
  type TaskRow,
} from './types.js';

function comparePairs(a: Pair, b: Pair): number {
  const sa = BigInt(a.schId);
  const sb = BigInt(b.schId);
  if (sa !== sb) return sa < sb ? -1 : 1;
  return a.formUuid < b.formUuid ? -1 : a.formUuid > b.formUuid ? 1 : 0;
}

/**
 * Every pair found on either side, once, ordered by school (as a number) and form; a pair found
 * only locally is kept (its rows are the retire candidates).
 * @example mergePairs([{ schId: '5', formUuid: 'f' }], [{ schId: '5', formUuid: 'f' }, { schId: '7', formUuid: 'g' }]) // [{ schId: '5', formUuid: 'f', atFc: true, atSh: true }, { schId: '7', formUuid: 'g', atFc: false, atSh: true }]
 */
export function mergePairs(fc: readonly Pair[], sh: readonly Pair[]): PairFound[] {
  const byKey = new Map<string, PairFound>();
  // Forms compare exactly, as the scans' utf8mb4_bin columns do: two spellings are two pairs.
  const key = (p: Pair) => `${BigInt(p.schId)}/${p.formUuid}`;
  for (const p of fc)
    byKey.set(key(p), { schId: String(BigInt(p.schId)), formUuid: p.formUuid, atFc: true, atSh: false });
  for (const p of sh) {
    const k = key(p);
    const seen = byKey.get(k);
    byKey.set(
      k,
      seen
        ? { ...seen, atSh: true }
        : { schId: String(BigInt(p.schId)), formUuid: p.formUuid, atFc: false, atSh: true },
    );
  }
  return [...byKey.values()].sort(comparePairs);
}

/**
 * A new default `--run-id`: the SH database's UTC clock at the start, to the minute
 * (`YYYY-MM-DDTHH-MMZ`). Processes without --run-id begun within the join window of a run's last
 * activity join that run instead (./sql.ts `joinableRun`); only a process that finds none names a
 * new one, so a run made by hand during the day never stands in for the next night's.
 * @example defaultRunId('2026-12-01 18:30:07') // '2026-12-01T18-30Z'
 */
export function defaultRunId(utcNow: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2}):\d{2}/.exec(utcNow);
  if (!m) throw new Error(`the SH database's UTC_TIMESTAMP() is not a date and time: ${JSON.stringify(utcNow)}`);
  return `${m[1]}T${m[2]}-${m[3]}Z`;
}

/** The candidates for a new default run id, in order: the minute's id, then `-2`, `-3`, … */
export const DEFAULT_ID_CANDIDATES = 10;
export function defaultRunIdCandidates(utcNow: string): string[] {
  const base = defaultRunId(utcNow);
  return [base, ...Array.from({ length: DEFAULT_ID_CANDIDATES - 1 }, (_, i) => `${base}-${i + 2}`)];
}

/**
 * The first candidate no run has: a run that went quiet in the same minute (a clock set back) is
 * never continued under a new run's name.
 * @example newDefaultRunId(['2026-12-01T18-30Z', '2026-12-01T18-30Z-2'], ['2026-12-01T18-30Z']) // '2026-12-01T18-30Z-2'
 */
export function newDefaultRunId(candidates: readonly string[], taken: readonly string[]): string {
  const id = candidates.find((c) => !taken.includes(c));
  if (id === undefined) throw new Error(`every default run id ${candidates[0]}… is taken: give --run-id`);
  return id;
}

/** A pair's result from its run (or the error it threw), before the lease is accounted for. */
export function pairResultOf(
  r:
    | { kind: 'run'; result: ReconcileRunResult }
    | { kind: 'error'; exitCode: number; message: string; outage: boolean },
  seconds: number,
): PairResult {
  // An outage is no fault of the pair: given back for a later run, never marked FAILED.
  if (r.kind === 'error')
    return r.outage
      ? { result: 'stopped', error: r.message, seconds }
      : { result: 'failed', exitCode: r.exitCode, error: r.message, seconds };
  const run = r.result;
  if (run.kind === 'stopped')
    return run.paused ? { result: 'paused', seconds, paused: run.paused } : { result: 'stopped', seconds };
  const counts = run.summary.counts;
  return {
    result: 'done',
    counts,
    differences: differencesOf(counts),
    fcRows: run.summary.inputs.fc.rows,
    shRows: run.summary.inputs.sh.rows,
    pairRunId: run.run.runId,
    resumed: run.resumed,
    seconds,
  };
}

/** A pair's end with the seconds it waited on the throttle: recorded for a pair done or failed, the others as they are. */
export function withThrottled(r: PairResult, throttledSeconds: number): PairResult {
  return r.result === 'done' || r.result === 'failed' ? { ...r, throttledSeconds } : r;
}

/**
 * Why a form uuid cannot name its pair's folder `<out-dir>/<school>/<form>/`, or null. A stored form
 * uuid may hold anything (an SH-only pair's is never checked): a `.`, `..` or empty path segment would
 * put the pair's files in another folder — outside the run directory (`../../etc`), or another pair's.
 * @example pairFolderProblem('../../tmp/x') // 'form uuid "../../tmp/x" cannot name …'
 */
export function pairFolderProblem(formUuid: string): string | null {
  const bad = formUuid.includes('\0') || formUuid.split('/').some((s) => s === '' || s === '.' || s === '..');
  return bad
    ? `form uuid ${JSON.stringify(formUuid)} cannot name the pair's folder (a ., .. or empty path segment): not run, nothing written`
    : null;
}

/**
 * What to do with a pair before running it, from its directory's run.json: a run of other
 * parameters (other FC or SH databases) is refused as `reconcile run` refuses it, the folder left
 * as it is; a completed diff of this same `--all` run is adopted (the process that made it died
 * before recording it); an unfinished run of another (a night killed earlier) starts afresh —
 * resuming it would mix that night's FC manifest with tonight's; anything else runs as `reconcile
 * run` would.
 */
export function pairStartOf(
  previous: Pick<RunState, 'state' | 'allRunId' | 'counts' | 'runId' | 'params' | 'paramsDigest'> | null,
  runId: string,
  paramsDigest: string,
  outDir: string,
): { kind: 'adopt' | 'restart' | 'run' } | { kind: 'refuse'; message: string } {
  if (previous === null) return { kind: 'run' };
  const plan = runPlan(previous as RunState, paramsDigest, false, outDir);
  if (plan.kind === 'refuse') return plan;
  if (previous.state === 'completed' && previous.allRunId === runId && previous.counts !== null)
    return { kind: 'adopt' };
  if (previous.state === 'scanning' && previous.allRunId !== runId) return { kind: 'restart' };
  return { kind: 'run' };
}

/**
 * What a worker does when its claim found no pair (`SKIP LOCKED` read nothing), from the run's pairs
 * as committed: `retry` soon while some are claimable — the claim skipped rows another transaction
 * held for a moment (a process registering the same pairs, another claim), it must not leave them
 * PENDING; else worker 0 `wait`s while other processes hold pairs (one may be killed, its lease
 * expire), so the run is finished when its processes end; else `leave`.
 * @example afterNoClaim(1, { claimable: 3, heldByOthers: 0 }) // 'retry'
 */
export function afterNoClaim(
  worker: number,
  open: { claimable: number; heldByOthers: number },
): 'retry' | 'wait' | 'leave' {
  if (open.claimable > 0) return 'retry';
  return worker === 0 && open.heldByOthers > 0 ? 'wait' : 'leave';
}

/** What the task table records of a pair's result: its end, or the pair given back unfinished. */
export function taskWriteOf(
  r: PairResult,
  /** the process that finished the pair (the claim owner, cleared by the finish): kept in the result */
  process: string | null = null,
  /** the run's folder (`--out-dir`, absolute) on this host: `reconcile report --run-id` finds it there */
  runDir: string | null = null,
): { kind: 'finish'; state: 'DONE' | 'FAILED'; resultJson: string } | { kind: 'release' } {
  const by = { ...(process === null ? {} : { process }), ...(runDir === null ? {} : { runDir }) };
  if (r.result === 'done' || r.result === 'adopted')
    return {
      kind: 'finish',
      state: 'DONE',
      resultJson: JSON.stringify({
        counts: r.counts,
        differences: r.differences,
        pairRunId: r.pairRunId,
        seconds: r.seconds,
        ...(r.result === 'done' ? { throttledSeconds: r.throttledSeconds ?? 0 } : {}),
        ...by,
      }),
    };
  if (r.result === 'failed')
    return {
      kind: 'finish',
      state: 'FAILED',
      resultJson: JSON.stringify({
        exitCode: r.exitCode,
        error: r.error.slice(0, 2000),
        seconds: r.seconds,
        throttledSeconds: r.throttledSeconds ?? 0,
        ...by,
      }),
    };
  return { kind: 'release' };
}

/** The ledger's VARCHAR(1024) `error`. */
const LEDGER_ERROR_CHARS = 1024;

/**
 * The drift ledger's row of a pair's end (../ledger/types.ts), or null for a pair given back
 * unfinished: a pair done or adopted (its row counts unknown then: null) is DONE, a failed one FAILED.
 * @example ledgerEntryOf('2026-12-01T18-30Z', { schId: '5', formUuid: f }, result, 'host-a')?.result // 'DONE'
 */
export function ledgerEntryOf(runId: string, pair: Pair, r: PairResult, host: string | null): LedgerEntry | null {
  const throttledSeconds = 'throttledSeconds' in r ? (r.throttledSeconds ?? 0) : 0;
  const base = { runId, schId: pair.schId, formUuid: pair.formUuid, seconds: r.seconds, throttledSeconds, host };
  if (r.result === 'done' || r.result === 'adopted')
    return {
      ...base,
      result: 'DONE',
      counts: { ...emptyCounts(), ...r.counts },
      differences: r.differences,
      fcRows: r.result === 'done' ? r.fcRows : null,
      shRows: r.result === 'done' ? r.shRows : null,
      error: null,
    };
  if (r.result === 'failed')
    return {
      ...base,
      result: 'FAILED',
      counts: emptyCounts(),
      differences: 0,
      fcRows: null,
      shRows: null,
      error: Array.from(r.error).slice(0, LEDGER_ERROR_CHARS).join(''),
    };
  return null;
}

function parseResult(json: string | null): { counts?: Record<string, number>; differences?: number; error?: string } {
  if (json === null) return {};
  try {
    const v = JSON.parse(json) as unknown;
    return typeof v === 'object' && v !== null ? (v as { counts?: Record<string, number> }) : {};
  } catch {
    return {};
  }
}

/**
 * The run over every pair, from the task table: pairs by state, answers by category over the pairs
 * done, the pairs with differences and the pairs failed (`summary.json`).
 */
export function summarizeRun(runId: string, tasks: readonly TaskRow[], updatedAt: string): RunAllSummary {
  const byState: Record<string, number> = { PENDING: 0, CLAIMED: 0, DONE: 0, FAILED: 0 };
  const counts = emptyCounts();
  const pairsWithDifferences: Array<Pair & { differences: number }> = [];
  const pairsFailed: Array<Pair & { error: string }> = [];
  for (const t of tasks) {
    byState[t.state] = (byState[t.state] ?? 0) + 1;
    const pair = { schId: String(t.sch_id), formUuid: t.form_uuid };
    const r = parseResult(t.result_json);
    if (t.state === 'DONE') {
      for (const c of CATEGORIES) counts[c] += Number(r.counts?.[c] ?? 0);
      if ((r.differences ?? 0) > 0) pairsWithDifferences.push({ ...pair, differences: r.differences! });
    }
    if (t.state === 'FAILED') pairsFailed.push({ ...pair, error: r.error ?? 'unknown' });
  }
  return {
    format: ALL_SUMMARY_FORMAT,
    runId,
    pairs: tasks.length,
    byState,
    counts,
    pairsWithDifferences,
    pairsFailed,
    updatedAt,
  };
}

/** The counts of this process's pairs by result, and the answers by category over those done. */
export function tallyOutcomes(outcomes: readonly PairOutcome[]): {
  byResult: Record<string, number>;
  counts: Record<Category, number>;
  withDifferences: number;
} {
  const byResult: Record<string, number> = { done: 0, adopted: 0, failed: 0, paused: 0, stopped: 0, lost: 0 };
  const counts = emptyCounts();
  let withDifferences = 0;
  for (const o of outcomes) {
    byResult[o.result] = (byResult[o.result] ?? 0) + 1;
    if (o.result !== 'done' && o.result !== 'adopted') continue;
    for (const c of CATEGORIES) counts[c] += o.counts[c] ?? 0;
    if (o.differences > 0) withDifferences++;
  }
  return { byResult, counts, withDifferences };
}

/**
 * The exit code and the warning of a `--all` run: 0; 3 (or the error's code) when an outage
 * stopped it; 1 when a stop signal ended it, a pair failed (this process's, or any of the run's
 * when it ended), or (`failIfDiff`) a pair has a difference; 4 instead of 1 when one of this
 * process's pairs was refused by a safety check (its folder holds a run of other databases, an
 * unreadable run.json), as `reconcile run` exits for that pair; 1 with a warning when no pair was
 * found, none at FC while SH has some (the wrong FC database or consumer key), a `--school`/`--form`
 * value matched no pair (a typo), or the run named by `--run-id` was complete before this process
 * began (a run id reused: nothing was run), unless `allowEmpty`. A pause is exit 0 (it did as
 * told) unless pairs failed: a pause never hides a failure (SPEC §2). A process that joined a
 * default run already complete exits with that run's verdict: its FAILED pairs, and its
 * differences under `failIfDiff`.
 */
export function allExit(
  r: Pick<RunAllResult, 'runId' | 'found' | 'outcomes' | 'stop' | 'summary' | 'completeAtStart' | 'runIdGiven'>,
  o: { failIfDiff: boolean; allowEmpty: boolean },
): { exitCode: number; warning: string | null; reason: string | null } {
  if (r.stop?.by === 'error')
    return {
      exitCode: r.stop.exitCode,
      warning: null,
      reason: `stopped by an outage, the pairs held given back: ${r.stop.message}`,
    };
  const t = tallyOutcomes(r.outcomes);
  const runFailed = r.summary?.byState['FAILED'] ?? 0;
  const refused = r.outcomes.some((p) => p.result === 'failed' && p.exitCode === ExitCode.SAFETY);
  const failure =
    (t.byResult['failed'] ?? 0) > 0
      ? `${t.byResult['failed']} pair(s) failed${refused ? ' (refused by a safety check: see its pair line)' : ''}`
      : runFailed > 0
        ? `${runFailed} pair(s) of run ${r.runId} failed (run it again with --run-id ${shellWord(r.runId)} to retry them)`
        : null;
  const exitOf = (reason: string | null) =>
    reason === null ? ExitCode.OK : refused ? ExitCode.SAFETY : ExitCode.ITEMS_FAILED;
  if (r.stop?.by === 'paused') return { exitCode: exitOf(failure), warning: null, reason: failure };
  const warning = o.allowEmpty ? null : emptyWarning(r);
  // a joined run complete before this process began: its differences are this process's verdict too
  const differing =
    r.completeAtStart && r.runIdGiven === false ? (r.summary?.pairsWithDifferences.length ?? 0) : t.withDifferences;
  const reason =
    r.stop?.by === 'signal'
      ? 'stopped by a signal (run again to continue)'
      : failure !== null
        ? failure
        : o.failIfDiff && differing > 0
          ? `${differing} pair(s) with differences (--fail-if-diff)`
          : warning !== null
            ? 'warning'
            : null;
  return { exitCode: exitOf(reason), warning, reason };
}

function emptyWarning(r: Pick<RunAllResult, 'runId' | 'found' | 'completeAtStart' | 'runIdGiven'>): string | null {
  if (r.found.pairs === 0)
    return 'warning: no (school, form) pair found at FC nor at SH for these filters: check --school/--form, the databases and --consumer (--allow-empty accepts it)';
  if (r.found.atFc === 0)
    return `warning: no pair found at FC while SH has ${r.found.atSh}: check the FC database and --consumer (--allow-empty accepts it)`;
  if ((r.found.unmatched ?? []).length > 0)
    return `warning: ${r.found.unmatched!.join(', ')} matched no pair at FC nor at SH: a typo? (--allow-empty accepts it)`;
  // a run id given again (`--run-id`); a default run joined complete is no mistake: its verdict stands
  if (r.completeAtStart && r.runIdGiven !== false)
    return `warning: every pair of run ${r.runId} was done before this process began: nothing was run (a fixed --run-id reused? leave it out for one run per night, or give a new one)`;
  return null;
}

/** What `reconcile run --all` reports: the warning for stderr, the exit code, the summary line and the run's metrics. */
export interface AllReport {
  readonly warning: string | null;
  readonly exitCode: number;
  readonly fields: Summary;
  readonly counts: Readonly<Record<Category, number>>;
  readonly outcome: RunOutcome;
}

/**
 * The summary of this process's share (pairs by result, answers by category) and of the whole run
 * (`run`: pairs by state, from the task table), the exit code ({@link allExit}) and the metrics.
 */
export function allReport(
  r: RunAllResult,
  o: { failIfDiff: boolean; allowEmpty: boolean; summaryFile: string },
  elapsedMs: number,
): AllReport {
  const { exitCode, warning, reason } = allExit(r, o);
  const t = tallyOutcomes(r.outcomes);
  const joined = joinedComplete(r);
  // The file holds this night's numbers only if this host ran some of its pairs; else an earlier
  // night's, which must not stand for tonight's (issue 36 §17 review).
  const keepsFile = joined && (r.earlier?.length ?? 0) > 0;
  const fields: Summary = {
    command: 'reconcile run',
    all: true,
    runId: r.runId,
    exitCode,
    ...(reason !== null ? { reason } : {}),
    ...(joined
      ? {
          joined: true,
          note: keepsFile
            ? `run ${r.runId} was complete before this process began: joined it and ran nothing; its numbers (summary.json, the metrics file) are left as they are`
            : `run ${r.runId} was complete before this process began: joined it and ran nothing; this host ran none of its pairs, so its metrics file holds the run's verdict and no pair of an earlier night`,
        }
      : {}),
    ...(r.stop !== null ? { stoppedBy: r.stop.by } : {}),
    ...(r.stop?.by === 'paused' && r.stop.paused ? { paused: pauseFields(r.stop.paused) } : {}),
    pairsFound: r.found.pairs,
    pairsRun: r.outcomes.length,
    byResult: t.byResult,
    pairsWithDifferences: t.withDifferences,
    run:
      r.summary === null
        ? null
        : {
            pairs: r.summary.pairs,
            byState: r.summary.byState,
            pairsWithDifferences: r.summary.pairsWithDifferences.length,
          },
    summaryFile: o.summaryFile,
    ...(r.pruned ? { pruned: r.pruned } : {}),
    seconds: Math.round(elapsedMs / 100) / 10,
  };
  const outcome: RunOutcome = {
    exitCode,
    rowsByResult: t.counts,
    interrupted: r.stop !== null,
    suspect: warning !== null,
    paused: r.stop?.by === 'paused',
    ...(keepsFile ? { unchanged: true } : {}),
  };
  return { warning, exitCode, fields, counts: t.counts, outcome };
}

/**
 * A default run joined complete, with nothing run by this process: a same-night re-run (cron
 * twice, a person checking). Its metrics must not be rewritten without the night's pairs, which
 * would clear FcctlReconcileDifferences with nothing fixed (issue 36 §7) — when this host ran some
 * of them; a host that ran none (started after the others had done them all) writes its file.
 */
export function joinedComplete(r: Pick<RunAllResult, 'completeAtStart' | 'runIdGiven' | 'outcomes' | 'stop'>): boolean {
  return r.completeAtStart === true && r.runIdGiven === false && r.outcomes.length === 0 && r.stop === null;
}

/** The tasks of pairs this process did not run (its own outcomes are its own metrics). */
export function notRunBy(tasks: readonly TaskRow[], outcomes: readonly PairOutcome[]): TaskRow[] {
  const ran = new Set(outcomes.map((p) => `${p.schId}/${p.formUuid}`));
  return tasks.filter((t) => !ran.has(`${String(t.sch_id)}/${t.form_uuid}`));
}

/**
 * The metrics of the pairs this host finished earlier in the run, from their `result_json`: written
 * again as they were (rows, differences, exit code, duration), so that a retry of the night's FAILED
 * pairs (`--run-id`, as the failure line says) does not drop the other pairs' differences and
 * resolve FcctlReconcileDifferences with nothing fixed (issue 36 §7 review).
 */
export function earlierPairsOf(tasks: readonly TaskRow[]): ReconcilePairResult[] {
  return tasks.map((t) => {
    const r = parseResult(t.result_json) as { counts?: Record<string, number>; exitCode?: number; seconds?: number };
    const base = {
      schId: String(t.sch_id),
      formUuid: t.form_uuid,
      finishedAtSeconds: 0,
      durationSeconds: Number(r.seconds ?? 0),
    };
    return t.state === 'DONE' && r.counts !== undefined
      ? { ...base, exitCode: ExitCode.OK, counts: r.counts }
      : { ...base, exitCode: Number(r.exitCode ?? ExitCode.ITEMS_FAILED) };
  });
}

/** A pair's JSON line (`event: "pair"`): what it came to, where its files are. */
export function pairLine(p: PairOutcome): Record<string, unknown> {
  const base = {
    school: p.schId,
    form: p.formUuid,
    result: p.result,
    attempt: p.attempt,
    seconds: p.seconds,
    dir: p.outDir,
  };
  if (p.result === 'done')
    return {
      ...base,
      differences: p.differences,
      counts: p.counts,
      fcRows: p.fcRows,
      shRows: p.shRows,
      resumed: p.resumed,
      throttledSeconds: p.throttledSeconds ?? 0,
    };
  if (p.result === 'adopted') return { ...base, differences: p.differences, counts: p.counts };
  if (p.result === 'failed')
    return { ...base, exitCode: p.exitCode, error: p.error, throttledSeconds: p.throttledSeconds ?? 0 };
  return p.error !== undefined ? { ...base, error: p.error } : base;
}

/**
 * The pairs this process ran, as the metrics name them (src/lib/reconcile/metrics.ts): a pair done
 * with its counts, a failed one with its exit code, one stopped or lost as interrupted.
 */
export function pairMetricsOf(outcomes: readonly PairOutcome[], finishedAtSeconds: number): ReconcilePairResult[] {
  return outcomes.map((p) => {
    const base = { schId: p.schId, formUuid: p.formUuid, finishedAtSeconds, durationSeconds: p.seconds };
    if (p.result === 'done' || p.result === 'adopted') return { ...base, exitCode: ExitCode.OK, counts: p.counts };
    if (p.result === 'failed') return { ...base, exitCode: p.exitCode };
    return {
      ...base,
      exitCode: ExitCode.ITEMS_FAILED,
      interrupted: true,
      ...(p.result === 'paused' ? { paused: true } : {}),
    };
  });
}
