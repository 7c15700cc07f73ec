import { type Command, Option } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import { checkMetricsFile, writeRunMetrics } from '../../lib/cli/metrics.js';
import type { ListFormat } from '../../lib/cli/output.js';
import type { Column } from '../../lib/cli/table.js';
import { scanDeliveries, scanGauges, type ScanReport } from '../../lib/deliveries/scan.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg, metricsFileOption } from '../options.js';

export interface DeliveriesScanOptions {
  readonly limit: number;
  readonly format: ListFormat;
  readonly metricsFile: string | undefined;
  readonly failIfDead: boolean;
}

const COMMAND = 'deliveries scan';

const ROW_COLUMNS: readonly Column[] = [
  { key: 'eventId', header: 'event id' },
  { key: 'state' },
  { key: 'consumerAppKey', header: 'consumer' },
  { key: 'consumerSchoolId', header: 'school' },
  { key: 'answerUuid', header: 'answer' },
  { key: 'answerRevision', header: 'rev' },
  { key: 'retryCount', header: 'retries' },
  { key: 'nextRetryAt', header: 'next retry' },
  { key: 'lastError', header: 'last error' },
  { key: 'updateTime', header: 'updated' },
];
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
  if (options.metricsFile !== undefined) await checkMetricsFile(options.metricsFile);
  const started = ctx.now().getTime();
  const db = await ctx.fcDb();
  const report = await scanDeliveries(db, options.limit);
  const exitCode = options.failIfDead && report.dead > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;

  // Metrics before any output: if the file cannot be written the run fails (exit 3) without
  // having printed a summary that says otherwise.
  if (options.metricsFile !== undefined) {
    const gauges = scanGauges(report, {
      command: COMMAND,
      finishedAtSeconds: Math.floor(ctx.now().getTime() / 1000),
      durationSeconds: (ctx.now().getTime() - started) / 1000,
      exitCode,
    });
    await writeRunMetrics(options.metricsFile, gauges);
  }

  if (options.format === 'csv') {
    // stdout is the CSV and nothing else, so it can be piped into a CSV reader.
    ctx.output.rows(report.rows, ROW_COLUMNS, 'csv');
    return exitCode;
  }
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  const deadNote = exitCode === ExitCode.ITEMS_FAILED ? { failed: `${report.dead} DEAD row(s) (--fail-if-dead)` } : {};
  if (out.json) {
    out.rows(report.rows, ROW_COLUMNS, 'json');
    out.summary({ command: COMMAND, exitCode, dbNow: report.dbNow, states: report.states, ...counts(report), reasons: report.reasons, listed: report.rows.length, ...deadNote });
    return exitCode;
  }
  out.rows(Object.entries(report.states).map(([state, n]) => ({ state, n })), [{ key: 'state' }, { key: 'n', header: 'rows' }], 'table', 'answer_delivery by state');
  if (report.reasons.length > 0) {
    out.rows(report.reasons, [{ key: 'state' }, { key: 'lastError', header: 'last error' }, { key: 'count', header: 'rows' }], 'table', 'FAILED/DEAD reasons');
    out.rows(report.rows, TABLE_COLUMNS, 'table', `newest FAILED/DEAD rows (at most ${options.limit})`);
  }
  out.summary({ command: COMMAND, exitCode, dbNow: report.dbNow, ...counts(report), ...deadNote });
  return exitCode;
}

export function createDeliveriesScanCommand(parent: Command, deps: Deps, resources: Resources, runF = runDeliveriesScan): Command {
  return parent
    .command('scan')
    .description('read-only outbox report: states, due, held, oldest pending, stuck claims, FAILED/DEAD reasons')
    .option('--limit <n>', 'newest FAILED/DEAD rows to list', intArg(1, 10_000), 20)
    .addOption(new Option('--format <format>', 'row listing format').choices(['table', 'json', 'csv']).default('table'))
    .addOption(metricsFileOption())
    .option('--fail-if-dead', 'exit 1 when any row is DEAD', false)
    .action(async (opts: { limit: number; format: ListFormat; metricsFile?: string; failIfDead: boolean }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ limit: opts.limit, format: opts.format, metricsFile: opts.metricsFile, failIfDead: opts.failIfDead }, ctx);
    });
}
