import type { Command } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import { defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { type DiffResult, parseTaskStart, runDiff } from '../../lib/reconcile/diff.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { pathArg, pathsArg } from '../options.js';

export interface ReconcileDiffOptions {
  readonly fcFile: string;
  readonly shFile: string;
  /** default: the checkpoint beside each manifest (`x.jsonl` → `x.checkpoint.json`) */
  readonly fcCheckpoints: readonly string[] | undefined;
  readonly shCheckpoints: readonly string[] | undefined;
  readonly taskStart: string;
  readonly outDir: string;
}

/** The summary line of a finished diff (shared with `reconcile run`). */
export function diffSummaryFields(result: Extract<DiffResult, { kind: 'done' }>): Record<string, unknown> {
  const s = result.summary;
  return {
    taskStart: s.taskStart,
    schId: s.schId,
    formUuid: s.formUuid,
    fcRows: s.inputs.fc.rows,
    shRows: s.inputs.sh.rows,
    differences: s.differences,
    repairPlan: s.outputs['repair-plan.jsonl']?.rows ?? 0,
    localAhead: s.outputs['local-ahead.jsonl']?.rows ?? 0,
    retireCandidates: s.outputs['retire-candidates.jsonl']?.rows ?? 0,
    outDir: result.outDir,
  };
}

/**
 * `fcctl reconcile diff`: merge-joins a complete FC manifest with a complete SH manifest into the
 * report, summary, repair plan, local-ahead list and retire candidates (src/lib/reconcile/diff.ts).
 * Differences are findings, not failures: exit 0 when the files were written.
 */
export async function runReconcileDiff(options: ReconcileDiffOptions, ctx: Ctx): Promise<number> {
  const taskStart = parseTaskStart(options.taskStart);
  const started = Date.now();
  const progress = ctx.output.progress('reconcile diff');
  let done = 0;
  let result: DiffResult;
  try {
    result = await runDiff(
      {
        fcFile: options.fcFile,
        shFile: options.shFile,
        fcCheckpoints: options.fcCheckpoints ?? [defaultCheckpointPath(options.fcFile)],
        shCheckpoints: options.shCheckpoints ?? [defaultCheckpointPath(options.shFile)],
        taskStart,
        outDir: options.outDir,
      },
      {
        signal: ctx.signal,
        now: ctx.now,
        onProgress: (answers) => {
          for (; done < answers; done++) progress.record();
        },
      },
    );
  } finally {
    progress.stop();
  }
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  if (result.kind === 'stopped') {
    ctx.output.summary({ command: 'reconcile diff', exitCode: ExitCode.ITEMS_FAILED, stoppedBy: 'signal', answers: result.answers, written: false, seconds });
    return ExitCode.ITEMS_FAILED;
  }
  ctx.output.summary({ command: 'reconcile diff', exitCode: ExitCode.OK, ...diffSummaryFields(result), seconds }, result.summary.counts);
  return ExitCode.OK;
}

export function createReconcileDiffCommand(parent: Command, deps: Deps, resources: Resources, runF = runReconcileDiff): Command {
  return parent
    .command('diff')
    .description('merge-join a complete FC and SH manifest: report.csv, summary.json, repair-plan.jsonl, local-ahead.jsonl, retire-candidates.jsonl')
    .requiredOption('--fc <file.jsonl>', 'the FC manifest (manifest scan --side fc)', pathArg)
    .requiredOption('--sh <file.jsonl>', 'the SH manifest (manifest scan --side sh)', pathArg)
    .requiredOption('--task-start <time>', 'yyyy-MM-dd HH:mm:ss in the SH database\'s clock, taken before both scans began (refused, exit 4, unless before the FC scan\'s start its checkpoint records); local rows created after it are never retire candidates')
    .requiredOption('--out-dir <dir>', 'where the five files go (created if missing; written only when the whole diff succeeded)', pathArg)
    .option('--fc-checkpoint <file>', 'the FC manifest\'s checkpoint (default beside it); repeat once per shard, in shard order, for concatenated shards', pathsArg)
    .option('--sh-checkpoint <file>', 'the SH manifest\'s checkpoint (default beside it); repeat once per shard, in shard order', pathsArg)
    .action(async (opts: { fc: string; sh: string; taskStart: string; outDir: string; fcCheckpoint?: string[]; shCheckpoint?: string[] }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        { fcFile: opts.fc, shFile: opts.sh, fcCheckpoints: opts.fcCheckpoint, shCheckpoints: opts.shCheckpoint, taskStart: opts.taskStart, outDir: opts.outDir },
        ctx,
      );
    });
}
