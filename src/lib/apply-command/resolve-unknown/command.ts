import { pausedGaugeNotes } from '../../metrics/paused.js';
import { pausedGauge } from '../../metrics/paused.js';
import { EnvironmentError, UsageError } from '../../cli/exit.js';
import { loggedReport, resolveExitCode, resolveRowsByResult, resolveStopMessage, summarizeResolve } from './decide.js';
import { type ResolveDeps, runResolve, type ResolveOptions } from './run.js';
import type { Progress } from '../../cli/output.js';
import { requireSetting } from '../../config/config.js';
import type { Ctx } from '../../cli/context.js';
import type { ServiceFlags } from '../../service/decide.js';
import { pauseCheck } from '../../pause/run.js';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';

export interface ApplyCommandResolveOptions extends ResolveOptions {
  readonly service: ServiceFlags;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
}

const COMMAND = 'apply-command resolve-unknown';

/**
 * `fcctl apply-command resolve-unknown` (SPEC §9): look up first, resend only when not found,
 * settle or fail each claimed row. Run from cron every few minutes.
 */
export async function runApplyCommandResolve(options: ApplyCommandResolveOptions, ctx: Ctx): Promise<number> {
  if (options.service.follow) return (await import('./follow.js')).runFollowResolve(options, ctx);
  return withRunMetrics(COMMAND, options.metricsFile, ctx.clock, async (note) =>
    resolveUnknown(options, ctx, await pausedGaugeNotes(COMMAND, options.metricsFile, note)),
  );
}

/** Everything that can be refused is refused before anything connects (exit 2, tables untouched). */
export function checkResolveLease(options: Pick<ResolveOptions, 'leaseSeconds' | 'requestTimeoutMs'>): void {
  if (options.leaseSeconds * 1000 < 2 * options.requestTimeoutMs + 5000)
    throw new UsageError('--lease-seconds must cover a lookup and an apply: at least 2 × --request-timeout + 5 s');
}

async function resolveUnknown(
  options: ApplyCommandResolveOptions,
  ctx: Ctx,
  onPauseRead: (paused: boolean) => void,
): Promise<RunOutcome> {
  checkResolveLease(options);
  const flow = ctx.flow({ timeoutMs: options.requestTimeoutMs, maxSockets: options.concurrency });
  const appKey = requireSetting(ctx.config, 'appKey');
  const db = await ctx.shDb();
  const started = ctx.clock();
  const progress = ctx.output.progress(options.dryRun ? `${COMMAND} (dry run: lookups only)` : COMMAND);
  const summary = await runResolve(options, {
    db,
    flow,
    appKey,
    signal: ctx.signal,
    paused: pauseCheck(COMMAND, ctx.shDb, options.pauseFile, onPauseRead),
    // leases and budgets want a monotonic clock: a wall-clock step must not expire or stretch them
    clock: () => performance.now(),
    onRow: rowReporter(ctx, progress),
  }).finally(() => progress.stop());
  const exitCode = resolveExitCode(summary);
  ctx.output.summary(
    summarizeResolve(COMMAND, summary, {
      exitCode,
      dryRun: options.dryRun,
      flowUrl: flow.baseUrl,
      seconds: (ctx.clock() - started) / 1000,
    }),
  );
  const stopped = resolveStopMessage(summary, options.maxConsecutiveErrors);
  if (stopped !== null) throw new EnvironmentError(stopped);
  const paused = summary.stoppedBy === 'paused';
  return {
    exitCode,
    rowsByResult: resolveRowsByResult(summary),
    interrupted: summary.stoppedBy === 'signal' || paused,
    extraGauges: [pausedGauge(COMMAND, paused)],
  };
}

/** Each settled command: counted in the progress view, and a `row` line unless it is one of the quiet ones. */
export function rowReporter(ctx: Ctx, progress: Progress): NonNullable<ResolveDeps['onRow']> {
  return (row, report) => {
    progress.record(report.kind === 'failed' || report.kind === 'dead' ? report.reason : undefined);
    if (loggedReport(report))
      ctx.output.event('row', {
        id: String(row.id),
        bizType: row.biz_type,
        bizId: row.biz_id,
        state: row.state,
        ...report,
      });
  };
}
