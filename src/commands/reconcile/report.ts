import type { Command } from '@commander-js/extra-typings';
import { type FlagsOf, verbCommand } from '../context.js';
import { pathArg, runIdArg } from '../options.js';
import { runReconcileReport } from '../../lib/reconcile/report/command.js';
import type { ReconcileReportOptions } from '../../lib/reconcile/report/types.js';

/** `fcctl reconcile report` and its flags. */
function reportFlags(parent: Command) {
  return parent
    .command('report')
    .description(
      'write report.html of a reconcile run --all: one self-contained page (headline, failed pairs, pairs table, drill-down with the fix commands, 30-night trend)',
    )
    .option(
      '--out-dir <dir>',
      'the run directory of reconcile run --all (its summary.json and pair folders); default with --run-id: the folder the run recorded',
      pathArg,
    )
    .option(
      '--run-id <id>',
      'the run to report (default: the run DIR/summary.json names, the newest written there)',
      runIdArg,
    )
    .option(
      '--out <file>',
      'the HTML file to write, replaced atomically (default: DIR/report.html); its folder must exist',
      pathArg,
    );
}

export const createReconcileReportCommand = verbCommand(reportFlags, reportOptionsOf, runReconcileReport);

function reportOptionsOf(o: FlagsOf<typeof reportFlags>): ReconcileReportOptions {
  return { outDir: o.outDir ?? null, runId: o.runId ?? null, out: o.out ?? null };
}
