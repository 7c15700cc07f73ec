import type { Ctx } from '../../cli/context.js';
import { ExitCode } from '../../cli/exit.js';
import { runFinished } from './decide.js';
import { buildReportData, LEDGER_TREND, reportTarget, writeReport } from './run.js';
import type { ReconcileReportOptions } from './types.js';

/**
 * `fcctl reconcile report`: report.html of one `--all` run (./run.ts). Exit 0 (a run in progress
 * too: the page says so), 2 for an unknown run or an `--out` whose folder does not exist (nothing
 * written), 3 for a file that cannot be written.
 */
export async function runReconcileReport(o: ReconcileReportOptions, ctx: Ctx): Promise<number> {
  const started = ctx.clock();
  const target = await reportTarget(o);
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
