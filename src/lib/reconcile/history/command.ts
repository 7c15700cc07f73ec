import { EnvironmentError, ExitCode } from '../../cli/exit.js';
import type { Ctx } from '../../cli/context.js';
import { REPORT_CLOSE_GRACE_MS, sectionReader } from '../../cli/section.js';
import { ledgerHistory } from '../ledger/store.js';
import { HISTORY_COLUMNS, historyRow, nightsOf, tableColumns, tableRow } from './decide.js';

/** `reconcile history`'s options. */
export interface ReconcileHistoryOptions {
  readonly schools: readonly string[];
  readonly forms: readonly string[];
  /** the fleet's last N nights (a night: one run id of `reconcile run --all`) */
  readonly last: number;
  readonly format: 'table' | 'json' | 'csv';
}

const COMMAND = 'reconcile history';

/**
 * `fcctl reconcile history`: the drift ledger's last `--last` nights, newest first, each night's
 * pairs (within `--school`/`--form`) with their answers by category, differences, result and error.
 * Read-only (the SH database); exit 0. csv is the rows alone (stdout is the data). The read, its
 * connect included, ends by the reports' deadline (10 s): a database that stops answering is one
 * line and exit 3, never a command that runs until it is killed.
 */
export async function runReconcileHistory(o: ReconcileHistoryOptions, ctx: Ctx): Promise<number> {
  const filter = { schools: o.schools, forms: o.forms, last: o.last };
  const read = await sectionReader()(
    () => ctx.shDb({ closeGraceMs: REPORT_CLOSE_GRACE_MS }),
    async (db) => ({ pairs: await ledgerHistory(db, filter) }),
  );
  if (read.status !== 'ok') {
    const error = read.status === 'unreachable' ? read.error : read.status;
    // "no answer in 10 s" names no database; a connect error names it already
    throw new EnvironmentError(error.includes('SH database') ? error : `SH database: ${error}`);
  }
  const { pairs } = read;
  const rows = pairs.map(historyRow);
  const exitCode = ExitCode.OK;
  if (o.format === 'csv') {
    ctx.output.rows(rows, HISTORY_COLUMNS, 'csv');
    return exitCode;
  }
  const out = o.format === 'json' ? ctx.output.asJson() : ctx.output;
  const title = `reconcile history — the last ${o.last} night(s), newest first`;
  if (out.json) out.rows(rows, HISTORY_COLUMNS, 'json');
  else if (rows.length === 0) out.note('no night recorded (reconcile run --all records each pair it finishes)');
  else out.rows(pairs.map(tableRow), tableColumns(pairs), 'table', title);
  out.summary({ command: COMMAND, exitCode, last: o.last, nights: nightsOf(pairs), pairs: rows.length });
  return exitCode;
}
