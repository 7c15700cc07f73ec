import { type Command, Option } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import type { ListFormat } from '../../lib/cli/output.js';
import type { Column } from '../../lib/cli/table.js';
import { applyScanGauges, scanApplyCommands } from '../../lib/apply-command/scan.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { durationArg, intArg, metricsFileOption } from '../options.js';
import { type RunOutcome, withRunMetrics } from '../../lib/cli/run-metrics.js';

export interface ApplyCommandScanOptions {
  readonly limit: number;
  readonly format: ListFormat;
  readonly pendingGraceSeconds: number;
  readonly metricsFile: string | undefined;
  readonly failIfDead: boolean;
}

const COMMAND = 'apply-command scan';

const ROW_COLUMNS: readonly Column[] = [
  { key: 'id' },
  { key: 'bizType', header: 'biz type' },
  { key: 'bizId', header: 'biz id' },
  { key: 'applyAppKey', header: 'app key' },
  { key: 'attempt' },
  { key: 'retryCount', header: 'retries' },
  { key: 'reason' },
  { key: 'lastBranch', header: 'branch' },
  { key: 'lastError', header: 'last error' },
  { key: 'createTime', header: 'created' },
  { key: 'updateTime', header: 'updated' },
];
const TABLE_COLUMNS = ROW_COLUMNS.filter((c) => c.key !== 'applyAppKey' && c.key !== 'lastError' && c.key !== 'createTime');

/** `fcctl apply-command scan`: read-only report — states, due, oldest UNKNOWN, stuck claims, DEAD rows and reasons. */
export async function runApplyCommandScan(options: ApplyCommandScanOptions, ctx: Ctx): Promise<number> {
  return withRunMetrics(COMMAND, options.metricsFile, ctx.clock, () => scan(options, ctx));
}

async function scan(options: ApplyCommandScanOptions, ctx: Ctx): Promise<RunOutcome> {
  const db = await ctx.shDb();
  const report = await scanApplyCommands(db, options.limit, options.pendingGraceSeconds);
  const exitCode = options.failIfDead && report.dead > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
  const outcome: RunOutcome = { exitCode, extraGauges: applyScanGauges(report) };
  if (options.format === 'csv') {
    // stdout is the CSV of DEAD rows and nothing else.
    ctx.output.rows(report.rows, ROW_COLUMNS, 'csv');
    return outcome;
  }
  const counts = { due: report.due, oldestUnknownAgeSeconds: report.oldestUnknownAgeSeconds, stuckClaims: report.stuckClaims, dead: report.dead };
  const deadNote = exitCode === ExitCode.ITEMS_FAILED ? { failed: `${report.dead} DEAD row(s) (--fail-if-dead)` } : {};
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  if (out.json) {
    out.rows(report.rows, ROW_COLUMNS, 'json');
    out.summary({ command: COMMAND, exitCode, dbNow: report.dbNow, states: report.states, ...counts, reasons: report.reasons, listed: report.rows.length, ...deadNote });
    return outcome;
  }
  out.rows(Object.entries(report.states).map(([state, n]) => ({ state, n })), [{ key: 'state' }, { key: 'n', header: 'rows' }], 'table', 'flow_apply_command by state');
  if (report.reasons.length > 0) {
    out.rows(report.reasons, [{ key: 'state' }, { key: 'reason' }, { key: 'lastBranch', header: 'branch' }, { key: 'count', header: 'rows' }], 'table', 'FAILED/DEAD reasons');
  }
  if (report.rows.length > 0) out.rows(report.rows, TABLE_COLUMNS, 'table', `newest DEAD rows (at most ${options.limit})`);
  out.summary({ command: COMMAND, exitCode, dbNow: report.dbNow, ...counts, ...deadNote });
  return outcome;
}

export function createApplyCommandScanCommand(parent: Command, deps: Deps, resources: Resources, runF = runApplyCommandScan): Command {
  return parent
    .command('scan')
    .description('read-only report: rows by state, due, oldest UNKNOWN, stuck claims, DEAD rows with reasons')
    .option('--limit <n>', 'newest DEAD rows to list', intArg(1, 10_000), 20)
    .addOption(new Option('--format <format>', 'row listing format').choices(['table', 'json', 'csv']).default('table'))
    .option('--pending-grace <duration>', 'PENDING rows count as due after this (as resolve-unknown)', durationArg(60, 30 * 86400), 600)
    .addOption(metricsFileOption())
    .option('--fail-if-dead', 'exit 1 when any row is DEAD', false)
    .action(async (o: { limit: number; format: ListFormat; pendingGrace: number; metricsFile?: string; failIfDead: boolean }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ limit: o.limit, format: o.format, pendingGraceSeconds: o.pendingGrace, metricsFile: o.metricsFile, failIfDead: o.failIfDead }, ctx);
    });
}
