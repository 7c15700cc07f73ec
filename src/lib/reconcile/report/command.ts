import type { Ctx } from '../../cli/context.js';
import { ExitCode, UsageError } from '../../cli/exit.js';
import { runFinished } from './decide.js';
import { buildReportData, LEDGER_TREND, recordedRunDir, reportTarget, writeReport } from './run.js';
import type { ReconcileReportOptions } from './types.js';

/**
 * `fcctl reconcile report`: report.html of one `--all` run (./run.ts). Exit 0 (a run in progress
 * too: the page says so), 2 for an unknown run or an `--out` whose folder does not exist (nothing
 * written), 3 for a file that cannot be written.
 */
export async function runReconcileReport(o: ReconcileReportOptions, ctx: Ctx): Promise<number> {
  const started = ctx.clock();
  // --run-id alone: the folder the run recorded (issue 36 §14); neither: the usage error of reportTarget
  const outDir = o.outDir ?? (o.runId === null ? null : await recordedRunDir(await ctx.shDb(), o.runId));
  if (outDir === null) throw new UsageError("give --out-dir (the run's folder) or --run-id of a recorded run");
  const target = await reportTarget({ ...o, outDir });
  const data = await buildReportData(target, { shDb: () => ctx.shDb(), now: ctx.now, trend: LEDGER_TREND });
  const { bytes } = await writeReport(target.outFile, data);
  ctx.output.summary({
    command: 'reconcile report',
    runId: data.runId,
    exitCode: ExitCode.OK,
    file: target.outFile,
    bytes,
    pairs: data.pairs.length,
    finished: runFinished(data.byState),
    seconds: Math.round((ctx.clock() - started) / 100) / 10,
  });
  return ExitCode.OK;
}
