import { ExitCode } from '../../cli/exit.js';
import type { ListFormat } from '../../cli/output.js';
import { scanExitCode, scanGauges, type ScanReport } from './decide.js';
import { scanDeliveries } from './run.js';
import type { Ctx } from '../../cli/context.js';
import { FAILED_ROW_COLUMNS } from '../columns.js';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';

export interface DeliveriesScanOptions {
  readonly limit: number;
  readonly format: ListFormat;
  readonly metricsFile: string | undefined;
  readonly failIfDead: boolean;
}

const COMMAND = 'deliveries scan';

const ROW_COLUMNS = FAILED_ROW_COLUMNS;
/** On a terminal the answer uuid and update time are left out so a row fits on one line. */
const TABLE_COLUMNS = ROW_COLUMNS.filter((c) => c.key !== 'answerUuid' && c.key !== 'updateTime');

/** The scalar part of the report, for the summary. */
function counts(report: ScanReport) {
  return {
    due: report.due,
    held: report.held,
    oldestPendingAgeSeconds: report.oldestPendingAgeSeconds,
    stuckClaims: report.stuckClaims,
    dead: report.dead,
  };
}

/**
 * `fcctl deliveries scan`: read-only report on the outbox — states, due, held, oldest pending,
 * stuck claims, FAILED/DEAD reasons and the newest FAILED/DEAD rows; optional Prometheus file.
 */
export async function runDeliveriesScan(options: DeliveriesScanOptions, ctx: Ctx): Promise<number> {
  // Through withRunMetrics like every cron command: a scan that fails (exit 3) still records 3.
  return withRunMetrics(COMMAND, options.metricsFile, ctx.clock, () => scan(options, ctx));
}

async function scan(options: DeliveriesScanOptions, ctx: Ctx): Promise<RunOutcome> {
  const db = await ctx.fcDb();
  const report = await scanDeliveries(db, options.limit);
  const exitCode = scanExitCode(report, options);
  // The report's own gauges; withRunMetrics adds the run gauges (scanGauges has them too).
  const extraGauges = scanGauges(report, {
    command: COMMAND,
    finishedAtSeconds: 0,
    durationSeconds: 0,
    exitCode,
  }).filter((g) => g.name.startsWith('fcctl_deliveries_'));
  const outcome = { exitCode, extraGauges };

  if (options.format === 'csv') {
    // stdout is the CSV and nothing else, so it can be piped into a CSV reader.
    ctx.output.rows(report.rows, ROW_COLUMNS, 'csv');
    return outcome;
  }
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  const deadNote = exitCode === ExitCode.ITEMS_FAILED ? { failed: `${report.dead} DEAD row(s) (--fail-if-dead)` } : {};
  if (out.json) {
    out.rows(report.rows, ROW_COLUMNS, 'json');
    out.summary({
      command: COMMAND,
      exitCode,
      dbNow: report.dbNow,
      states: report.states,
      ...counts(report),
      reasons: report.reasons,
      listed: report.rows.length,
      ...deadNote,
    });
    return outcome;
  }
  out.rows(
    Object.entries(report.states).map(([state, n]) => ({ state, n })),
    [{ key: 'state' }, { key: 'n', header: 'rows' }],
    'table',
    'answer_delivery by state',
  );
  if (report.reasons.length > 0) {
    out.rows(
      report.reasons,
      [{ key: 'state' }, { key: 'lastError', header: 'last error', flex: true }, { key: 'count', header: 'rows' }],
      'table',
      'FAILED/DEAD reasons',
    );
    out.rows(report.rows, TABLE_COLUMNS, 'table', `newest FAILED/DEAD rows (at most ${options.limit})`);
  }
  out.summary({ command: COMMAND, exitCode, dbNow: report.dbNow, ...counts(report), ...deadNote });
  return outcome;
}
