import { ExitCode } from '../../cli/exit.js';
import type { Ctx } from '../../cli/context.js';
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
 * Read-only (the SH database); exit 0. csv is the rows alone (stdout is the data).
 */
export async function runReconcileHistory(o: ReconcileHistoryOptions, ctx: Ctx): Promise<number> {
  const pairs = await ledgerHistory(await ctx.shDb(), { schools: o.schools, forms: o.forms, last: o.last });
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
