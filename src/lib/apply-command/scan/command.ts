import type { ListFormat } from '../../cli/output.js';
import type { Column } from '../../cli/table.js';
import { applyScanExitCode, applyScanGauges, summarizeApplyScan } from './decide.js';
import { scanApplyCommands } from './run.js';
import type { Ctx } from '../../cli/context.js';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';

export type ApplyCommandScanOptions = Readonly<{
  limit: number;
  format: ListFormat;
  pendingGraceSeconds: number;
  metricsFile: string | undefined;
  failIfDead: boolean;
}>;

const COMMAND = 'apply-command scan';

const ROW_COLUMNS: readonly Column[] = [
  { key: 'id' },
  { key: 'bizType', header: 'biz type' },
  { key: 'bizId', header: 'biz id', whole: true },
  { key: 'applyAppKey', header: 'app key' },
  { key: 'attempt' },
  { key: 'retryCount', header: 'retries' },
  { key: 'reason' },
  { key: 'lastBranch', header: 'branch' },
  { key: 'lastError', header: 'last error', flex: true },
  { key: 'createTime', header: 'created' },
  { key: 'updateTime', header: 'updated' },
];
const TABLE_COLUMNS = ROW_COLUMNS.filter(
  (c) => c.key !== 'applyAppKey' && c.key !== 'lastError' && c.key !== 'createTime',
);

/** `fcctl apply-command scan`: read-only report — states, due, oldest UNKNOWN, stuck claims, DEAD rows and reasons. */
export async function runApplyCommandScan(options: ApplyCommandScanOptions, ctx: Ctx): Promise<number> {
  return withRunMetrics(COMMAND, options.metricsFile, ctx.clock, () => scan(options, ctx));
}

async function scan(options: ApplyCommandScanOptions, ctx: Ctx): Promise<RunOutcome> {
  const db = await ctx.shDb();
  const report = await scanApplyCommands(db, options.limit, options.pendingGraceSeconds);
  const exitCode = applyScanExitCode(report, options.failIfDead);
  const outcome: RunOutcome = { exitCode, extraGauges: applyScanGauges(report) };
  if (options.format === 'csv') {
    // stdout is the CSV of DEAD rows and nothing else.
    ctx.output.rows(report.rows, ROW_COLUMNS, 'csv');
    return outcome;
  }
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  if (out.json) {
    out.rows(report.rows, ROW_COLUMNS, 'json');
    out.summary(summarizeApplyScan(COMMAND, report, exitCode, true));
    return outcome;
  }
  out.rows(
    Object.entries(report.states).map(([state, n]) => ({ state, n })),
    [{ key: 'state' }, { key: 'n', header: 'rows' }],
    'table',
    'flow_apply_command by state',
  );
  if (report.reasons.length > 0) {
    out.rows(
      report.reasons,
      [{ key: 'state' }, { key: 'reason' }, { key: 'lastBranch', header: 'branch' }, { key: 'count', header: 'rows' }],
      'table',
      'FAILED/DEAD reasons',
    );
  }
  if (report.rows.length > 0)
    out.rows(report.rows, TABLE_COLUMNS, 'table', `newest DEAD rows (at most ${options.limit})`);
  out.summary(summarizeApplyScan(COMMAND, report, exitCode, false));
  return outcome;
}
