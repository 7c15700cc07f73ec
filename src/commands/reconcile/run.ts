import type { Command } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import { gauge } from '../../lib/cli/metrics.js';
import type { Progress } from '../../lib/cli/output.js';
import { requireSetting } from '../../lib/config/config.js';
import { databaseIdentity } from '../../lib/manifest/checkpoint.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { emptyPairWarning } from '../../lib/reconcile/checks.js';
import { runReconcile } from '../../lib/reconcile/run.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg, metricsFileOption, pathArg, schoolArg, uuidArg } from '../options.js';
import { type RunOutcome, withRunMetrics } from '../../lib/cli/run-metrics.js';
import { diffSummaryFields } from './diff.js';

export interface ReconcileRunOptions {
  readonly schId: string;
  readonly formUuid: string;
  readonly outDir: string;
  readonly size: number;
  readonly restart: boolean;
  /** a school and form with no rows on either side is expected: exit 0, not 1 */
  readonly allowEmpty: boolean;
  readonly metricsFile?: string;
}

/**
 * `fcctl reconcile run`: the nightly entry point (src/lib/reconcile/run.ts) — task start from the
 * SH database, FC scan, SH scan, diff, all in `--out-dir` and resumable. Exit 0 when the diff was
 * written, 1 when a stop signal ended the run early (run again to continue) or when neither side
 * has a row (a typo in a cron line must not stay green; `--allow-empty` accepts it).
 */
export async function runReconcileRun(options: ReconcileRunOptions, ctx: Ctx): Promise<number> {
  return withRunMetrics('reconcile run', options.metricsFile, ctx.clock, () => reconcile(options, ctx));
}

async function reconcile(options: ReconcileRunOptions, ctx: Ctx): Promise<RunOutcome> {
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  const shDatabase = databaseIdentity(requireSetting(ctx.config, 'shDatabaseUrl'));
  const started = Date.now();
  let progress: Progress | undefined;
  const phase = (label: string) => {
    progress?.stop();
    progress = ctx.output.progress(label);
  };
  let result;
  try {
    result = await runReconcile(
      { schId: options.schId, formUuid: options.formUuid, outDir: options.outDir, size: options.size, restart: options.restart, fcDatabase, shDatabase },
      {
        fcDb: () => ctx.fcDb(),
        shDb: () => ctx.shDb(),
        signal: ctx.signal,
        now: ctx.now,
        onPhase: (p, detail) => {
          ctx.output.event('phase', { phase: p, ...detail });
          if (p === 'scan-fc') phase('reconcile run: FC manifest');
          else if (p === 'scan-sh') phase('reconcile run: SH manifest');
          else if (p === 'diff') phase('reconcile run: diff');
        },
        onPage: (_side, p) => {
          for (let i = 0; i < p.pageRows; i++) progress?.record();
        },
      },
    );
  } finally {
    progress?.stop();
  }
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const base = { command: 'reconcile run', runId: result.run?.runId ?? null, taskStart: result.run?.taskStart ?? null, resumed: result.resumed };
  if (result.kind === 'stopped') {
    ctx.output.summary({ ...base, exitCode: ExitCode.ITEMS_FAILED, stoppedBy: 'signal', phase: result.phase, outDir: result.outDir, seconds });
    return { exitCode: ExitCode.ITEMS_FAILED, interrupted: true };
  }
  const warning = emptyPairWarning({ schId: options.schId, formUuid: options.formUuid, fcRows: result.summary.inputs.fc.rows, shRows: result.summary.inputs.sh.rows, allowEmpty: options.allowEmpty });
  if (warning !== null) ctx.io.stderr.write(`fcctl: ${warning}\n`);
  const exitCode = warning === null ? ExitCode.OK : ExitCode.ITEMS_FAILED;
  ctx.output.summary({ ...base, exitCode, ...diffSummaryFields({ kind: 'done', summary: result.summary, outDir: result.outDir }), ...(warning !== null ? { empty: true } : {}), seconds }, result.summary.counts);
  // An empty side is exit 1 but no success: the stale-success alert must fire, and the gauge says why.
  return {
    exitCode,
    rowsByResult: result.summary.counts,
    suspect: warning !== null,
    extraGauges: [gauge('fcctl_reconcile_empty', 'the last reconcile run warned of an empty side: 1 (no rows at FC nor at SH, or none at FC while SH has some), else 0', warning === null ? 0 : 1, { command: 'reconcile run' })],
  };
}

export function createReconcileRunCommand(parent: Command, deps: Deps, resources: Resources, runF = runReconcileRun): Command {
  return parent
    .command('run')
    .description('nightly: take the task start, scan FC and SH into --out-dir (resumable), then diff')
    .requiredOption('--school <id>', 'school id', schoolArg)
    .requiredOption('--form <uuid>', 'form uuid', uuidArg)
    .requiredOption('--out-dir <dir>', 'run directory: run.json, both manifests and checkpoints, the diff\'s files', pathArg)
    .option('--size <n>', `rows per manifest page (at most ${MAX_PAGE_SIZE})`, intArg(1, MAX_PAGE_SIZE), DEFAULT_PAGE_SIZE)
    .option('--restart', 'discard an unfinished run (or one of other parameters, or an unreadable run.json) in --out-dir and start a new one', false)
    // no commander default value: it would print a second "(default: false)" after this one
    .option('--allow-empty', 'exit 0 even when the school and form have no rows at FC nor at SH, or none at FC while SH has some (default: exit 1 with a warning)')
    .addOption(metricsFileOption())
    .action(async (opts: { school: string; form: string; outDir: string; size: number; restart: boolean; allowEmpty?: boolean; metricsFile?: string }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        { schId: opts.school, formUuid: opts.form, outDir: opts.outDir, size: opts.size, restart: opts.restart, allowEmpty: opts.allowEmpty === true, ...(opts.metricsFile ? { metricsFile: opts.metricsFile } : {}) },
        ctx,
      );
    });
}
