import { ExitCode } from '../../cli/exit.js';
import { replayInputColumns, replayInputRow } from './decide.js';
import { failedPage } from './store.js';
import type { FailedFilter, PageStart } from './sql.js';
import type { Ctx } from '../../cli/context.js';
import { ONE_CONSUMER_COLUMNS } from '../columns.js';

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
