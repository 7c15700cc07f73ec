import { type Command, Option } from 'commander';
import { defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { diffExitCode, parseTaskStart, summarizeDiff } from '../../lib/reconcile/diff/decide.js';
import { runDiff } from '../../lib/reconcile/diff/run.js';
import type { DiffResult } from '../../lib/reconcile/diff/types.js';
import { commandAction, type Ctx, type Deps, recordRows, type Resources } from '../context.js';
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

/**
 * `fcctl reconcile diff`: merge-joins a complete FC manifest with a complete SH manifest into the
 * report, summary, repair plan, local-ahead list and retire candidates (src/lib/reconcile/diff/run.ts).
 * Differences are findings, not failures: exit 0 when the files were written.
 */
export async function runReconcileDiff(options: ReconcileDiffOptions, ctx: Ctx): Promise<number> {
  const taskStart = parseTaskStart(options.taskStart);
  const started = ctx.clock();
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
          recordRows(progress, answers - done);
          done = answers;
        },
      },
    );
  } finally {
    progress.stop();
  }
  const { fields, counts } = summarizeDiff(result, ctx.clock() - started);
  ctx.output.summary(fields, counts);
  return diffExitCode(result);
}

/** `--fc` / `--sh`: a side's manifest, as `manifest scan --side` wrote it. */
const manifestOption = (side: 'fc' | 'sh') =>
  new Option(`--${side} <file.jsonl>`, `the ${side.toUpperCase()} manifest (manifest scan --side ${side})`)
    .argParser(pathArg)
    .makeOptionMandatory();

/** `--fc-checkpoint` / `--sh-checkpoint`, repeatable: a side's checkpoints, one per shard. */
const checkpointsOption = (side: 'fc' | 'sh', more = '') =>
  new Option(
    `--${side}-checkpoint <file>`,
    `the ${side.toUpperCase()} manifest's checkpoint (default beside it); repeat once per shard, in shard order${more}`,
  ).argParser(pathsArg);

export function createReconcileDiffCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runReconcileDiff,
): Command {
  return parent
    .command('diff')
    .description(
      'merge-join a complete FC and SH manifest: report.csv, summary.json, repair-plan.jsonl, local-ahead.jsonl, retire-candidates.jsonl',
    )
    .addOption(manifestOption('fc'))
    .addOption(manifestOption('sh'))
    .requiredOption(
      '--task-start <time>',
      "yyyy-MM-dd HH:mm:ss in the SH database's clock, taken before both scans began (refused, exit 4, unless before the FC scan's start its checkpoint records); local rows created after it are never retire candidates",
    )
    .requiredOption(
      '--out-dir <dir>',
      'where the five files go (created if missing; written only when the whole diff succeeded)',
      pathArg,
    )
    .addOption(checkpointsOption('fc', ', for concatenated shards'))
    .addOption(checkpointsOption('sh'))
    .action(commandAction(deps, resources, diffOptionsOf, runF));
}

function diffOptionsOf(o: Record<string, unknown>): ReconcileDiffOptions {
  const checkpoints = (name: string) => o[name] as string[] | undefined;
  return {
    fcFile: o['fc'] as string,
    shFile: o['sh'] as string,
    fcCheckpoints: checkpoints('fcCheckpoint'),
    shCheckpoints: checkpoints('shCheckpoint'),
    taskStart: o['taskStart'] as string,
    outDir: o['outDir'] as string,
  };
}
