import type { Command } from 'commander';
import { batchExitCode, EnvironmentError, UsageError } from '../../lib/cli/exit.js';
import { APPLY_RETRY_POLICY } from '../../lib/apply-command/decide.js';
import { runResolve, type ResolveOptions, type ResolveSummary } from '../../lib/apply-command/resolve.js';
import { requireSetting } from '../../lib/config/config.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { addMetricsFileOption, addRetryOptions, durationArg, intArg, maxRowsOption, retryPolicyOf, secondsArg } from '../options.js';
import { type RunOutcome, withRunMetrics } from '../../lib/cli/run-metrics.js';

export interface ApplyCommandResolveOptions extends ResolveOptions {
  readonly metricsFile?: string;
}

const COMMAND = 'apply-command resolve-unknown';

/**
 * `fcctl apply-command resolve-unknown` (SPEC §9): look up first, resend only when not found,
 * settle or fail each claimed row. Run from cron every few minutes.
 */
export async function runApplyCommandResolve(options: ApplyCommandResolveOptions, ctx: Ctx): Promise<number> {
  return withRunMetrics(COMMAND, options.metricsFile, ctx.clock, () => resolveUnknown(options, ctx));
}

async function resolveUnknown(options: ApplyCommandResolveOptions, ctx: Ctx): Promise<RunOutcome> {
  // Everything that can be refused is refused before anything connects (exit 2, tables untouched).
  if (options.leaseSeconds * 1000 < 2 * options.requestTimeoutMs + 5000) {
    throw new UsageError('--lease-seconds must cover a lookup and an apply: at least 2 × --request-timeout + 5 s');
  }
  const flow = ctx.flow({ timeoutMs: options.requestTimeoutMs, maxSockets: options.concurrency });
  const appKey = requireSetting(ctx.config, 'appKey');
  const db = await ctx.shDb();
  const started = Date.now();
  const progress = ctx.output.progress(options.dryRun ? `${COMMAND} (dry run: lookups only)` : COMMAND);
  let summary: ResolveSummary;
  try {
    summary = await runResolve(options, {
      db,
      flow,
      appKey,
      signal: ctx.signal,
      clock: () => performance.now(),
      onRow: (row, report) => {
        progress.record(report.kind === 'failed' || report.kind === 'dead' ? report.reason : undefined);
        if (report.kind === 'done' && report.via === 'lookup' && !report.roundBehind && report.mirror !== 'changed' && report.mirror !== 'deleted') return;
        ctx.output.event('row', { id: String(row.id), bizType: row.biz_type, bizId: row.biz_id, state: row.state, ...report });
      },
    });
  } finally {
    progress.stop();
  }
  const refused = summary.stoppedBy === 'credentials-refused';
  const tripped = refused || summary.stoppedBy === 'flow-center-errors';
  const exitCode = batchExitCode({ environment: tripped, failed: summary.failed + summary.dead, interrupted: summary.stoppedBy === 'signal' });
  const seconds = (Date.now() - started) / 1000;
  ctx.output.summary({
    command: COMMAND,
    exitCode,
    dryRun: options.dryRun,
    flowUrl: flow.baseUrl,
    claimed: summary.claimed,
    lookups: summary.lookups,
    posts: summary.posts,
    done: summary.done,
    doneViaLookup: summary.doneViaLookup,
    doneViaApply: summary.doneViaApply,
    failed: summary.failed,
    dead: summary.dead,
    released: summary.released,
    stale: summary.stale,
    ...(options.dryRun ? { wouldPost: summary.wouldPost } : {}),
    roundBehind: summary.roundBehind,
    mirrorMissing: summary.mirrorMissing,
    mirrorChanged: summary.mirrorChanged,
    mirrorDeleted: summary.mirrorDeleted,
    otherAppKey: summary.otherAppKey,
    branches: summary.branches,
    failedByReason: summary.failedByReason,
    deadByReason: summary.deadByReason,
    stoppedBy: summary.stoppedBy,
    ...(summary.credentialsRefused ? { credentialsRefused: summary.credentialsRefused } : {}),
    seconds: Math.round(seconds * 10) / 10,
    rowsPerSecond: seconds > 0 ? Math.round(summary.claimed / seconds) : 0,
  });
  if (refused) {
    throw new EnvironmentError(
      `flow center refused our credentials (${summary.credentialsRefused}): check FCCTL_APP_KEY and FCCTL_APP_SECRET; stopped at the first refusal, no retry was charged to any row (${summary.released} released)`,
    );
  }
  if (tripped) {
    throw new EnvironmentError(
      `flow center gave ${options.maxConsecutiveErrors} errors in a row (last: ${summary.flowCenterErrors}); stopped, rows not yet tried were released with their retry budget untouched`,
    );
  }
  const { done, failed, dead, released, stale } = summary;
  return { exitCode, rowsByResult: { done, failed, dead, released, stale }, interrupted: summary.stoppedBy === 'signal' };
}

export function createApplyCommandResolveCommand(parent: Command, deps: Deps, resources: Resources, runF = runApplyCommandResolve): Command {
  const cmd = parent
    .command('resolve-unknown')
    .description('settle UNKNOWN, due FAILED and stale PENDING apply commands: look up first, resend only when not found')
    .option('--batch-size <n>', 'rows claimed per batch', intArg(1, 1000), 100)
    .option('--concurrency <n>', 'flow-center requests in flight at most', intArg(1, 256), 8)
    .addOption(maxRowsOption('stop after claiming this many rows'))
    .option('--max-seconds <s>', 'stop claiming after this long', secondsArg(1, 86400), 600)
    .option('--lease-seconds <s>', 'claim lease; another resolver may take the row after it', intArg(10, 86400), 300)
    .option('--pending-grace <duration>', 'take PENDING rows created longer ago than this (90s, 10m, 2h)', durationArg(60, 30 * 86400), 600)
    .option('--request-timeout <s>', 'seconds per flow-center request', secondsArg(0.05, 120), 5)
    .option('--max-consecutive-errors <n>', 'stop the run after this many flow-center errors in a row (exit 3)', intArg(1, 1_000_000), 20)
    .option('--dry-run', 'lookups only: no claim, no apply, no write', false);
  addRetryOptions(cmd, APPLY_RETRY_POLICY);
  addMetricsFileOption(cmd);
  return cmd
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          batchSize: o['batchSize'] as number,
          concurrency: o['concurrency'] as number,
          maxRows: o['maxRows'] as number,
          maxSeconds: o['maxSeconds'] as number,
          leaseSeconds: o['leaseSeconds'] as number,
          pendingGraceSeconds: o['pendingGrace'] as number,
          retry: retryPolicyOf(o),
          requestTimeoutMs: Math.round((o['requestTimeout'] as number) * 1000),
          maxConsecutiveErrors: o['maxConsecutiveErrors'] as number,
          dryRun: o['dryRun'] as boolean,
          metricsFile: o['metricsFile'] as string | undefined,
        },
        ctx,
      );
    });
}
