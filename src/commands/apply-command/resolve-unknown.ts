import type { Command } from '@commander-js/extra-typings';
import { APPLY_RETRY_POLICY } from '../../lib/apply-command/resolve-unknown/decide.js';
import { verbCommand, type FlagsOf } from '../context.js';
import {
  metricsFileOption,
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
import {
  type ApplyCommandResolveOptions,
  runApplyCommandResolve,
} from '../../lib/apply-command/resolve-unknown/command.js';

/** `fcctl apply-command resolve-unknown` and its flags. */
function resolveFlags(parent: Command) {
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
  const service = addServiceOptions(addRetryOptions(cmd, APPLY_RETRY_POLICY), 'claims', 9465);
  return service.addOption(metricsFileOption()).addOption(pauseFileOption());
}

export const createApplyCommandResolveCommand = verbCommand(resolveFlags, resolveOptionsOf, runApplyCommandResolve);

function resolveOptionsOf(o: FlagsOf<typeof resolveFlags>): ApplyCommandResolveOptions {
  const { batchSize, concurrency, maxRows, leaseSeconds, maxConsecutiveErrors, dryRun, metricsFile, pauseFile } = o;
  const service = serviceFlagsOf(o);
  return {
    ...{ service, batchSize, concurrency, maxRows, leaseSeconds, maxConsecutiveErrors, dryRun, metricsFile, pauseFile },
    maxSeconds: maxSecondsOf(o, service, 600),
    pendingGraceSeconds: o.pendingGrace,
    retry: retryPolicyOf(o),
    requestTimeoutMs: Math.round(o.requestTimeout * 1000),
  };
}
