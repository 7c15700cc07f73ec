import { reconcileSides } from '../command.js';
import { UsageError } from '../../cli/exit.js';
import type { Progress } from '../../cli/output.js';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';
import { reconcileRunReport } from './decide.js';
import { RECONCILE_COMMAND, singlePairSeries } from '../metrics.js';
import { runReconcile } from './run.js';
import type { ReconcileRunOptions as RunnerOptions, ReconcileRunResult, RunPhase } from './types.js';
import { type Ctx, recordRows } from '../../cli/context.js';
import { type ReconcileAllOptions, runReconcileAllCommand } from '../all/command.js';
import { type ThrottleLimits, throttledSeconds } from '../../db/throttle.js';

export interface ReconcileRunOptions extends Omit<RunnerOptions, 'fcDatabase' | 'shDatabase'> {
  /** a school and form with no rows on either side is expected: exit 0, not 1 */
  readonly allowEmpty: boolean;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
  /** `--max-load`, `--max-lag`: the FC scan waits on the FC database, the SH scan on the SH database */
  readonly throttle: ThrottleLimits;
}

/** One pair's options, or `--all`'s (../all/command.ts). */
export type RunOptions = ReconcileRunOptions | { readonly all: ReconcileAllOptions };

const PHASE_LABELS: Partial<Record<RunPhase, string>> = {
  'scan-fc': 'reconcile run: FC manifest',
  'scan-sh': 'reconcile run: SH manifest',
  diff: 'reconcile run: diff',
};

/**
 * `fcctl reconcile run`: the nightly entry point (src/lib/reconcile/run/run.ts) — task start from
 * the SH database, FC scan, SH scan, diff, all in `--out-dir` and resumable. Exit 0 when the diff
 * was written, 1 when a stop signal ended the run early (run again to continue) or when neither
 * side has a row (a typo in a cron line must not stay green; `--allow-empty` accepts it).
 */
export async function runReconcileRun(options: RunOptions, ctx: Ctx): Promise<number> {
  if ('all' in options) return runReconcileAllCommand(options.all, ctx);
  // The pair's series, labelled school and form (src/lib/reconcile/metrics.ts).
  return withRunMetrics(
    RECONCILE_COMMAND,
    options.metricsFile,
    ctx.clock,
    () => reconcile(options, ctx),
    (input) => singlePairSeries(options, input),
  );
}

async function reconcile(options: ReconcileRunOptions, ctx: Ctx): Promise<RunOutcome> {
  const { databases, throttle, deps } = await reconcileSides(ctx, options.throttle, options.pauseFile);
  const started = ctx.clock();
  let progress: Progress | undefined;
  let result: ReconcileRunResult;
  try {
    result = await runReconcile(
      {
        schId: options.schId,
        formUuid: options.formUuid,
        outDir: options.outDir,
        size: options.size,
        restart: options.restart,
        ...databases,
      },
      {
        ...deps,
        onPhase: (p, detail) => {
          ctx.output.event('phase', { phase: p, ...detail });
          const label = PHASE_LABELS[p];
          if (label === undefined) return;
          progress?.stop();
          progress = ctx.output.progress(label);
        },
        onPage: (_side, p) => {
          if (progress) recordRows(progress, p.pageRows);
        },
      },
    );
  } finally {
    progress?.stop();
  }
  const report = reconcileRunReport(options, result, ctx.clock() - started);
  if (report.warning !== null) ctx.io.stderr.write(`fcctl: ${report.warning}\n`);
  ctx.output.summary(
    { ...report.fields, throttledSeconds: throttledSeconds([throttle.fc, throttle.sh]) },
    report.counts,
  );
  return report.outcome;
}

/** `reconcile run`'s flags as commander parses them (`--school`/`--form` are lists: repeatable with `--all`). */
export interface ReconcileRunFlags {
  readonly school?: string[] | undefined;
  readonly form?: string[] | undefined;
  readonly outDir: string;
  readonly size: number;
  readonly restart: boolean;
  readonly allowEmpty?: boolean | undefined;
  readonly metricsFile?: string | undefined;
  readonly pauseFile?: string | undefined;
  readonly all: boolean;
  readonly concurrency: number;
  readonly runId?: string | undefined;
  readonly leaseSeconds: number;
  readonly consumer?: string | undefined;
  readonly failIfDiff: boolean;
  readonly keepNights: number;
}

/**
 * One pair's options, or `--all`'s, from the flags; exit 2 for a pair not given once, `--restart`
 * with `--all`, or `--all` without `--consumer`. `throttle` is the command's `throttleLimitsOf`.
 * @example reconcileRunOptions({ ...flags, school: ['5'], form: [uuid] }, throttle)
 */
export function reconcileRunOptions(o: ReconcileRunFlags, throttle: ThrottleLimits): RunOptions {
  const { size, restart, metricsFile, pauseFile } = o;
  const common = {
    ...{ size, allowEmpty: o.allowEmpty === true, throttle },
    ...(metricsFile ? { metricsFile } : {}),
    ...(pauseFile ? { pauseFile } : {}),
  };
  if (!o.all) return { ...onePair(o.school ?? [], o.form ?? []), outDir: o.outDir, restart, ...common };
  // a pair's own directory is restarted with `reconcile run --school S --form F --restart`
  if (restart)
    throw new UsageError(
      '--restart is for one pair (--school S --form F); with --all, give a new --run-id for a new run',
    );
  // no default: FCCTL_APP_KEY is the key fcctl signs with, not necessarily the consumer FC grants name
  if (o.consumer === undefined)
    throw new UsageError(
      'reconcile run --all needs --consumer KEY: the consumer app key whose FC grants name the pairs',
    );
  const { outDir, consumer, concurrency, leaseSeconds, keepNights } = o;
  return {
    all: {
      ...{ ...common, consumer, outDir, concurrency, leaseSeconds, keepNights, failIfDiff: o.failIfDiff === true },
      ...{ filter: { schools: o.school ?? [], forms: o.form ?? [] }, runId: o.runId ?? null },
    },
  };
}

/** The one school and form of a single-pair run (exit 2 when one is missing or repeated). */
function onePair(schools: readonly string[], forms: readonly string[]): { schId: string; formUuid: string } {
  if (schools.length === 0 && forms.length === 0)
    throw new UsageError('give --school and --form (one pair), or --all for every pair');
  const one = (flag: string, list: readonly string[]): string => {
    if (list.length === 0) throw new UsageError(`give ${flag} (one school and form), or --all for every pair`);
    if (list.length > 1)
      throw new UsageError(`${flag} given ${list.length} times: one pair takes one; several filter the pairs of --all`);
    return list[0]!;
  };
  return { schId: one('--school', schools), formUuid: one('--form', forms) };
}
