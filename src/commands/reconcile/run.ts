import type { Command } from 'commander';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import {
  addAllOptions,
  addPairOptions,
  addThrottleOptions,
  metricsFileOption,
  onePairOf,
  throttleLimitsOf,
  pageSizeOption,
  pathArg,
  pauseFileOption,
} from '../options.js';
import { type RunOptions, runReconcileRun } from '../../lib/reconcile/run/command.js';
import type { ReconcileAllOptions } from '../../lib/reconcile/all/command.js';
import { UsageError } from '../../lib/cli/exit.js';
import type { ThrottleLimits } from '../../lib/db/throttle.js';

export function createReconcileRunCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runReconcileRun,
): Command {
  const cmd = addPairOptions(
    parent
      .command('run')
      .description(
        'nightly: take the task start, scan FC and SH into --out-dir (resumable), then diff; --all: every pair',
      ),
  )
    .requiredOption(
      '--out-dir <dir>',
      "run directory: run.json, both manifests and checkpoints, the diff's files",
      pathArg,
    )
    .addOption(pageSizeOption(`rows per manifest page (at most ${MAX_PAGE_SIZE})`, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE))
    .option(
      '--restart',
      'discard an unfinished run (or one of other parameters, or an unreadable run.json) in --out-dir and start a new one',
      false,
    )
    // no commander default value: it would print a second "(default: false)" after this one
    .option(
      '--allow-empty',
      'exit 0 even when the school and form have no rows at FC nor at SH, or none at FC while SH has some (default: exit 1 with a warning)',
    )
    .addOption(metricsFileOption())
    .addOption(pauseFileOption());
  return addAllOptions(addThrottleOptions(cmd, 'the database each scan reads')).action(
    commandAction(deps, resources, runOptionsOf, runF),
  );
}

function runOptionsOf(o: Record<string, unknown>): RunOptions {
  const metricsFile = o['metricsFile'] as string | undefined;
  const pauseFile = o['pauseFile'] as string | undefined;
  const common = {
    size: o['size'] as number,
    restart: o['restart'] as boolean,
    allowEmpty: o['allowEmpty'] === true,
    throttle: throttleLimitsOf(o),
    ...(metricsFile ? { metricsFile } : {}),
    ...(pauseFile ? { pauseFile } : {}),
  };
  if (o['all'] === true) return { all: allOptionsOf(o, common) };
  return { ...onePairOf(o), outDir: o['outDir'] as string, ...common };
}

/** `--all`'s options from the parsed flags (`--school`/`--form` are lists here). */
function allOptionsOf(
  o: Record<string, unknown>,
  {
    restart,
    ...common
  }: {
    size: number;
    restart: boolean;
    allowEmpty: boolean;
    throttle: ThrottleLimits;
    metricsFile?: string;
    pauseFile?: string;
  },
): ReconcileAllOptions {
  // a pair's own directory is restarted with `reconcile run --school S --form F --restart`
  if (restart)
    throw new UsageError(
      '--restart is for one pair (--school S --form F); with --all, give a new --run-id for a new run',
    );
  const consumer = o['consumer'] as string | undefined;
  // no default: FCCTL_APP_KEY is the key fcctl signs with, not necessarily the consumer FC grants name
  if (consumer === undefined)
    throw new UsageError(
      'reconcile run --all needs --consumer KEY: the consumer app key whose FC grants name the pairs',
    );
  return {
    ...common,
    consumer,
    outDir: o['outDir'] as string,
    filter: { schools: (o['school'] as string[] | undefined) ?? [], forms: (o['form'] as string[] | undefined) ?? [] },
    runId: (o['runId'] as string | undefined) ?? null,
    concurrency: o['concurrency'] as number,
    leaseSeconds: o['leaseSeconds'] as number,
    failIfDiff: o['failIfDiff'] === true,
  };
}
