import type { Command } from 'commander';
import { APPLY_RETRY_POLICY } from '../../lib/apply-command/resolve/decide.js';
import { commandAction, type Deps, type Resources } from '../context.js';
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
} from '../options.js';
import { type ApplyCommandResolveOptions, runApplyCommandResolve } from '../../lib/apply-command/resolve/command.js';

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
