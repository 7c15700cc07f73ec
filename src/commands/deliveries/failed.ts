import { type Command, Option } from 'commander';
import { ExitCode } from '../../lib/cli/exit.js';
import type { ListFormat } from '../../lib/cli/output.js';
import type { Column } from '../../lib/cli/table.js';
import { failedPage, MAX_FAILED_PAGE_SIZE } from '../../lib/deliveries/failed.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { consumerArg, intArg, schoolArg } from '../options.js';

export interface DeliveriesFailedOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly page: number;
  readonly size: number;
  readonly format: ListFormat;
}

const COMMAND = 'deliveries failed';
const COLUMNS: readonly Column[] = [
  { key: 'eventId', header: 'event id' },
  { key: 'state' },
  { key: 'answerUuid', header: 'answer' },
  { key: 'answerRevision', header: 'rev' },
  { key: 'retryCount', header: 'retries' },
  { key: 'nextRetryAt', header: 'next retry' },
  { key: 'lastError', header: 'reason' },
  { key: 'updateTime', header: 'updated' },
];

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
  return parent
    .command('failed')
    .description('page the FAILED and DEAD rows of one consumer and school, newest first')
    .requiredOption('--consumer <key>', 'consumer app key', consumerArg)
    .requiredOption('--school <id>', 'consumer school id', schoolArg)
    .option('--page <n>', 'page number, from 1', intArg(1, 1_000_000), 1)
    .option('--size <n>', `rows per page, at most ${MAX_FAILED_PAGE_SIZE}`, intArg(1, MAX_FAILED_PAGE_SIZE), 50)
    .addOption(new Option('--format <format>', 'row listing format').choices(['table', 'json', 'csv']).default('table'))
    .action(async (o: { consumer: string; school: string; page: number; size: number; format: ListFormat }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ consumerAppKey: o.consumer, consumerSchoolId: o.school, page: o.page, size: o.size, format: o.format }, ctx);
    });
}
