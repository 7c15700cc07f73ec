import { pausedGaugeNotes } from '../../lib/metrics/paused.js';
import { pausedGauge } from '../../lib/metrics/paused.js';
import type { Command } from 'commander';
import { EnvironmentError, UsageError } from '../../lib/cli/exit.js';
import {
  APPLY_RETRY_POLICY,
  loggedReport,
  resolveExitCode,
  resolveRowsByResult,
  resolveStopMessage,
  summarizeResolve,
} from '../../lib/apply-command/resolve-unknown/decide.js';
import { runResolve, type ResolveOptions } from '../../lib/apply-command/resolve-unknown/run.js';
import { requireSetting } from '../../lib/config/config.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import {
  addMetricsFileOption,
  addRetryOptions,
  addServiceOptions,
  batchSizeOption,
  dryRunOption,
  followMaxSecondsOption,
  intArg,
  leaseSecondsOption,
  maxRowsOption,
  maxSecondsOf,
  pauseFileOption,
  pendingGraceOption,
  retryPolicyOf,
  secondsArg,
  serviceFlagsOf,
  type ServiceFlags,
} from '../options.js';
import { pauseCheck } from '../../lib/pause/run.js';
import { type RunOutcome, withRunMetrics } from '../../lib/metrics/run-metrics.js';

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
  if (options.service.follow) return (await import('./resolve-follow.js')).runFollowResolve(options, ctx);
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
    onRow: (row, report) => {
      progress.record(report.kind === 'failed' || report.kind === 'dead' ? report.reason : undefined);
      if (loggedReport(report))
        ctx.output.event('row', {
          id: String(row.id),
          bizType: row.biz_type,
          bizId: row.biz_id,
          state: row.state,
          ...report,
        });
    },
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

export function createApplyCommandResolveCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runApplyCommandResolve,
): Command {
  const cmd = parent
    .command('resolve-unknown')
    .description(
      'settle UNKNOWN, due FAILED and stale PENDING apply commands: look up first, resend only when not found',
    )
    .addOption(batchSizeOption(1000, 100))
    .option('--concurrency <n>', 'flow-center requests in flight at most', intArg(1, 256), 8)
    .addOption(maxRowsOption('stop after claiming this many rows'))
    .addOption(followMaxSecondsOption('stop claiming after this long', 600))
    .addOption(leaseSecondsOption('claim lease; another resolver may take the row after it', 10, 300))
    .addOption(pendingGraceOption('take PENDING rows created longer ago than this (90s, 10m, 2h)'))
    .option('--request-timeout <s>', 'seconds per flow-center request', secondsArg(0.05, 120), 5)
    .option(
      '--max-consecutive-errors <n>',
      'stop the run after this many flow-center errors in a row (exit 3)',
      intArg(1, 1_000_000),
      20,
    )
    .addOption(dryRunOption('lookups only: no claim, no apply, no write'));
  addRetryOptions(cmd, APPLY_RETRY_POLICY);
  addServiceOptions(cmd, 'claims', 9465);
  addMetricsFileOption(cmd).addOption(pauseFileOption());
  return cmd.action(commandAction(deps, resources, resolveOptionsOf, runF));
}

/** The flags as commander names them (camelCase of the long option). */
type ResolveFlags = Omit<
  ApplyCommandResolveOptions,
  'pendingGraceSeconds' | 'retry' | 'requestTimeoutMs' | 'service'
> & { readonly pendingGrace: number; readonly requestTimeout: number };

function resolveOptionsOf(o: Record<string, unknown>): ApplyCommandResolveOptions {
  const {
    batchSize,
    concurrency,
    maxRows,
    leaseSeconds,
    pendingGrace,
    requestTimeout,
    maxConsecutiveErrors,
    dryRun,
    metricsFile,
    pauseFile,
  } = o as unknown as ResolveFlags;
  const requestTimeoutMs = Math.round(requestTimeout * 1000);
  const service = serviceFlagsOf(o);
  const maxSeconds = maxSecondsOf(o, service, 600);
  return {
    service,
    batchSize,
    concurrency,
    maxRows,
    maxSeconds,
    leaseSeconds,
    pendingGraceSeconds: pendingGrace,
    retry: retryPolicyOf(o),
    requestTimeoutMs,
    maxConsecutiveErrors,
    dryRun,
    metricsFile,
    pauseFile,
  };
}
