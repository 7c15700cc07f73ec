import type { Command } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import type { ListFormat } from '../../lib/cli/output.js';
import { failedPage, MAX_FAILED_PAGE_SIZE } from '../../lib/deliveries/failed/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { addConsumerSchoolOptions, consumerArg, consumerSchoolOf, intArg, listFormatOption } from '../options.js';
import { ONE_CONSUMER_COLUMNS } from './columns.js';

export interface DeliveriesFailedOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly page: number;
  readonly size: number;
  readonly format: ListFormat;
}

const COMMAND = 'deliveries failed';
const COLUMNS = ONE_CONSUMER_COLUMNS;

/**
 * `fcctl deliveries failed` (seed 000 §8 `failedPage`): one page of the FAILED and DEAD rows of a
 * consumer and school, newest first, with reason, retry count and next retry. Read-only; exit 0.
 */
export async function runDeliveriesFailed(options: DeliveriesFailedOptions, ctx: Ctx): Promise<number> {
  const db = await ctx.fcDb();
  const p = await failedPage(db, options.consumerAppKey, options.consumerSchoolId, options.page, options.size);
  const exitCode = ExitCode.OK;
  if (options.format === 'csv') {
    // stdout is the CSV and nothing else.
    ctx.output.rows(p.rows, COLUMNS, 'csv');
    return exitCode;
  }
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  out.rows(p.rows, COLUMNS, out.json ? 'json' : 'table', `FAILED/DEAD rows of consumer ${options.consumerAppKey}, school ${options.consumerSchoolId} — page ${p.page}`);
  out.summary({
    command: COMMAND,
    exitCode,
    consumerAppKey: options.consumerAppKey,
    consumerSchoolId: options.consumerSchoolId,
    page: p.page,
    size: p.size,
    listed: p.rows.length,
    hasMore: p.hasMore,
    total: p.total,
    failed: p.byState.FAILED,
    dead: p.byState.DEAD,
  });
  return exitCode;
}

export function createDeliveriesFailedCommand(parent: Command, deps: Deps, resources: Resources, runF = runDeliveriesFailed): Command {
  const cmd = parent.command('failed').description('page the FAILED and DEAD rows of one consumer and school, newest first');
  return addConsumerSchoolOptions(cmd, 'consumer app key', consumerArg)
    .option('--page <n>', 'page number, from 1', intArg(1, 1_000_000), 1)
    .option('--size <n>', `rows per page, at most ${MAX_FAILED_PAGE_SIZE}`, intArg(1, MAX_FAILED_PAGE_SIZE), 50)
    .addOption(listFormatOption())
    .action(commandAction(deps, resources, failedOptionsOf, runF));
}

function failedOptionsOf(o: Record<string, unknown>): DeliveriesFailedOptions {
  return { ...consumerSchoolOf(o), page: o['page'] as number, size: o['size'] as number, format: o['format'] as ListFormat };
}
