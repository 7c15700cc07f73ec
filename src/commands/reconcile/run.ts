import { databaseIdentity } from '../../lib/db/identity.js';
import type { Command } from 'commander';
import type { Progress } from '../../lib/cli/output.js';
import { type RunOutcome, withRunMetrics } from '../../lib/metrics/run-metrics.js';
import { requireSetting } from '../../lib/config/config.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { reconcileRunReport } from '../../lib/reconcile/run/decide.js';
import { RECONCILE_COMMAND, singlePairSeries } from '../../lib/reconcile/metrics.js';
import { runReconcile } from '../../lib/reconcile/run/run.js';
import type {
  ReconcileRunOptions as RunnerOptions,
  ReconcileRunResult,
  RunPhase,
} from '../../lib/reconcile/run/types.js';
import { commandAction, commandThrottles, type Ctx, type Deps, recordRows, type Resources } from '../context.js';
import {
  addAllOptions,
  addPairOptions,
  addThrottleOptions,
  metricsFileOption,
  onePairOf,
  pageSizeOption,
  pathArg,
  pauseFileOption,
  throttleLimitsOf,
} from '../options.js';
import { allOptionsOf, type ReconcileAllOptions, runReconcileAllCommand } from './run-all.js';
import { type ThrottleLimits, throttledSeconds } from '../../lib/db/throttle.js';
import { pauseCheck } from '../../lib/pause/run.js';

export interface ReconcileRunOptions extends Omit<RunnerOptions, 'fcDatabase' | 'shDatabase'> {
  /** a school and form with no rows on either side is expected: exit 0, not 1 */
  readonly allowEmpty: boolean;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
  /** `--max-load`, `--max-lag`: the FC scan waits on the FC database, the SH scan on the SH database */
  readonly throttle: ThrottleLimits;
}

/** One pair's options, or `--all`'s (./run-all.ts). */
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
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  const shDatabase = databaseIdentity(requireSetting(ctx.config, 'shDatabaseUrl'));
  const throttle = await commandThrottles(ctx, options.throttle, {
    fc: { db: ctx.fcDb, label: 'FC database' },
    sh: { db: ctx.shDb, label: 'SH database' },
  });
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
        fcDatabase,
        shDatabase,
      },
      {
        fcDb: () => ctx.fcDb(),
        shDb: () => ctx.shDb(),
        signal: ctx.signal,
        now: ctx.now,
        paused: pauseCheck('reconcile run', ctx.shDb, options.pauseFile),
        throttle,
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
