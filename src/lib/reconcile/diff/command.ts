import { defaultCheckpointPath } from '../../manifest/checkpoint.js';
import { diffExitCode, parseTaskStart, summarizeDiff } from './decide.js';
import { runDiff } from './run.js';
import type { DiffResult } from './types.js';
import { type Ctx, recordRows } from '../../cli/context.js';

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
