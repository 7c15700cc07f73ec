import { type Command, Option } from 'commander';
import { ExitCode, UsageError } from '../../lib/cli/exit.js';
import { LineError } from '../../lib/files/record-file.js';
import {
  checkAfter,
  checkOperationPrefix,
  failedFilterOf,
  replayInputColumns,
  replayInputRow,
} from '../../lib/deliveries/failed/decide.js';
import { failedPage, MAX_FAILED_PAGE_SIZE } from '../../lib/deliveries/failed/store.js';
import type { FailedFilter, PageStart } from '../../lib/deliveries/failed/sql.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { addConsumerSchoolOptions, consumerArg, consumerSchoolOf, failedFilterOptions, intArg } from '../options.js';
import { ONE_CONSUMER_COLUMNS } from './columns.js';

export interface DeliveriesFailedOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly start: PageStart;
  readonly size: number;
  readonly filter: FailedFilter;
  readonly format: 'table' | 'json' | 'csv' | 'jsonl';
  /** csv/jsonl: an `operationId` column `P:<eventId>`, so the file is a `replay --from` input */
  readonly operationPrefix: string | null;
}

const COMMAND = 'deliveries failed';

/**
 * `fcctl deliveries failed` (seed 000 §8 `failedPage`): one page of the FAILED and DEAD rows of a
 * consumer and school, newest first (row id), with reason, retry count and next retry; `--after`
 * pages by keyset. csv and jsonl are `deliveries replay --from` input files. Read-only; exit 0.
 */
export async function runDeliveriesFailed(options: DeliveriesFailedOptions, ctx: Ctx): Promise<number> {
  const db = await ctx.fcDb();
  const replayInput = options.format === 'csv' || options.format === 'jsonl';
  // a replay input holds only replayable rows: superseded ones would answer REVISION_MISMATCH
  const p = await failedPage(
    db,
    options.consumerAppKey,
    options.consumerSchoolId,
    options.start,
    options.size,
    options.filter,
    replayInput ? 'current' : 'all',
  );
  const exitCode = ExitCode.OK;
  if (replayInput) {
    // stdout is the replay input and nothing else; the next page's cursor goes to stderr.
    if (p.superseded > 0)
      ctx.io.stderr.write(
        `left out: ${p.superseded} superseded rows (a newer revision of the answer exists), as replay --failed does\n`,
      );
    const rows = p.rows.map((r) => replayInputRow(r, options.operationPrefix));
    if (options.format === 'csv')
      ctx.output.rows(
        rows,
        replayInputColumns(options.operationPrefix).map((key) => ({ key })),
        'csv',
      );
    else for (const r of rows) ctx.io.stdout.write(`${JSON.stringify(r)}\n`);
    if (p.nextCursor !== null) ctx.io.stderr.write(`next page: --after ${p.nextCursor}\n`);
    return exitCode;
  }
  const out = options.format === 'json' ? ctx.output.asJson() : ctx.output;
  const where = p.page === null ? `after row ${p.after}` : `page ${p.page}`;
  out.rows(
    p.rows,
    ONE_CONSUMER_COLUMNS,
    out.json ? 'json' : 'table',
    `FAILED/DEAD rows of consumer ${options.consumerAppKey}, school ${options.consumerSchoolId} — ${where}`,
  );
  if (p.nextCursor !== null) out.note(`next page: --after ${p.nextCursor}`);
  out.summary({
    command: COMMAND,
    exitCode,
    consumerAppKey: options.consumerAppKey,
    consumerSchoolId: options.consumerSchoolId,
    page: p.page,
    after: p.after,
    size: p.size,
    listed: p.rows.length,
    hasMore: p.hasMore,
    nextCursor: p.nextCursor,
    total: p.total,
    failed: p.byState.FAILED,
    dead: p.byState.DEAD,
    superseded: p.superseded,
  });
  return exitCode;
}

export function createDeliveriesFailedCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runDeliveriesFailed,
): Command {
  const cmd = parent
    .command('failed')
    .description(
      'page the FAILED and DEAD rows of one consumer and school, newest first; csv and jsonl are `deliveries replay --from` files',
    );
  return failedFilterOptions(addConsumerSchoolOptions(cmd, 'consumer app key', consumerArg))
    .option('--page <n>', 'page number, from 1 (by offset; not with --after)', intArg(1, 1_000_000))
    .option(
      '--after <id>',
      'keyset paging: the rows below this row id (the nextCursor of the previous page); stable while rows are replayed',
    )
    .option('--size <n>', `rows per page, at most ${MAX_FAILED_PAGE_SIZE}`, intArg(1, MAX_FAILED_PAGE_SIZE), 50)
    .addOption(
      new Option(
        '--format <format>',
        'table, json (rows and summary as JSON lines), csv or jsonl (replay input files: the rows only)',
      )
        .choices(['table', 'json', 'csv', 'jsonl'])
        .default('table'),
    )
    .option(
      '--operation-prefix <p>',
      'csv/jsonl: add the column operationId = P:<eventId> (what replay --failed --operation-prefix P uses)',
    )
    .action(commandAction(deps, resources, failedOptionsOf, runF));
}

function failedOptionsOf(o: Record<string, unknown>): DeliveriesFailedOptions {
  try {
    if (o['page'] !== undefined && o['after'] !== undefined)
      throw new LineError(0, '--page and --after are two ways to page: give one (--after is stable while rows change)');
    const format = o['format'] as DeliveriesFailedOptions['format'];
    if (o['operationPrefix'] !== undefined && format !== 'csv' && format !== 'jsonl')
      throw new LineError(0, '--operation-prefix applies only with --format csv or jsonl');
    return {
      ...consumerSchoolOf(o),
      start:
        o['after'] !== undefined
          ? { after: checkAfter(o['after'] as string) }
          : { page: (o['page'] as number | undefined) ?? 1 },
      size: o['size'] as number,
      filter: failedFilterOf({ state: o['state'] as string | undefined, reason: o['reason'] as string | undefined }),
      format,
      operationPrefix: o['operationPrefix'] === undefined ? null : checkOperationPrefix(o['operationPrefix']),
    };
  } catch (err) {
    throw err instanceof LineError ? new UsageError(err.message) : err;
  }
}
